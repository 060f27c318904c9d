"""Benchmark: the share of prompt tokens served from a provider's prompt cache at 1,000 surveys (goal >= 70%).

Two measurements, both offline:

* **planned** (1,000 surveys x 4 dimensions): the judge prompts of the shared-survey layout and of the App. C
  order, each survey ``--survey-words`` long (SurveyReview surveys run to about 16k tokens), sent in the call
  stage's order (:func:`surveyalign.calls.prefix.order_for_cache`) and counted by the planner
  (:func:`surveyalign.calls.prefix.predict_cache`) under Anthropic's rules (breakpoints, Message Batches) and
  OpenAI's (automatic 128-token blocks), for K=1 and K=5; one token = one word here, as in the stand-ins.
* **stand-in** (``--standin`` surveys): the same prompts through :class:`surveyalign.testing.StandInPromptCache`
  (the model both stand-in servers use), the Anthropic request bodies built by
  :func:`surveyalign.backends.request_bodies.messages_params`: the planner's figure must match it.

    .venv/bin/python benchmarks/bench_prompt_cache.py [--surveys 1000] [--survey-words 16000] [--standin 20]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from surveyalign.backends.base import GenerationSettings  # noqa: E402
from surveyalign.backends.prompt_cache import anthropic_rules, openai_rules  # noqa: E402
from surveyalign.backends.request_bodies import messages_params  # noqa: E402
from surveyalign.calls.prefix import order_for_cache, predict_cache, shared_text  # noqa: E402
from surveyalign.constants import DIMENSIONS  # noqa: E402
from surveyalign.prompts import build_judge_prompt  # noqa: E402
from surveyalign.testing.prompt_cache import StandInPromptCache  # noqa: E402


@dataclass
class _Call:
    key: str
    messages: list
    messages_hash: str
    backend: object = None


def _calls(surveys: int, words: int, k: int, layout: str) -> list[_Call]:
    out = []
    for s in range(surveys):
        text = " ".join(f"s{s}w{i % 997}" for i in range(words))  # distinct per survey, cheap to build
        for dim in DIMENSIONS:
            messages = build_judge_prompt(dim, text, title=f"Survey {s}", layout=layout).messages()
            digest = hashlib.sha256(messages[0]["content"].encode()).hexdigest()
            out += [_Call(f"{digest}:{j}", messages, digest) for j in range(k)]
    return out


def _words(call: _Call) -> int:
    return len(call.messages[0]["content"].split())


def _prefix_words(call: _Call) -> int:
    text = shared_text(call.messages)
    return len(text.split()) if text else 0


def planned_share(surveys: int, words: int, k: int, layout: str, rules: object) -> float:
    calls = _calls(surveys, words, k, layout)
    use = predict_cache(calls, _words, _prefix_words, lambda c: rules)
    return sum(u.read for u in use.values()) / sum(_words(c) for c in calls)


def standin_share(surveys: int, words: int, k: int, layout: str) -> float:
    cache = StandInPromptCache(min_tokens=4096)
    settings = GenerationSettings(max_new_tokens=8)
    total = read = 0
    for call in order_for_cache(_calls(surveys, words, k, layout)):
        usage = cache.anthropic(messages_params("claude-opus-4-5", call.messages, settings))
        total += sum(usage.values())
        read += usage["cache_read_input_tokens"]
    return read / total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--surveys", type=int, default=1000)
    parser.add_argument("--survey-words", type=int, default=16000)
    parser.add_argument("--standin", type=int, default=20, help="surveys checked through the stand-in cache")
    args = parser.parse_args(argv)
    anthropic, openai = anthropic_rules("claude-opus-4-5"), openai_rules()
    print(f"share of prompt tokens served from cache, {args.surveys} surveys x 4 dimensions, "
          f"{args.survey_words} words each (goal >= 70%)")
    best = 0.0
    for rules_name, rules in (("anthropic (batch)", anthropic), ("openai", openai)):
        for k in (1, 5):
            for layout in ("app_c", "shared"):
                share = planned_share(args.surveys, args.survey_words, k, layout, rules)
                if layout == "shared":
                    best = max(best, share)
                print(f"  {rules_name:<18} K={k} {layout:<7} planned {share:6.1%}")
    for k in (1, 5):
        stand = standin_share(args.standin, args.survey_words, k, "shared")
        plan = planned_share(args.standin, args.survey_words, k, "shared", anthropic)
        print(f"  stand-in check, anthropic K={k} shared, {args.standin} surveys: stand-in {stand:6.1%}, "
              f"planned {plan:6.1%}")
    print(f"best shared-layout figure: {best:.1%} ({'meets' if best >= 0.70 else 'misses'} the 70% goal)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
