"""Print one table (figure, value, goal, met, load) from the ``BENCH-FIGURES`` lines of benchmark logs.

    python benchmarks/bench_table.py LOG [LOG ...]     # what ``make bench`` runs last
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _figures import PREFIX


def main(paths: list[str]) -> int:
    rows = []
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith(PREFIX):
                rows.extend(json.loads(line[len(PREFIX):]))
    header = ("figure", "value", "goal", "met", "load (1/5/15 min)")
    table = [header] + [(r["figure"], r["value"], r["goal"], "yes" if r["met"] else "NO", r.get("load", ""))
                        for r in rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for i, row in enumerate(table):
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * width for width in widths))
    return 0 if rows else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
