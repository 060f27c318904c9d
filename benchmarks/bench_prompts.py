"""Throughput of the prompt builder and the judge-answer parser (SurveyReview App. C protocol).

Run: ``.venv/bin/python benchmarks/bench_prompts.py``. Prints calls per second for building prompts of a
60k-character survey, for formatting SFT examples, and for parsing realistic and adversarial answers
(the parser is linear in the answer length: the worst adversarial case is printed in ms per 100k chars).
"""

from __future__ import annotations

import time

from surveyalign.prompts import build_judge_prompt, build_sft_example, parse_judgement


def _rate(fn, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return n / (time.perf_counter() - start)


def main() -> None:
    survey = ("## Section\nGraph neural networks are reviewed in 212 papers (2016-2024). " * 800)[:60_000]
    knowledge = "\n".join(f"- Paper {i} ({2000 + i % 25}), {i * 7} citations" for i in range(300))
    answers = [
        "<think>\n\n</think>\n\nThe taxonomy in Section 2 is clear, but Table 3 omits 2023 methods." * 3 + "$$$-1$$$",
        "<reason>Mostly a catalogue of 120 methods with little comparison.</reason> <score>-2</score>",
        "Clear writing throughout; Figure 4 is well explained. **$$$+1$$$**",
        "The survey misses key works such as",
    ]
    print(f"build_judge_prompt (60k-char survey, KA): {_rate(lambda: build_judge_prompt('comprehensiveness', survey, knowledge=knowledge), 2000):,.0f} prompts/s")
    print(f"build_sft_example  (60k-char survey):     {_rate(lambda: build_sft_example('criticalness', survey, ['a.', 'b.'], -1), 2000):,.0f} examples/s")
    print(f"parse_judgement    (realistic answers):   {_rate(lambda: [parse_judgement(a) for a in answers], 5000) * len(answers):,.0f} answers/s")
    n = 100_000
    adversarial = {
        "stars": "*" * n + "x$$$1$$$",
        "spaces after opener": "x$$$" + " " * n,
        "think openers": "<think>" * (n // 7),
        "reason openers": "<reason>" * (n // 8) + "<score>1</score>",
        "dollar runs": "$$$ " * (n // 4),
        "digits": "$$$" + "1" * n,
    }
    worst = max((_time_one(text), name) for name, text in adversarial.items())
    print(f"parse_judgement    worst adversarial case: {worst[0] * 1000:.1f} ms per {n:,} chars ({worst[1]})")


def _time_one(text: str) -> float:
    start = time.perf_counter()
    parse_judgement(text)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
