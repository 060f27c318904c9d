"""`surveyalign score` against an OpenAI-compatible stand-in: samples a server failed to return are counted and
shown per dimension (issue 21 B), and an API judge with a known context cuts the survey with a named tokenizer
by the training length rule (issue 21 D)."""

from __future__ import annotations

import json
import os

import httpx
from survey_fixtures import write_markdown_survey

from surveyalign.cli import main
from surveyalign.testing import FakeChatServer

DIMS = ("readability", "structure", "comprehensiveness", "criticalness")


def _config(tmp_path, server, extra_options="", top=""):
    path = tmp_path / "judge.yaml"
    path.write_text(f"{top}backend:\n  kind: openai\n  options: {{model: fake, base_url: '{server.base_url}', "
                    f"request_logprobs: true{extra_options}}}\n", encoding="utf-8")
    return path


def test_fake_server_honours_n_and_can_return_fewer_choices():
    body = {"model": "m", "messages": [{"role": "user", "content": "hi there"}], "n": 3}
    with FakeChatServer(replies=["a $$$1$$$", "b $$$2$$$"]) as server:
        reply = httpx.post(f"{server.base_url}/chat/completions", json=body).json()
    assert [c["message"]["content"] for c in reply["choices"]] == ["a $$$1$$$", "b $$$2$$$", "a $$$1$$$"]
    assert [c["index"] for c in reply["choices"]] == [0, 1, 2]
    assert reply["usage"] == {"prompt_tokens": 2, "completion_tokens": 6, "total_tokens": 8}  # prompt billed once
    with FakeChatServer(max_choices=1, max_model_len=800) as server:
        reply = httpx.post(f"{server.base_url}/chat/completions", json=body).json()
        listed = httpx.get(f"{server.base_url}/models").json()["data"][0]
    assert len(reply["choices"]) == 1 and listed["max_model_len"] == 800


def test_score_counts_samples_the_server_did_not_return(tmp_path, capsys):
    survey = write_markdown_survey(tmp_path / "in")

    with FakeChatServer(replies=["Clear and well organised. $$$2$$$"], max_choices=1) as server:
        config = _config(tmp_path, server, ", n_per_request: true")
        out = tmp_path / "out"
        code = main(["score", str(survey), "--judge", str(config), "--out", str(out), "--samples", "3",
                     "--allow-no-knowledge", "--no-progress"])
        asked = [body.get("n") for body in server.requests]
    assert code == 0 and asked == [3, 3, 3, 3]  # one request per dimension asking n=3, 1 choice back
    review = json.loads((out / "oracles.json").read_text(encoding="utf-8"))
    for dim in DIMS:
        record = review["dimensions"][dim]
        assert (record["status"], record["score"], record["votes"]) == ("scored", 2, {"2": 1})
        assert (record["n_requested"], record["n_usable"], record["n_failed_samples"], record["n_errors"]) == (3, 1, 2, 2)
        assert record["vote_share"] == 1.0 and record["agreement_over"] == "usable samples"
        missing = f"{server.base_url}/chat/completions returned 1 of 3 choices"
        assert [s["error"] for s in record["samples"]][1:] == [missing] * 2
    summary = review["summary"]
    assert (summary["n_scored"], summary["n_failed"], summary["n_failed_samples"], summary["n_partial"]) == (4, 0, 8, 4)
    assert len(review["warnings"]) == 4
    assert review["warnings"][0].startswith("readability: 1 of 3 samples usable (2 api_error, 0 unparsed: ")
    assert review["warnings"][0].endswith("score and agreement are over the 1 usable sample only")
    md = (out / "oracles.md").read_text(encoding="utf-8")
    assert md.count("| 0/0/0/1/2 | 100% of 1 usable, 1 of 3 samples |") == 4
    assert "> readability: 1 of 3 samples usable" in md
    html = (out / "oracles.html").read_text(encoding="utf-8")
    assert html.count("100% of 1 usable, 1 of 3 samples") == 4 and "readability: 1 of 3 samples usable" in html
    err = capsys.readouterr().err
    assert "4/4 dimensions scored (4 on fewer than K usable samples; 8 failed sample(s))" in err
    assert err.count("warning: ") == 4


def test_score_a_dimension_without_a_usable_sample_fails(tmp_path):
    survey = write_markdown_survey(tmp_path / "in")
    with FakeChatServer(replies=["no verdict at all"], max_choices=2) as server:
        config = _config(tmp_path, server, ", n_per_request: true")
        code = main(["score", str(survey), "--judge", str(config), "--out", str(tmp_path / "out"), "--samples", "3",
                     "--dimensions", "readability", "--no-progress"])
    assert code == 3
    review = json.loads((tmp_path / "out" / "oracles.json").read_text(encoding="utf-8"))
    record = review["dimensions"]["readability"]
    assert record["status"] == "parse_failed" and record["score"] is None
    assert (record["n_usable"], record["n_failed_samples"], record["n_unparsed"], record["n_errors"]) == (0, 3, 2, 1)
    assert review["summary"]["n_failed"] == 1 and review["summary"]["n_partial"] == 0
    assert review["warnings"] == [review["warnings"][0]] and review["warnings"][0].endswith("; not scored")
    assert "| Readability | " in (tmp_path / "out" / "oracles.md").read_text(encoding="utf-8")


def _long_survey(folder):
    folder.mkdir(parents=True, exist_ok=True)
    body = " ".join(f"Section {i} compares oracle methods and their failure modes in detail." for i in range(120))
    path = folder / "long.md"
    path.write_text(f"# A Long Survey of Oracles\n\n## Introduction\n\n{body}\n", encoding="utf-8")
    return path


def test_score_cuts_a_long_survey_for_an_api_judge_with_the_named_tokenizer(tiny_model_dir, tmp_path):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    survey = _long_survey(tmp_path / "in")
    with FakeChatServer(replies=["Readable. $$$1$$$"], tokenizer=tok) as server:
        config = _config(tmp_path, server, ", max_model_len: 800")
        common = ["score", str(survey), "--judge", str(config), "--samples", "1", "--max-new-tokens", "24",
                  "--dimensions", "readability", "--no-progress"]
        # no tokenizer: refused with the numbers and the exact flag / key that cuts it, nothing sent
        assert main([*common, "--out", str(tmp_path / "refused"), "--max-length", "700"]) == 3
        refused = json.loads((tmp_path / "refused" / "long.json").read_text(encoding="utf-8"))
        reason = refused["dimensions"]["readability"]["reason"]
        assert "context (max_model_len) of 800 tokens" in reason
        assert "--tokenizer DIR or `tokenizer: DIR` in the judge config" in reason and server.requests == []
        # --tokenizer: cut by the training length rule to max_length 700 - max_new_tokens 24 = 676 prompt tokens
        assert main([*common, "--out", str(tmp_path / "flag"), "--max-length", "700",
                     "--tokenizer", str(tiny_model_dir)]) == 0
        (body,) = server.requests
        sent_tokens = server._usage(body, 0, "")["prompt_tokens"]
        # the judge config's `tokenizer:` key (relative to the config's folder) does the same
        top = f"tokenizer: {os.path.relpath(tiny_model_dir, tmp_path)}\nmax_length: 700\n"
        keyed = _config(tmp_path, server, ", max_model_len: 800", top=top)
        assert main(["score", str(survey), "--judge", str(keyed), "--samples", "1",
                     "--max-new-tokens", "24", "--dimensions", "readability", "--no-progress",
                     "--out", str(tmp_path / "key")]) == 0
        assert server.requests[1]["messages"] == body["messages"]
    record = json.loads((tmp_path / "flag" / "long.json").read_text(encoding="utf-8"))["dimensions"]["readability"]
    prompt, read = record["prompt"], record["read"]
    assert record["status"] == "scored" and prompt["max_length"] == 700
    assert prompt["prompt_tokens"] == sent_tokens and 600 < sent_tokens <= 676
    assert prompt["shortened_tokens"] > 0 and read["cut"] is True and read["counted"] == "tokens"
    whole = len(tok(survey.read_text(encoding="utf-8").split("\n", 2)[2], add_special_tokens=False)["input_ids"])
    assert read["tokens_total"] > 676 and read["tokens_read"] < read["tokens_total"] and whole > 676
