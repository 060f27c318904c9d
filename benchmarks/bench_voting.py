"""Benchmark: K=5 voting with one shared prefill vs five independent calls vs one call (SurveyReview App. E).

Tiny Qwen3 (``build_tiny_model``), a judge prompt of about 2,000 tokens, CPU, greedy-free sampling at T=0.7:

* ``one call``: ``generate([prompt], n=1)``;
* ``voting (shared prefill)``: ``generate([prompt], n=5)``: the prompt runs once, its KV cache is expanded to
  five rows (``surveyalign.backends.prefill``);
* ``voting (prompt repeated)``: the same with ``shared_prefill=False`` (what ``num_return_sequences`` does: five
  copies of the prompt through the model);
* ``five independent calls``: five ``generate([prompt], n=1)`` calls with seeds 0..4.

Also counts the prompt tokens that went through the model (a hook on the token embedding). Goal: voting <= 1.3x
one call (issue 23). The modes run interleaved (round r runs every mode once), ``--repeats`` rounds (default 5);
each mode's median wall time and median process CPU seconds are printed with the load average, and the ratio
of the medians is the figure (CPU too: steadier than wall time on a shared machine).

``--threads N`` sets torch's intra-op threads (default: torch's own choice, one per core). On a shared machine
whose cores are busy, torch's threads wait for each other: with 2 threads under a load of 8 on 2 cores a call cost
5-15x the CPU of the same call on 1 thread (issue 23), and that noise, not the code, then sets the ratio.

    .venv/bin/python benchmarks/bench_voting.py [--prompt-tokens 2000] [--new-tokens 32] [--repeats 5] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from surveyalign.backends import GenerationSettings, load_backend
from surveyalign.prompts import build_judge_prompt
from surveyalign.testing import build_tiny_model

sys.path.insert(0, str(Path(__file__).parent))
from _figures import cpu_seconds, emit, figure, load_average, median


def _prompt(backend, target: int) -> list[dict[str, str]]:
    words = ["graph", "neural", "networks", "survey", "method", "results", "section", "review", "data", "model"]
    text, n = "", 0
    while n < target:
        text += " ".join(words[(len(text) + i) % len(words)] for i in range(200)) + "\n"
        messages = build_judge_prompt("readability", text).messages()
        n = len(backend.tokenizer(backend.render(messages, GenerationSettings()), add_special_tokens=False)
                ["input_ids"])
    return messages


def _interleaved(modes: dict, repeats: int) -> dict[str, tuple[float, float]]:
    """Median (wall seconds, process CPU seconds) per mode over ``repeats`` rounds that run every mode once."""
    walls: dict[str, list[float]] = {name: [] for name in modes}
    cpus: dict[str, list[float]] = {name: [] for name in modes}
    for _ in range(repeats):
        for name, fn in modes.items():
            c0, t0 = cpu_seconds(), time.perf_counter()
            fn()
            walls[name].append(time.perf_counter() - t0)
            cpus[name].append(cpu_seconds() - c0)
    return {name: (median(walls[name]), median(cpus[name])) for name in modes}


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def _prompt_tokens(backend, fn) -> int:
    seen: list[tuple[int, int]] = []
    handle = backend.model.get_input_embeddings().register_forward_hook(
        lambda module, args, out: seen.append(tuple(args[0].shape)))
    try:
        fn()
    finally:
        handle.remove()
    first_step = next(i for i, (_, t) in enumerate(seen) if t == 1)
    return sum(r * t for r, t in seen[:first_step + 1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompt-tokens", type=int, default=2000)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5, help="interleaved rounds; medians (default 5)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch intra-op threads (default: torch's choice); 1 is steadier on a busy machine")
    args = parser.parse_args()
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    model = build_tiny_model(tempfile.mkdtemp(prefix="bench-voting-"))
    shared = load_backend("transformers", model=str(model), device="cpu", batch_size=args.samples)
    repeated = load_backend("transformers", model=str(model), device="cpu", batch_size=args.samples,
                            shared_prefill=False)
    messages = _prompt(shared, args.prompt_tokens)
    n_prompt = len(shared.tokenizer(shared.render(messages, GenerationSettings()), add_special_tokens=False)
                   ["input_ids"])
    # an id outside the vocabulary as the only stop token: every mode decodes exactly --new-tokens per sample
    never = int(shared.model.config.vocab_size) + 1
    shared.eos_token_ids = repeated.eos_token_ids = [never]
    settings = GenerationSettings(temperature=0.7, max_new_tokens=args.new_tokens, seed=0)
    k = args.samples
    modes = {
        "one call": lambda: shared.generate([messages], settings, n=1),
        f"voting K={k} (shared prefill)": lambda: shared.generate([messages], settings, n=k),
        f"voting K={k} (prompt repeated)": lambda: repeated.generate([messages], settings, n=k),
        f"{k} independent calls": lambda: [shared.generate([messages], settings.model_copy(update={"seed": i}), n=1)
                                           for i in range(k)],
    }
    modes["one call"]()  # warm-up
    print(f"tiny Qwen3, CPU, prompt {n_prompt} tokens, {args.new_tokens} new tokens per sample, K={k}, "
          f"medians of {args.repeats} interleaved rounds; torch threads {_threads()}; load average {load_average()} on "
          f"{os.cpu_count()} CPUs")
    measured = _interleaved(modes, args.repeats)
    times = {name: wall for name, (wall, _) in measured.items()}
    base, base_cpu = measured["one call"]
    for name, (seconds, cpu) in measured.items():
        backend = repeated if "repeated" in name else shared
        tokens = _prompt_tokens(backend, modes[name]) if "independent" not in name else \
            k * _prompt_tokens(shared, modes["one call"])
        print(f"  {name:32s} {seconds:7.3f} s ({cpu:6.3f} s CPU)   {seconds / base:5.2f}x one call "
              f"({cpu / base_cpu:5.2f}x CPU)   prompt tokens through the model: {tokens}")
    ratio = times[f"voting K={k} (shared prefill)"] / base
    ratio_cpu = measured[f"voting K={k} (shared prefill)"][1] / base_cpu
    print(f"voting / one call = {ratio:.2f} wall, {ratio_cpu:.2f} CPU (goal <= 1.3); load average {load_average()}")
    threads = f", {_threads()} thread{'s' if _threads() > 1 else ''}"
    emit([figure(f"K={k} voting / one call, {n_prompt}-token prompt{threads}, wall", ratio, "<= 1.3", ratio <= 1.3),
          figure(f"K={k} voting / one call, {n_prompt}-token prompt{threads}, CPU", ratio_cpu, "<= 1.3",
                 ratio_cpu <= 1.3)])


if __name__ == "__main__":
    main()
