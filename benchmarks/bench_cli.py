"""How fast the command line answers: ``surveyalign --help`` and ``surveyalign CMD --help`` for every command.

Each is run ``--repeats`` times as a fresh ``python -m surveyalign`` process; the median wall time and the median
CPU seconds of the child (user + system) are printed with the machine's load average. Wall time is the goal
(<= 0.5 s for ``--help``, <= 0.7 s for the slowest ``CMD --help``); on a loaded machine the CPU figure says what
the process itself costs (the rest is waiting for a core).

    .venv/bin/python benchmarks/bench_cli.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _figures import emit, figure, load_average, median


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(args: list[str], repeats: int) -> tuple[float, float]:
    """Median wall seconds and median child CPU seconds of ``python -m surveyalign ARGS``."""
    walls, cpus = [], []
    for _ in range(repeats):
        c0, t0 = _child_cpu(), time.perf_counter()
        subprocess.run([sys.executable, "-m", "surveyalign", *args], check=True, stdout=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t0)
        cpus.append(_child_cpu() - c0)
    return median(walls), median(cpus)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per command; medians reported (default 5)")
    args = parser.parse_args(argv)
    from surveyalign.cli import _COMMANDS

    print(f"load average {load_average()}")
    top_wall, top_cpu = timed(["--help"], args.repeats)
    print(f"surveyalign --help: {top_wall:.3f} s wall, {top_cpu:.3f} s CPU (medians of {args.repeats})")
    worst = (0.0, 0.0, "")
    for name, _, _ in _COMMANDS:
        wall, cpu = timed([name, "--help"], args.repeats)
        print(f"surveyalign {name} --help: {wall:.3f} s wall, {cpu:.3f} s CPU")
        worst = max(worst, (wall, cpu, name))
    print(f"load average {load_average()}")
    # the CPU rows hold the same goals: on an idle machine wall = CPU + a little; under load only CPU is the code's
    emit([figure("surveyalign --help, wall (median)", top_wall, "<= 0.5 s", top_wall <= 0.5, unit=" s"),
          figure("surveyalign --help, CPU (median)", top_cpu, "<= 0.5 s CPU", top_cpu <= 0.5, unit=" s"),
          figure(f"slowest CMD --help ({worst[2]}), wall", worst[0], "<= 0.7 s", worst[0] <= 0.7, unit=" s"),
          figure(f"slowest CMD --help ({worst[2]}), CPU", worst[1], "<= 0.7 s CPU", worst[1] <= 0.7, unit=" s")])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
