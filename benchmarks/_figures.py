"""Shared by the benchmarks: the machine's load, medians, and the one line of figures ``make bench`` tabulates.

Every benchmark ends with :func:`emit`: a line ``BENCH-FIGURES {json}`` holding its figures (name, value, goal,
met, and the load average when measured). ``benchmarks/bench_table.py`` reads those lines from the logs of a
``make bench`` run and prints one table: figure, value, goal, met.
"""

from __future__ import annotations

import json
import os
import resource
import statistics

PREFIX = "BENCH-FIGURES "


def load_average() -> str:
    """The 1 / 5 / 15-minute load averages, e.g. ``"9.1 10.0 11.0"`` (other work on the machine slows wall times)."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far (all threads)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def median(values) -> float:
    return float(statistics.median(values))


def figure(name: str, value: float, goal: str, met: bool, *, unit: str = "") -> dict:
    """One row of the table: ``value`` (rounded to 3 significant decimals) against ``goal`` (as text)."""
    return {"figure": name, "value": f"{value:.3g}{unit}", "goal": goal, "met": bool(met), "load": load_average()}


def emit(figures: list[dict]) -> None:
    """Print the benchmark's figures as one ``BENCH-FIGURES`` JSON line (after its human-readable output)."""
    print(PREFIX + json.dumps(figures), flush=True)
