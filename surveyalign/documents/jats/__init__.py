"""JATS XML articles (F1000Research, PeerJ, Europe PMC) to markdown without their peer-review record.

Public surface::

    from surveyalign.documents.jats import parse_jats, JatsArticle, SubArticle

``parse_jats(xml) -> JatsArticle``; ``JatsArticle.to_markdown()`` renders the article alone, and
``JatsArticle.sub_articles`` holds the referee reports, author responses and decision letters
(SurveyReview §4.1: kept apart by element, so they never reach a judge's input).
"""

from __future__ import annotations

from .model import (
    JatsArticle,
    JatsCaption,
    JatsError,
    JatsReference,
    JatsSection,
    SubArticle,
)
from .parse import SUB_ARTICLE_TAGS, parse_jats

__all__ = [
    "SUB_ARTICLE_TAGS",
    "JatsArticle",
    "JatsCaption",
    "JatsError",
    "JatsReference",
    "JatsSection",
    "SubArticle",
    "parse_jats",
]
