"""`surveyalign evaluate` with one adapter per dimension: one base loaded, each dimension judged by its adapter."""

from __future__ import annotations

from tiny_adapters import ANSWERS

from surveyalign.evaluation import EvalConfig, run_evaluation


def test_per_dimension_adapters_share_one_base(dataset_dir, tiny_model_dir, tiny_adapters, tmp_path, monkeypatch):
    from surveyalign.backends import adapters as adapters_module

    loads = []
    original = adapters_module.load_adapters

    def counting(base, adapters):
        loads.append(dict(adapters))
        return original(base, adapters)

    monkeypatch.setattr("surveyalign.backends.hf.load_adapters", counting)
    dims = ["readability", "structure"]
    config = EvalConfig.from_dict({
        "name": "multi", "dataset": str(dataset_dir), "output_dir": str(tmp_path), "progress": False,
        "bootstrap": 0, "dimensions": dims, "limit": 2, "samples_per_unit": 3,
        "generation": {"max_new_tokens": 24, "temperature": 0.7, "seed": 4},
        "backend": {"kind": "transformers", "options": {"model": str(tiny_model_dir), "device": "cpu"},
                    "per_dimension": {d: {"adapter": str(tiny_adapters[d])} for d in dims}}})
    result = run_evaluation(config)
    assert loads == [{d: str(tiny_adapters[d]) for d in dims}]  # one base, both adapters loaded on it once
    by_dim = {d: [p for p in result.predictions if p["dimension"] == d] for d in dims}
    for dim in dims:
        assert by_dim[dim] and all(p["prediction"] == ANSWERS[dim][1] for p in by_dim[dim]), dim
    assert result.metrics["voting"]["per_dimension"]["readability"]["n_units"] == len(by_dim["readability"])
    # issue 21 B: the header names the judge that ran: the base folder and each dimension's adapter folder
    assert result.metrics["judge"]["line"] == (
        f"Judge multi (transformers; base {tiny_model_dir}; adapters: readability={tiny_adapters['readability']}, "
        f"structure={tiny_adapters['structure']})")
