"""The shared gate before any answer is read (``surveyalign.prompts.answer_failure``): a length stop is
"truncated" for every reader, and the message names what that reader expected (score marker or JSON object)."""

from __future__ import annotations

import pytest

from surveyalign.backends import Generation
from surveyalign.prism.pipeline import ExtractionLog
from surveyalign.prompts import TRUNCATED, answer_failure, parse_generation

CUT = "truncated: the answer stopped at the token limit (finish_reason 'max_tokens'); it is not read even if "


def test_message_is_general_unless_told_what_was_expected():
    gen = Generation('{"units": []}', "max_tokens", None)
    assert answer_failure(gen) == CUT + "its visible part looks complete (raise max_new_tokens)"
    assert answer_failure(gen, "JSON object") == CUT + "it already holds a complete JSON object (raise max_new_tokens)"
    # the reason prefix the evaluation counts by stays the same
    assert answer_failure(gen, "JSON object").split(":")[0] == TRUNCATED == "truncated"
    assert answer_failure(Generation("ok", "stop", None), "JSON object") is None
    assert answer_failure({"text": "", "finish_reason": "stop", "refusal": " No. "}, "JSON object") == "refused: No."


def test_judge_reader_names_the_score_marker_and_other_readers_do_not():
    judged = parse_generation({"text": "Clear.$$$1$$$", "finish_reason": "max_tokens"})
    assert judged.error == CUT + "it already holds a complete score marker (raise max_new_tokens)"
    other = parse_generation({"text": "<consistency>0.8</consistency>", "finish_reason": "max_tokens"},
                             parse=lambda text: pytest.fail("a truncated answer must not be parsed"))
    assert other.error == CUT + "its visible part looks complete (raise max_new_tokens)"


def test_prism_extraction_reports_a_truncated_json_answer():
    log = ExtractionLog()
    parsed = log.read("adu", "review_1", Generation('{"units": []}', "max_tokens", None),
                      lambda text: pytest.fail("a truncated answer must not be parsed"))
    reason = CUT + "it already holds a complete JSON object (raise max_new_tokens)"
    assert parsed.error == reason
    assert log.counts["adu"]["parse_failed"] == 1 and log.counts["adu"]["parsed"] == 0
    assert log.failures == [{"stage": "adu", "unit_id": "review_1", "status": "parse_failed", "reason": reason,
                             "answer_head": '{"units": []}'}]
