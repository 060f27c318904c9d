"""One cell format for per-paper aggregates (PRISM --corpus and surveyalign systems tables)."""

from surveyalign.scoring import aggregate_cell


def test_aggregate_cell_names_interval_and_counts():
    assert aggregate_cell(None) == "n/a"
    assert aggregate_cell({"mean": 0.41234, "ci95": [0.3, 0.52], "n_papers": 12, "n_missing": 1, "n_absent": 0}) == \
        "0.412 [0.300, 0.520] (n=12, missing 1)"
    assert aggregate_cell({"mean": None, "ci95": None, "n_papers": 0, "n_missing": 0, "n_absent": 3}) == \
        "- (n=0, absent 3)"
