"""`--max-cost` is a cap (surveyalign/calls/budget.py, spend.py, surveyalign/inference/spend.py): a prompt counted
without a tokenizer is estimated at the tokens per character its answers show (a CJK survey costs far more tokens
than 4 characters per token), the cap counts what earlier runs paid, the next call is not sent when it would pass
the cap, and once a unit does not fit no later (cheaper) unit is sent ahead of it."""

from __future__ import annotations

import json
import re

from survey_fixtures import MARKDOWN

from surveyalign.calls.budget import CostCap, TokenRate, chars_per_token_count
from surveyalign.cli import main
from surveyalign.testing import FakeChatServer

#: A survey whose body is Chinese: the tiny byte-level tokenizer spends 3 tokens on each of its characters.
CJK = MARKDOWN.replace("## 1 Introduction", "## 1 引言\n\n" + "测试预言机判断程序的一次运行是否通过。" * 40 + "\n\n## 2 Introduction")


def _records(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class _Unit:
    def __init__(self, unit_id: str, usd: float) -> None:
        self.unit_id, self.stage, self.usd = unit_id, "judge", usd


def test_token_rate_learns_tokens_per_character_and_the_fallback_counts_cjk_one_each():
    msgs = [{"role": "user", "content": "测试" * 50}]  # 100 characters
    assert chars_per_token_count(msgs) == 100 + 4  # not 100 / 4 + 4 = 29
    assert chars_per_token_count([{"role": "user", "content": "abcd" * 10}]) == 10 + 4
    rate = TokenRate()
    assert rate.rate is None and rate.count(msgs) == 104
    rate.observe(msgs, 304, key="k1")  # the provider counted 3 tokens per character (+ 4 for the message)
    rate.observe(msgs, 999, key="k1")  # the same key again: not counted twice
    rate.observe(msgs, 0, key="k2")  # a sample riding on another's prefill: nothing learned
    assert (rate.chars, rate.tokens, rate.answers) == (100, 300, 1) and rate.rate == 3.0
    assert rate.count([{"role": "user", "content": "测" * 10}]) == 34
    assert "3.000 tokens per character, learned from 1 answer(s)" in rate.describe()


def test_the_walk_stops_at_the_first_unit_that_does_not_fit_and_never_sends_a_cheaper_one_after_it():
    cap = CostCap(10.0, 2.0, lambda call: call.usd)  # $2 paid by earlier runs
    units = [_Unit("A", 5.0), _Unit("B", 50.0), _Unit("C", 1.0)]
    walked = [[u.unit_id for u in chunk] for chunk in cap.chunks(units, 1)]
    assert walked == [["A"]] and cap.stopped and cap.held_back == 2
    cap.add(5.0)
    assert cap.spent_usd == 7.0
    assert cap.allows([_Unit("C", 1.0)]) is False  # C would fit ($8 <= $10) but B, before it, did not
    assert list(cap.chunks([_Unit("C", 1.0)], 1)) == []
    fresh = CostCap(10.0, 2.0, lambda call: call.usd)
    assert fresh.allows([_Unit("C", 1.0)]) and fresh.allows([_Unit("C", 8.0)]) and not fresh.allows([_Unit("C", 8.01)])


def test_score_on_a_cjk_survey_never_passes_the_cap_and_a_rerun_counts_what_was_paid(tiny_model_dir, tmp_path,
                                                                                     capsys):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    prices = tmp_path / "prices.yaml"
    prices.write_text("as_of: '2026-12-03'\nmodels:\n  gpt-5.2: {input: 1000.0, output: 1000.0}\n")
    survey = tmp_path / "cjk.md"
    survey.write_text(CJK, encoding="utf-8")

    def usd(records):
        return sum(r["prompt_tokens"] + r["completion_tokens"] for r in records) * 1000.0 / 1e6

    with FakeChatServer(replies=["Reads well. $$$1$$$"], model="gpt-5.2", tokenizer=tok) as server:
        judge = tmp_path / "judge.yaml"  # an API judge without `tokenizer:`: no exact count before sending
        judge.write_text(f"name: api\nbackend:\n  kind: openai\n  options: {{model: gpt-5.2, base_url: "
                         f"'{server.base_url}', api_key_env: null, max_retries: 0}}\n", encoding="utf-8")

        def args(out):
            return ["score", str(survey), "--judge", str(judge), "--out", str(out), "--samples", "1",
                    "--max-new-tokens", "16", "--allow-no-knowledge", "--no-progress", "--prices", str(prices)]

        assert main([*args(tmp_path / "all"), "--max-cost", "1000"]) == 0  # what each dimension costs
        full = _records(tmp_path / "all" / "calls.jsonl")
        per_dim = [usd([r]) for r in full]
        assert len(per_dim) == 4 and min(per_dim) > 0
        # 4 characters per token would put each dimension at a third or less of what it costs
        prompt_chars = len(CJK)
        assert full[0]["prompt_tokens"] > 3 * prompt_chars / 4 * 1.5
        capsys.readouterr()

        cap = per_dim[0] + per_dim[1] + 0.5 * per_dim[2]
        out = tmp_path / "capped"
        assert main([*args(out), "--max-cost", f"{cap:.6f}"]) == 4
        err = capsys.readouterr().err
        capped = _records(out / "calls.jsonl")
        assert [r["namespace"] for r in capped] == ["readability", "structure"]  # the third would pass the cap
        assert usd(capped) <= cap
        assert "stopped at the cost cap" in err

        # a re-run starts from what the first one paid, not from $0
        assert main([*args(out), "--max-cost", f"{usd(capped) / 2:.6f}"]) == 4
        err = capsys.readouterr().err
        assert re.search(r"\$([\d.,]+) spent", err).group(1) == f"{usd(capped):,.4f}"
        assert len(_records(out / "calls.jsonl")) == 2  # nothing sent
