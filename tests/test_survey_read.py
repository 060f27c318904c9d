"""Issue 21 D: every report says how much of the survey the judge read, and an API judge never sends a survey
longer than its context whole (the limit from the config or from the server's ``/v1/models`` ``max_model_len``,
which ``surveyalign serve`` publishes like vLLM)."""

from __future__ import annotations

import json

import httpx

from surveyalign.backends.openai_api import OpenAIBackend
from surveyalign.backends.server import serve_in_thread
from surveyalign.backends.simple import ScriptedBackend
from surveyalign.cli import main
from surveyalign.constants import PROMPT_TOO_LONG
from surveyalign.testing import FakeChatServer


def test_serve_publishes_max_model_len_and_the_openai_backend_reads_it():
    backend = ScriptedBackend(["x"])
    backend.max_positions = 4096  # the served model's context (transformers: max_position_embeddings)
    with serve_in_thread(backend=backend, served_model_name="judge") as server:
        listed = httpx.get(f"{server.base_url}/models").json()["data"]
        client = OpenAIBackend("judge", base_url=server.base_url, api_key_env=None)
        assert client.max_model_len == 4096
    assert [(e["id"], e["max_model_len"]) for e in listed] == [("judge", 4096)]
    assert OpenAIBackend("judge", base_url=server.base_url, api_key_env=None, max_model_len=1000).max_model_len == 1000


def _score(tmp_path, survey, server, max_model_len=None):
    options = f"model: fake-judge, base_url: '{server.base_url}'"
    if max_model_len:
        options += f", max_model_len: {max_model_len}"
    judge = tmp_path / "judge.yaml"
    judge.write_text(f"backend: {{kind: openai, options: {{{options}}}}}\ngeneration: {{max_new_tokens: 100}}\n")
    return main(["score", str(survey), "--judge", str(judge), "--out", str(tmp_path / "out"), "--no-progress",
                 "--samples", "1", "--dimensions", "readability"])


def test_api_judge_refuses_a_survey_longer_than_its_context_with_the_numbers(tmp_path):
    """Old code: a 168k-character survey went to a served judge whole, with no cut and no warning."""
    survey = tmp_path / "long.md"
    body = "Oracles decide whether a test passes. " * 300  # 11,400 characters
    survey.write_text(f"# A long survey\n\n## Intro\n\n{body}\n", encoding="utf-8")
    with FakeChatServer(replies=["Fine. $$$1$$$"]) as server:
        assert _score(tmp_path, survey, server, max_model_len=2000) == 3
        assert server.requests == []  # never sent
    review = json.loads((tmp_path / "out" / "long.json").read_text())
    record = review["dimensions"]["readability"]
    assert record["status"] == PROMPT_TOO_LONG
    assert "about" in record["reason"] and "exceed the server's context (max_model_len) of 2000 tokens" in record["reason"]
    chars = int(record["reason"].split("the prompt has ")[1].split(" characters")[0])
    assert chars > len(body) and f"about {-(-chars // 4)} tokens" in record["reason"]


def test_reports_say_how_much_of_the_survey_was_read(tmp_path):
    survey = tmp_path / "short.md"
    text = "# A short survey\n\n## Intro\n\nOracles decide whether a test passes.\n"
    survey.write_text(text, encoding="utf-8")
    with FakeChatServer(replies=["Fine. $$$1$$$"]) as server:
        assert _score(tmp_path, survey, server, max_model_len=2000) == 0
    review = json.loads((tmp_path / "out" / "short.json").read_text())
    read = review["dimensions"]["readability"]["read"]
    n = review["survey"]["chars"]
    assert read == {"chars_read": n, "chars_total": n, "tokens_read": None, "tokens_total": None, "cut": False,
                    "cut_at_char": None, "counted": "characters", "max_length": None, "context": 2000}
    line = f"{n:,} of {n:,} characters (whole)"
    assert line in (tmp_path / "out" / "short.md").read_text() and line in (tmp_path / "out" / "short.html").read_text()


def test_reading_line_for_a_cut_survey_names_tokens_and_the_cut():
    from surveyalign.inference.report import reading_text

    cut = {"chars_read": 12000, "chars_total": 84156, "tokens_read": 512, "tokens_total": 20311, "cut": True,
           "cut_at_char": 12000, "counted": "tokens"}
    assert reading_text(cut) == ("12,000 of 84,156 characters (512 of 20,311 tokens); cut at character 12,000, "
                                 "the rest not read")
    assert reading_text(None) == "nothing sent"
    unchecked = {"chars_read": 10, "chars_total": 10, "cut": False, "counted": "none"}
    assert reading_text(unchecked) == "10 of 10 characters (whole); length not checked (no tokenizer and no known context)"
