"""Resume against the real `surveyalign serve` app over the tiny model (not the fake server): an outage mid-run
leaves api_error calls, the resumed run makes exactly those again, a third run makes none."""

from __future__ import annotations

import json

from surveyalign.evaluation import CallCache, EvalConfig, run_evaluation


class _Outage:
    """Counts the prompts the served model generates for, and fails every batch after the first ``ok`` prompts
    (the server answers those requests with HTTP 500) while ``ok`` is set."""

    def __init__(self, backend) -> None:
        self.inner = backend.generate_detailed
        self.prompts = 0
        self.ok: int | None = None
        backend.generate_detailed = self

    def __call__(self, prompts, settings=None, n=1, seeds=None):
        if self.ok is not None and self.prompts + len(prompts) > self.ok:
            raise RuntimeError("scripted outage")
        self.prompts += len(prompts)
        return self.inner(prompts, settings, n, seeds=seeds)


def test_outage_then_resume_against_served_tiny_model(tiny_model_dir, dataset_dir, tmp_path):
    from surveyalign.backends.server import serve_in_thread

    with serve_in_thread(model=str(tiny_model_dir), device="cpu") as server:
        outage = _Outage(server.backend)
        cfg = EvalConfig.from_dict({
            "name": "served", "dataset": str(dataset_dir), "output_dir": str(tmp_path), "progress": False,
            "bootstrap": 0, "limit": 2, "concurrency": 1,
            "backend": {"kind": "openai", "options": {"base_url": server.base_url, "model": server.model,
                                                      "api_key_env": None, "max_retries": 0,
                                                      "send_chat_template_kwargs": True}},
            "generation": {"max_new_tokens": 8},
        })
        outage.ok = 5
        first = run_evaluation(cfg)
        assert (first.calls["made"], first.calls["errors"], first.counts["api_error"]) == (8, 3, 3)
        assert outage.prompts == 5
        failed = sorted(p["unit_id"] for p in first.predictions if p["status"] == "api_error")
        assert all("HTTP 500" in p["error"] and "scripted outage" in p["error"]
                   for p in first.predictions if p["status"] == "api_error")

        outage.ok = None
        second = run_evaluation(cfg)
        assert (second.calls["made"], second.calls["cached"], second.calls["errors"]) == (3, 5, 0)
        assert outage.prompts == 8  # exactly the three failed calls were sent again
        assert second.counts["api_error"] == 0 and second.counts["total"] == 8
        before = {p["unit_id"]: p for p in first.predictions}
        for p in second.predictions:
            if p["unit_id"] not in failed:
                assert p["samples"] == before[p["unit_id"]]["samples"]  # reused, not regenerated

        third = run_evaluation(cfg)
        assert (third.calls["made"], third.calls["cached"]) == (0, 8) and outage.prompts == 8
    assert third.predictions == second.predictions
    cache = CallCache.load(second.run_dir / "calls.jsonl")
    assert cache.n_lines == 11 and len(cache.records) == 8  # 8 first answers + 3 retried ones, last one wins
    errors = [json.loads(line)["error"] for line in (second.run_dir / "calls.jsonl").read_text().splitlines()]
    assert sum(e is not None for e in errors) == 3
