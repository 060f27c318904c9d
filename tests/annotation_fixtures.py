"""Made-up inputs for the SurveyReview construction tests (tests/test_annotation_*.py): candidate lists, survey
texts and review reports in the F1000Research JATS, OpenReview forum, MOPRD / PeerJ and plain-text layouts, and a
scripted judge that answers the screening and pre-annotation prompts from a table. Every name, number and sentence
is invented."""

from __future__ import annotations

import json
import re
from pathlib import Path

# --- review texts: every sentence the scripted judge cites is in its report ---------------------------------------

F1000_REPORTS = {
    "Ada Quill": ("The manuscript is written clearly and the argument is easy to follow throughout. "
                  "However, the reference list omits the large cohort studies published after 2019. "
                  "The section order feels arbitrary and the move from methods to outlook is abrupt."),
    "Bo Renner": ("Several paragraphs are hard to read because of very long sentences. "
                  "The authors offer a thoughtful synthesis that goes well beyond listing prior studies."),
}
OPENREVIEW_REVIEWS = [
    ("Reviewer_x1Ab", {"summary": "The paper surveys token pruning for vision transformers.",
                        "strengths": "The taxonomy in section 3 organises the field in a very convincing way.",
                        "weaknesses": "Key recent works on dynamic pruning are missing from the discussion.",
                        "rating": "6: marginally above the acceptance threshold", "confidence": "4"}),
    ("Reviewer_k9Zt", {"summary": "A broad survey of efficient attention.",
                       "weaknesses": "The survey mostly restates prior papers without a critical perspective.",
                       "rating": "3: reject", "confidence": "3"}),
]
OPENREVIEW_META = "The reviewers agree that the coverage of recent pruning work is incomplete."
MOPRD_ROUNDS = [
    {"version": 1, "reviews": [
        {"reviewer": "Reviewer 1", "date": "2021-02-03", "recommendation": "major revisions",
         "content": {"Basic reporting": "The English is clear and professional throughout the text.",
                     "Experimental design": "The literature search strategy misses two major databases.",
                     "Validity of the findings": "No comment.",
                     "Additional comments": "The discussion adds little beyond a summary of the included studies."}},
        {"role": "editor", "decision": "major revisions", "content": "Please address the reviewers."}]},
    {"version": 2, "reviews": [
        {"reviewer": "Reviewer 1", "date": "2021-05-11", "recommendation": "accept",
         "content": {"Basic reporting": "The revised text reads well.",
                     "Additional comments": "The new discussion section now offers a genuinely critical view."}}]},
]
PLAIN_REVIEW = ("Overall this review is well structured, moving from definitions to methods to open problems. "
                "It is, however, difficult to follow in places where acronyms are never defined.")

#: What the scripted judge says: (a phrase of the review) -> {dimension: (label, [snippets])}. A snippet marked
#: with a leading "~" is deliberately altered (not verbatim in the review) to test the flagging.
JUDGE_TABLE: dict[str, dict[str, tuple[int, list[str]]]] = {
    "easy to follow throughout": {
        "readability": (1, ["The manuscript is written clearly and the argument is easy to follow throughout."]),
        "structure": (-1, ["The section order feels arbitrary and the move from methods to outlook is abrupt."]),
        "comprehensiveness": (-1, ["However, the reference list omits the large cohort studies published after 2019."]),
        "criticalness": (0, []),
    },
    "very long sentences": {
        "readability": (-1, ["Several paragraphs are hard to read because of very long sentences."]),
        "structure": (0, []),
        "comprehensiveness": (0, []),
        "criticalness": (2, ["~The authors offer a thoughtful synthesis going well beyond listing prior studies."]),
    },
    "taxonomy in section 3": {
        "readability": (0, []),
        "structure": (2, ["The taxonomy in section 3 organises the field in a very convincing way."]),
        "comprehensiveness": (-1, ["Key recent works on dynamic pruning are missing from the discussion.",
                                   "~The reviewer never wrote this sentence anywhere at all."]),
        "criticalness": (0, []),
    },
    "without a critical perspective": {
        "readability": (0, []), "structure": (0, []), "comprehensiveness": (0, []),
        "criticalness": (-2, ["The survey mostly restates prior papers without a critical perspective."]),
    },
    "coverage of recent pruning work": {
        "readability": (0, []), "structure": (0, []),
        "comprehensiveness": (-3, ["The reviewers agree that the coverage of recent pruning work is incomplete."]),
        "criticalness": (0, []),
    },
    "misses two major databases": {
        "readability": (1, ["The English is clear and professional throughout the text."]),
        "structure": (0, []),
        "comprehensiveness": (-1, ["The literature search strategy misses two major databases."]),
        "criticalness": (-1, ["The discussion adds little beyond a summary of the included studies."]),
    },
    "genuinely critical view": {
        "readability": (1, ["The revised text reads well."]), "structure": (0, []), "comprehensiveness": (0, []),
        "criticalness": (1, ["The new discussion section now offers a genuinely critical view."]),
    },
    "acronyms are never defined": {
        "readability": (-1, ["It is, however, difficult to follow in places where acronyms are never defined."]),
        "structure": (1, ["Overall this review is well structured, moving from definitions to methods to open problems."]),
        "comprehensiveness": (0, []), "criticalness": (0, []),
    },
}


def _answer_for(review: str) -> str:
    for phrase, dims in JUDGE_TABLE.items():
        if phrase in review:
            return json.dumps({d: {"label": lab, "snippets": [s.lstrip("~") for s in snips]}
                               for d, (lab, snips) in dims.items()})
    return "I cannot tell."  # no JSON object: a parse failure the pipeline must keep


def scripted_judge(messages, settings, index) -> str:
    """Answer the survey screen (yes unless the title announces a new method) and the pre-annotation prompt."""
    content = messages[-1]["content"]
    if "survey-style article" in content:
        title = re.search(r"Title: (.*)", content).group(1)
        return json.dumps({"survey": "no" if "novel" in title.lower() else "yes", "reason": "scripted"})
    review = content.split("=== Review report ===\n", 1)[1].split("\n=== End of review report ===", 1)[0]
    return _answer_for(review)


# --- files --------------------------------------------------------------------------------------------------------

def _jats(number: int, version: int, title: str, reports: dict[str, str]) -> str:
    subs = []
    for k, (name, text) in enumerate(reports.items(), 1):
        given, surname = name.split(" ", 1)
        paras = "".join(f"<p>{s}</p>" for s in re.split(r"(?<=\.) ", text))
        subs.append(f"""
  <sub-article article-type="ref-report" id="report{number}{k}">
    <front-stub>
      <title-group><article-title>Reviewer response for version {version}</article-title></title-group>
      <contrib-group><contrib contrib-type="author"><name><surname>{surname}</surname><given-names>{given}</given-names></name><role>Referee</role></contrib></contrib-group>
      <pub-date pub-type="epub"><day>{10 + k}</day><month>4</month><year>2022</year></pub-date>
      <related-article ext-link-type="doi" related-article-type="peer-reviewed-article" xlink:href="10.12688/f1000research.{number}.{version}"/>
      <custom-meta-group><custom-meta><meta-name>recommendation</meta-name><meta-value>approve-with-reservations</meta-value></custom-meta></custom-meta-group>
    </front-stub>
    <body>{paras}</body>
  </sub-article>""")
    subs.append(f"""
  <sub-article article-type="author-comment" id="comment{number}">
    <front-stub><title-group><article-title>Author Response</article-title></title-group></front-stub>
    <body><p>We thank the referees and have revised the text.</p></body>
  </sub-article>""")
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<article xmlns:xlink="http://www.w3.org/1999/xlink" article-type="review-article">
  <front><article-meta>
    <article-id pub-id-type="doi">10.12688/f1000research.{number}.{version}</article-id>
    <title-group><article-title>{title}</article-title></title-group>
    <pub-date pub-type="epub"><year>2022</year></pub-date>
    <abstract><p>We review wearable sensing for sleep staging across thirty studies.</p></abstract>
  </article-meta></front>
  <body>
    <sec><title>Introduction</title><p>Sleep staging with wearables has grown quickly in the last decade.</p></sec>
    <sec><title>Methods</title><p>We searched three databases and screened the records in pairs.</p></sec>
  </body>
  <back><ref-list><ref id="r1"><mixed-citation>Doe J. Actigraphy revisited. Sleep J. 2018.</mixed-citation></ref></ref-list></back>{''.join(subs)}
</article>
"""


def write_inputs(root: Path) -> dict[str, Path]:
    """Write candidates.csv, reviews/ (one file per source layout) and texts/ under ``root``; return the paths."""
    reviews = root / "reviews"
    (reviews / "plain" / "lit2024").mkdir(parents=True)
    (reviews / "f1000_5501_v1.xml").write_text(_jats(5501, 1, "Wearable sleep staging: a systematic review",
                                                     F1000_REPORTS), encoding="utf-8")
    forum = [
        {"id": "fOr3st", "forum": "fOr3st", "invitation": "ICLR.cc/2024/Conference/-/Submission",
         "content": {"title": {"value": "Token pruning for vision transformers: a survey"},
                     "abstract": {"value": "We survey token pruning."}}},
        *[{"id": f"rev{i}", "forum": "fOr3st", "invitations": ["ICLR.cc/2024/Conference/Submission7/-/Official_Review"],
           "signatures": [f"ICLR.cc/2024/Conference/Submission7/{sig}"], "cdate": 1700000000000 + i,
           "content": {k: {"value": v} for k, v in body.items()}} for i, (sig, body) in enumerate(OPENREVIEW_REVIEWS)],
        {"id": "meta1", "forum": "fOr3st", "invitations": ["ICLR.cc/2024/Conference/Submission7/-/Meta_Review"],
         "signatures": ["ICLR.cc/2024/Conference/Submission7/Area_Chair_Q"],
         "content": {"metareview": {"value": OPENREVIEW_META}, "recommendation": {"value": "Reject"}}},
        {"id": "dec1", "forum": "fOr3st", "invitations": ["ICLR.cc/2024/Conference/Submission7/-/Decision"],
         "content": {"decision": {"value": "Reject"}}},
        {"id": "com1", "forum": "fOr3st", "invitations": ["ICLR.cc/2024/Conference/Submission7/-/Official_Comment"],
         "content": {"comment": {"value": "We thank the reviewers."}}},
    ]
    (reviews / "openreview_fOr3st.json").write_text(json.dumps(forum, indent=1), encoding="utf-8")
    (reviews / "peerj_8120.json").write_text(json.dumps({
        "paper_id": "8120", "title": "Acoustic monitoring of bats: a review", "abstract": "We review bat acoustics.",
        "doi": "10.7717/peerj.8120", "review_history": MOPRD_ROUNDS}, indent=1), encoding="utf-8")
    (reviews / "plain" / "lit2024" / "referee-a.txt").write_text(PLAIN_REVIEW + "\n", encoding="utf-8")
    (reviews / "unconfirmed_9999.json").write_text(json.dumps({
        "paper_id": "9999", "title": "A novel method for bat call detection", "review_history": [
            {"version": 1, "reviews": [{"reviewer": "R1", "content": "Fine work."}]}]}), encoding="utf-8")
    texts = root / "texts"
    texts.mkdir()
    (texts / "fOr3st.md").write_text("# Token pruning for vision transformers: a survey\n\n## Abstract\n\nWe survey "
                                     "token pruning.\n\n## Introduction\n\nPruning tokens saves compute.\n",
                                     encoding="utf-8")
    (texts / "8120.md").write_text("# Acoustic monitoring of bats: a review\n\n## Abstract\n\nWe review bat "
                                   "acoustics.\n\n## Methods\n\nWe searched the literature.\n", encoding="utf-8")
    (texts / "lit2024.md").write_text("# Graph learning for chemistry: a literature review\n\n## Introduction\n\n"
                                      "Molecules are graphs.\n", encoding="utf-8")
    candidates = root / "candidates.csv"
    candidates.write_text(
        "id,title,abstract,source,doi\n"
        "5501,Wearable sleep staging: a systematic review,We review wearable sensing.,f1000,10.12688/f1000research.5501.1\n"
        "fOr3st,Token pruning for vision transformers: a survey,We survey token pruning.,openreview,\n"
        "8120,Acoustic monitoring of bats: a review,We review bat acoustics.,moprd,10.7717/peerj.8120\n"
        "lit2024,Graph learning for chemistry: a literature review,Molecules are graphs.,unknown,\n"
        "9999,A novel method for bat call detection: a review of results,We propose a detector.,moprd,\n"
        "7777,Deep learning for protein folding,We train a model.,f1000,\n", encoding="utf-8")
    return {"candidates": candidates, "reviews": reviews, "texts": texts}


def confirm_proposed(verification: Path) -> None:
    """Play the person of stage 3: confirm every proposed row (substantive reviews: yes), reject the others."""
    import csv

    rows = list(csv.DictReader(verification.read_text(encoding="utf-8").splitlines()))
    for row in rows:
        row["confirmed"] = row["proposed"]
        row["substantive_reviews"] = "yes" if row["proposed"] == "yes" else ""
    with verification.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def label_studio_export(tasks: list[dict], changes: dict[tuple[str, str], str] | None = None) -> list[dict]:
    """A Label Studio JSON export of ``tasks``: annotator 1 accepts the predictions, annotator 2 accepts them too
    except the (review_id, dimension) choices in ``changes``; one extra cancelled annotation."""
    changes = changes or {}
    out = []
    for n, task in enumerate(tasks, 1):
        pred = task.get("predictions", [{}])[0].get("result", [])
        rid = task["data"]["review_id"]
        second = []
        for item in pred:
            item = json.loads(json.dumps(item))
            if item["type"] == "choices" and (rid, item["from_name"]) in changes:
                item["value"]["choices"] = [changes[(rid, item["from_name"])]]
            second.append(item)
        anns = [{"id": 10 * n + 1, "completed_by": 1, "result": pred, "was_cancelled": False},
                {"id": 10 * n + 2, "completed_by": {"id": 2, "email": "b@example.org"}, "result": second,
                 "was_cancelled": False}]
        if n == 1:
            anns.append({"id": 10 * n + 3, "completed_by": 3, "result": [], "was_cancelled": True})
        out.append({"id": n, "data": task["data"], "annotations": anns})
    return out
