"""Resume against the real `surveyalign serve` app over the tiny model (not the fake server): an outage mid-run
leaves api_error calls, the resumed run makes exactly those again, a third run makes none."""

from __future__ import annotations

import json

from surveyalign.calls import CallCache
from surveyalign.evaluation import EvalConfig, run_evaluation


class _Outage:
    """Counts the prompts the served model generates for, and fails every batch after the first ``ok`` prompts
    (the server answers those requests with HTTP 500) while ``ok`` is set."""

    def __init__(self, backend) -> None:
        self.inner = backend.generate_detailed
        self.prompts = 0
        self.ok: int | None = None
        backend.generate_detailed = self

    def __call__(self, prompts, settings=None, n=1, seeds=None, **kwargs):  # kwargs: e.g. the server's `cancelled`
        if self.ok is not None and self.prompts + len(prompts) > self.ok:
            raise RuntimeError("scripted outage")
        self.prompts += len(prompts)
        return self.inner(prompts, settings, n, seeds=seeds, **kwargs)


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
        assert all("HTTP 500" in p["error"] and "scripted outage" in p["error"]
                   for p in first.predictions if p["status"] == "api_error")

        outage.ok = None
        # the three failed calls are sent again, and so are the answers that could not be read (truncated at 8
        # tokens: issue 21 C, a failed answer is never replayed from the cache)
        pf1 = first.counts["parse_failed"]
        second = run_evaluation(cfg)
        assert (second.calls["made"], second.calls["cached"], second.calls["errors"]) == (3 + pf1, 5 - pf1, 0)
        assert outage.prompts == 8 + pf1
        assert second.counts["api_error"] == 0 and second.counts["total"] == 8
        before = {p["unit_id"]: p for p in first.predictions}
        for p in second.predictions:
            if before[p["unit_id"]]["status"] == "scored":
                assert p["samples"] == before[p["unit_id"]]["samples"]  # reused, not regenerated

        pf2 = second.counts["parse_failed"]
        third = run_evaluation(cfg)
        assert (third.calls["made"], third.calls["cached"]) == (pf2, 8 - pf2) and outage.prompts == 8 + pf1 + pf2
        kept = run_evaluation(cfg.model_copy(update={"retry_errors": False}))  # the explicit flag: nothing asked
        assert (kept.calls["made"], kept.calls["cached"]) == (0, 8) and outage.prompts == 8 + pf1 + pf2
    assert third.predictions == second.predictions  # greedy answers: the same text when asked again
    cache = CallCache.load(second.run_dir / "calls.jsonl")
    assert cache.n_lines == 8 + 3 + pf1 + pf2 and len(cache.records) == 8  # every answer kept, last one wins
    errors = [json.loads(line)["error"] for line in (second.run_dir / "calls.jsonl").read_text().splitlines()]
    assert sum(e is not None for e in errors) == 3


def test_retrained_adapter_behind_the_same_server_is_not_served_from_the_cache(tiny_model_dir, dataset_dir,
                                                                              tmp_path):
    """Same URL, same served name, adapter weights changed in place and the server restarted: the openai
    backend's identity carries the server's fingerprint, so the resumed evaluation makes its calls again."""
    import torch
    from peft import LoraConfig, get_peft_model
    from safetensors.torch import load_file, save_file
    from transformers import AutoModelForCausalLM

    from surveyalign.backends.fingerprint import served_fingerprint
    from surveyalign.backends.server import serve_in_thread

    torch.manual_seed(0)
    adapter = tmp_path / "judge-adapter"
    get_peft_model(AutoModelForCausalLM.from_pretrained(tiny_model_dir),
                   LoraConfig(r=4, lora_alpha=32, target_modules=["q_proj", "v_proj"], init_lora_weights=False,
                              task_type="CAUSAL_LM")).save_pretrained(adapter)

    def config(base_url: str) -> EvalConfig:
        return EvalConfig.from_dict({
            "name": "served-adapter", "dataset": str(dataset_dir), "output_dir": str(tmp_path / "runs"),
            "progress": False, "bootstrap": 0, "limit": 2, "dimensions": ["readability"],
            "backend": {"kind": "openai", "options": {"base_url": base_url, "model": "judge-adapter",
                                                      "api_key_env": None, "max_retries": 0}},
            "generation": {"max_new_tokens": 4},
            "retry_errors": False,  # keep the tiny model's unreadable answers: this test is about cache identity
        })

    def described(result) -> dict:
        backend = json.loads((result.run_dir / "run_config.json").read_text())["backend"]
        return backend.get("per_dimension", {}).get("readability", backend)

    with serve_in_thread(model=str(tiny_model_dir), adapter=str(adapter), device="cpu") as server:
        port, url = server.port, server.base_url
        old = served_fingerprint(server.backend.describe())
        first = run_evaluation(config(url))
        again = run_evaluation(config(url))
    assert (first.calls["made"], first.calls["cached"]) == (2, 0)
    assert (again.calls["made"], again.calls["cached"]) == (0, 2)
    assert described(first)["server_fingerprint"] == old

    weights = adapter / "adapter_model.safetensors"
    save_file({k: v + 0.5 * torch.ones_like(v) for k, v in load_file(str(weights)).items()}, str(weights))
    with serve_in_thread(model=str(tiny_model_dir), adapter=str(adapter), device="cpu", port=port) as server:
        assert server.base_url == url and server.model == "judge-adapter"
        new = served_fingerprint(server.backend.describe())
        retrained = run_evaluation(config(url))
    assert new != old
    assert (retrained.calls["made"], retrained.calls["cached"]) == (2, 0)
    assert retrained.run_dir == first.run_dir
    before, after = described(first), described(retrained)
    assert after["server_fingerprint"] == new
    assert {k: v for k, v in after.items() if k != "server_fingerprint"} == \
        {k: v for k, v in before.items() if k != "server_fingerprint"}
    cache = CallCache.load(first.run_dir / "calls.jsonl")
    assert cache.n_lines == 4 and len(cache.records) == 4  # two keys per fingerprint, none overwritten
