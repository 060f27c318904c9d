"""Shortening a text to a token budget never splits a character or a grapheme cluster (byte-level BPE tokens end
inside UTF-8 sequences; decoding such a prefix leaves U+FFFD): tested with CJK, emoji sequences, combining marks
and right-to-left scripts, through the length rule of training (SFT examples, DPO pairs) and evaluation (the
judge's prompt) and through the Crit-KA summary budget."""

from __future__ import annotations

import re

import pytest
import regex
from transformers import AutoTokenizer

from surveyalign.documents import truncate_to_tokens
from surveyalign.prompts import fit_survey_text

#: Chinese, Japanese, emoji with ZWJ / skin tone / flag sequences, combining accents, Vietnamese stacked
#: diacritics, Arabic and Hebrew (right to left, with a left-to-right mark).
MIXED = ("Résumé: 深度学习的综述。ニューラルネットワーク。👩‍💻 codes 🇫🇷 and 👍🏽 ❤️; e\u0301te\u0301 Tiếng Việt "
         "nghiên cứu; مرحبا بالعالم، هذه مراجعة. שלום עולם\u200e, סקירה. ")


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    return AutoTokenizer.from_pretrained(tiny_model_dir)


def _graphemes(text: str) -> list[str]:
    return regex.findall(r"\X", text)


def _is_clean_prefix(cut: str, text: str) -> bool:
    """A prefix of ``text`` that ends on a grapheme-cluster boundary and holds no replacement character."""
    n = len(_graphemes(cut))
    return text.startswith(cut) and "\ufffd" not in cut and _graphemes(cut) == _graphemes(text)[:n]


def _body(content: str) -> str:
    """The survey part of a rendered user message (from its first word to before a closing separator line)."""
    body = content[content.index("Résumé"):]
    return re.sub(r"\n-{3,}\s*$", "", body).rstrip()


def test_plain_decoding_of_token_prefixes_would_split_characters(tokenizer):
    """The fault the rule guards against is real for this byte-level tokenizer."""
    ids = tokenizer(MIXED, add_special_tokens=False)["input_ids"]
    broken = [k for k in range(1, len(ids)) if "\ufffd" in tokenizer.decode(ids[:k])]
    assert len(broken) > len(ids) // 4


def test_truncate_to_tokens_cuts_at_character_boundaries_for_every_budget(tokenizer):
    text = MIXED * 3
    n_ids = len(tokenizer(text, add_special_tokens=False)["input_ids"])
    assert truncate_to_tokens(text, tokenizer, n_ids) == text
    for limit in range(n_ids):
        cut = truncate_to_tokens(text, tokenizer, limit)
        assert _is_clean_prefix(cut, text), (limit, cut[-6:])
        assert len(tokenizer(cut, add_special_tokens=False)["input_ids"]) <= limit
    # close to the budget: at most a few tokens given away to stay on a boundary (an emoji sequence is several)
    assert len(tokenizer(truncate_to_tokens(text, tokenizer, n_ids - 5), add_special_tokens=False)["input_ids"]) \
        >= n_ids - 5 - 8


@pytest.mark.parametrize("overhead", [0, 37])
def test_fit_survey_text_keeps_whole_characters(tokenizer, overhead):
    text = MIXED * 4

    def count(body: str) -> int:
        return overhead + len(tokenizer(body, add_special_tokens=False)["input_ids"])

    full = count(text)
    for budget in range(overhead + 1, full, 3):
        fitted, total, removed = fit_survey_text(text, count, budget, tokenizer)
        assert _is_clean_prefix(fitted, text), (budget, fitted[-6:])
        assert total == count(fitted) <= budget
        assert removed == count(text) - count(fitted)


def test_training_examples_keep_whole_characters(tokenizer):
    from datasets import Dataset

    from surveyalign.training.data import prepare_sft_dataset

    row = {"unit_id": "u1::readability", "dimension": "readability", "text": MIXED * 40, "score": -1,
           "rationales": ["Hard to follow."], "title": "T", "paper_id": "p1", "review_id": "r1", "source": "f1000"}
    for max_length in (600, 900, 1300):
        data, report = prepare_sft_dataset(Dataset.from_list([row]), tokenizer, dimension="readability",
                                           max_length=max_length)
        user = data[0]["prompt"][-1]["content"]
        assert "\ufffd" not in user and report.n_shortened == 1
        assert _is_clean_prefix(_body(user), row["text"])


def test_judge_prompts_keep_whole_characters(tokenizer):
    from surveyalign.backends import GenerationSettings
    from surveyalign.backends.simple import ScriptedBackend
    from surveyalign.judge import DimensionOptions, Judge

    survey = MIXED * 40
    backend = ScriptedBackend(lambda m, s, i: "Fine. $$$1$$$")
    for max_length in (500, 800, 1100):
        judge = Judge(backend, settings=GenerationSettings(max_new_tokens=16),
                      default=DimensionOptions(max_length=max_length, tokenizer=tokenizer))
        prepared = judge.prepare(survey, "readability")
        assert prepared.sendable and prepared.shortened_tokens > 0
        content = prepared.messages[-1]["content"]
        assert "\ufffd" not in content
        assert _is_clean_prefix(_body(content), survey)


def test_crit_ka_budget_keeps_whole_characters(tiny_model_dir):
    from surveyalign.knowledge.summarise import TokenCounter

    counter = TokenCounter(str(tiny_model_dir))
    text = MIXED * 5
    for limit in range(1, counter(text), 7):
        cut, was_cut = counter.truncate(text, limit)
        assert was_cut and _is_clean_prefix(cut, text) and counter(cut) <= limit
