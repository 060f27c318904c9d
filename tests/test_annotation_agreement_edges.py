"""Agreement edges (issue 27), every figure by hand: bootstrap percentiles over resamples we choose, the bootstrap's
size limits, alpha on two values / unpairable units / no units, the rendered Table 5 row, pair_labels restricted to
given units, the sample size limit and default seed, and a record without an annotator."""

from __future__ import annotations

import numpy as np
import pytest

from surveyalign.annotation import (
    agreement_table,
    alpha,
    pair_labels,
    render_table,
    sample_units,
    unit_labels,
)


class Draws:
    """Stands in for the numpy generator: hands out the resample indices we chose, checking the draw's range."""

    def __init__(self, n: int, draws: list[list[int]]) -> None:
        self.n, self.draws = n, iter(draws)

    def integers(self, low: int, high: int, size: int) -> np.ndarray:
        assert (low, high, size) == (0, self.n, self.n)  # indices 0..n-1, n of them (with replacement)
        return np.array(next(self.draws))


THREE = [(1, 1), (-1, -1), (1, -1)]


def _bootstrap(pairs, n_boot, draws: Draws, monkeypatch) -> dict:
    """The ``ci`` of a one-dimension table whose resamples are ``draws`` (the overall row repeats them)."""
    draws.draws = iter(list(draws.draws) * 2)
    monkeypatch.setattr(np.random, "default_rng", lambda seed: draws)
    return agreement_table({"structure": pairs}, n_boot=n_boot)["rows"]["structure"]["ci"]


def test_alpha_hand_values_two_values_and_unpairable_units():
    # THREE, interval: values 1 x3, -1 x3 (n = 6); D_o = 2 * 4 / 6; D_e = 3 * 3 * 4 * 2 / 30 = 2.4 -> 1 - (4/3)/2.4
    assert alpha(THREE, "interval") == 0.444444 and alpha(THREE, "ordinal") == 0.444444
    # all three units disagree by 2: D_o = 3 * 2 * 4 / 6 = 4 -> 1 - 4 / 2.4
    assert alpha([(1, -1)] * 3, "interval") == -0.666667
    # two values only is still defined: 1 x3, -1 x1, n = 4: D_o = 2 * 4 / 4 = 2, D_e = 3 * 1 * 4 * 2 / 12 = 2 -> 0
    assert alpha([(1, 1), (1, -1)], "interval") == 0.0 and alpha([(1, 1), (1, -1)], "ordinal") == 0.0
    # neither annotator labelled every unit, yet two units are pairable: (1, 2) and (2, 2); 1 x1, 2 x3:
    # D_o = 2 * 1 / 4, D_e = 1 * 3 * 1 * 2 / 12 -> 0
    assert alpha([(-3, 1), (1, -3), (1, 2), (2, 2)], "interval") == 0.0
    assert alpha([], "interval") is None
    # 17/24 = 0.7083333... rounded to 6 places
    assert alpha([(1, 1), (1, -1), (-1, -1), (-2, -2)], "interval") == 0.708333


def test_bootstrap_percentiles_over_chosen_resamples(monkeypatch):
    # resamples of THREE: [0,1,0] all agree (rate 0, alpha 1); [0,1,2] itself (1/3, 0.444444); [2,2,2] (1, -0.666667)
    out = _bootstrap(THREE, 3, Draws(3, [[0, 1, 0], [0, 1, 2], [2, 2, 2]]), monkeypatch)
    # numpy's linear percentile over 3 sorted values: 2.5 % at position 0.05, 97.5 % at position 1.95
    # rate: 0 + 0.05 * 1/3 = 0.016667; 1/3 + 0.95 * 2/3 = 0.966667
    # alpha: -0.666667 + 0.05 * 1.111111 = -0.611111; 0.444444 + 0.95 * 0.555556 = 0.972222
    assert out == {"n_boot": 3, "rate": [0.0167, 0.9667], "rate_resamples_defined": 3,
                   "alpha_ordinal": [-0.6111, 0.9722], "alpha_ordinal_resamples_defined": 3,
                   "alpha_interval": [-0.6111, 0.9722], "alpha_interval_resamples_defined": 3}
    # a resample where everyone says +1 has no alpha: only the defined ones enter the interval
    some = _bootstrap(THREE, 2, Draws(3, [[0, 0, 0], [0, 1, 2]]), monkeypatch)
    assert some["alpha_interval"] == [0.4444, 0.4444] and some["alpha_interval_resamples_defined"] == 1
    assert some["rate"] == [0.0083, 0.325]  # 0 + 0.025 * 1/3; 0 + 0.975 * 1/3
    none = _bootstrap([(1, 1), (1, 1)], 2, Draws(2, [[0, 1], [1, 1]]), monkeypatch)
    assert none == {"n_boot": 2, "rate": [0.0, 0.0], "rate_resamples_defined": 2, "alpha_ordinal": None,
                    "alpha_ordinal_resamples_defined": 0, "alpha_interval": None,
                    "alpha_interval_resamples_defined": 0}


def test_bootstrap_size_limits(monkeypatch):
    # two units and one resample are enough
    assert _bootstrap([(1, 1), (1, -1)], 1, Draws(2, [[0, 1]]), monkeypatch) == {
        "n_boot": 1, "rate": [0.5, 0.5], "rate_resamples_defined": 1, "alpha_ordinal": [0.0, 0.0],
        "alpha_ordinal_resamples_defined": 1, "alpha_interval": [0.0, 0.0], "alpha_interval_resamples_defined": 1}
    assert _bootstrap([(1, -1)], 5, Draws(1, []), monkeypatch) == {"n_boot": 0}  # one unit: no interval
    assert _bootstrap(THREE, 0, Draws(3, []), monkeypatch) == {"n_boot": 0}
    # the table's default is 1000 resamples (of the real generator)
    monkeypatch.undo()
    assert agreement_table({"readability": [(1, 1), (1, -1)]})["rows"]["readability"]["ci"]["n_boot"] == 1000


def test_table_bootstrap_seed_defaults_to_0():
    pairs = {"readability": [(1, 1), (1, -1), (-1, -1), (-2, -2)],
             "structure": [(-1, -1), (-1, -2), (2, 1), (0, -1), (-3, -1)]}
    default = agreement_table(pairs, n_boot=50)
    assert default == agreement_table(pairs, n_boot=50, seed=0)
    assert default != agreement_table(pairs, n_boot=50, seed=1)  # the seed does reach the resampling


def test_empty_table_and_six_place_rate():
    empty = agreement_table({}, n_boot=0)
    assert list(empty["rows"]) == ["overall"] and set(empty) == {"rows", "rules", "overall_is"}
    overall = empty["rows"]["overall"]
    assert (overall["units"], overall["disagreements"], overall["rate"], overall["alpha_ordinal"]) == (0, 0, None, None)
    row = agreement_table({"structure": THREE}, n_boot=0)["rows"]["structure"]
    assert (row["rate"], row["alpha_ordinal"], row["alpha_interval"], row["ci"]) == (0.333333, 0.444444, 0.444444,
                                                                                      {"n_boot": 0})


def test_render_table_row_with_intervals():
    distance = {"one_level": 0, "two_levels": 1, "three_levels": 0, "with_not_mentioned": 0, "with_unjudgeable": 0}
    table = {"rows": {
        "structure": {"units": 3, "disagreements": 1, "rate": 1 / 3, "alpha_ordinal": 0.444444, "alpha_interval": 0.5,
                      "distance": distance, "ci": {"rate": [0.0167, 0.9667], "alpha_ordinal": [-0.6111, 0.9722],
                                                   "alpha_interval": [0.1, 0.9]}},
        "overall": {"units": 3, "disagreements": 1, "rate": 1 / 3, "alpha_ordinal": None, "alpha_interval": None,
                    "distance": distance, "ci": {"n_boot": 0}}}}
    assert render_table(table, "A vs B") == (
        "### A vs B\n\n"
        "| Dimension | Units | Disagr. | Rate | KP-alpha ordinal | KP-alpha interval | 1 level | 2 levels | 3 levels "
        "| with 0 | with -3 |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
        "| Structure | 3 | 1 | 33.33% [1.67%, 96.67%] | 0.4444 [-0.6111, 0.9722] | 0.5000 [0.1000, 0.9000] "
        "| 0 | 1 | 0 | 0 | 0 |\n"
        "| Overall (pooled over dimensions) | 3 | 1 | 33.33% | n/a | n/a | 0 | 1 | 0 | 0 | 0 |\n")


def test_pair_labels_only_units_both_labelled():
    a = {("r1", "structure"): 1, ("r2", "structure"): 2, ("r4", "structure"): -1}
    b = {("r2", "structure"): 2, ("r3", "structure"): 1, ("r4", "structure"): -2}
    assert pair_labels(a, b) == {"structure": [(2, 2), (-1, -2)]}
    assert pair_labels(a, b, units=[("r4", "structure"), ("r3", "structure"), ("r1", "structure")]) == {
        "structure": [(-1, -2)]}


def test_sample_size_limit_default_seed_and_missing_annotator():
    units = [(f"r{i}", d) for i in range(40) for d in ("readability", "structure")]
    one = sample_units(units, n=1)
    assert len(one) == 2 and {u[1] for u in one} == {"readability", "structure"}
    assert sample_units(units, n=5) == sample_units(units, n=5, seed=0)
    with pytest.raises(ValueError, match="^sample size must be >= 1, got 0$"):
        sample_units(units, n=0)
    labels = unit_labels([{"review_id": "r1", "dimensions": {"structure": {"label": 1}}}])
    assert labels == {("r1", "structure"): {"?": 1}}
