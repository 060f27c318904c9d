"""What a backend can do is said by its class (``Backend`` capability attributes), asked through
``backend_capabilities(kind)``: a served backend registered in ``BACKENDS`` takes the served path of a ``score``
judge, of the evaluation and of the report without edits outside ``surveyalign/backends``."""

from __future__ import annotations

import pytest
import yaml

from surveyalign.backends import (
    BACKENDS,
    Backend,
    GenerationSettings,
    backend_capabilities,
    load_backend,
    score_judge_kinds,
)
from surveyalign.backends.openai_api import OpenAIBackend
from surveyalign.backends.simple import ScriptedBackend
from surveyalign.calls.executor import Call, run_calls
from surveyalign.calls.spend import engine_gpus
from surveyalign.inference.spec import build_dimension_backends, load_judge_spec
from surveyalign.scoring.judge_info import judge_ran
from surveyalign.testing import FakeChatServer

KINDS = ("openai", "anthropic", "transformers", "vllm", "constant", "scripted", "ray")


class StandInServed(OpenAIBackend):
    """A new OpenAI-compatible served backend, known to no code outside ``surveyalign/backends``."""

    name = "standin-served"


@pytest.fixture
def standin(monkeypatch):
    monkeypatch.setitem(BACKENDS, "standin-served", f"{__name__}:StandInServed")
    return "standin-served"


def test_each_kind_says_what_it_can_do():
    caps = {kind: backend_capabilities(kind) for kind in KINDS}
    assert sorted(k for k, c in caps.items() if c.local_engine) == ["ray", "transformers", "vllm"]
    assert sorted(k for k, c in caps.items() if c.serves_adapters_by_name) == ["anthropic", "openai"]
    assert sorted(k for k, c in caps.items() if not c.answers_from_model) == ["constant", "scripted"]
    assert sorted(k for k, c in caps.items() if c.takes_protocol) == ["constant"]
    assert sorted(k for k, c in caps.items() if c.shares_prefill) == ["vllm"]
    assert sorted(k for k, c in caps.items() if c.greedy_reads_prompt_once) == ["transformers"]
    assert {k: c.default_batch_size for k, c in caps.items()} == {k: 256 if k == "vllm" else 8 for k in KINDS}
    assert score_judge_kinds() == ("transformers", "vllm", "openai")  # the refusal message's order
    # a kind this install does not know (a server named in an older run's record): the base defaults
    assert backend_capabilities("sglang") is Backend and backend_capabilities(None) is Backend
    assert not Backend.local_engine and not Backend.serves_adapters_by_name and Backend.answers_from_model


def test_a_registered_served_backend_takes_the_served_judge_path(standin, tmp_path):
    assert score_judge_kinds() == ("transformers", "vllm", "openai", "standin-served")
    (tmp_path / "readability").mkdir()  # a folder named like the adapter: a served judge never resolves it
    with FakeChatServer(replies=["Clear prose.$$$4$$$"]) as server:
        config = tmp_path / "judge.yaml"
        config.write_text(yaml.safe_dump({
            "name": "standin", "samples": 1,
            "backend": {"kind": standin, "options": {"model": "base-32b", "base_url": server.base_url},
                        "per_dimension": {"readability": {"model": "readability"}}}}), encoding="utf-8")
        spec = load_judge_spec(config)
        assert spec.served and spec.adapters == {"readability": "readability"}  # a model id, not tmp_path/...
        owner, per_dim = build_dimension_backends(spec.model_copy(update={"dimensions": ["readability",
                                                                                         "structure"]}))
        try:
            assert type(owner) is StandInServed and owner.model == "base-32b"
            assert per_dim["readability"].model == "readability" and per_dim["structure"] is owner
            [[answer]] = per_dim["readability"].generate([[{"role": "user", "content": "Rate it."}]])
            assert answer.text == "Clear prose.$$$4$$$"
            assert [r["model"] for r in server.requests] == ["readability"]  # the adapter asked by its name
            assert engine_gpus(owner) == 0  # served: a token price, no GPU of ours
            desc = {"readability": per_dim["readability"].describe(), "structure": owner.describe()}
        finally:
            for backend in {id(b): b for b in (owner, *per_dim.values())}.values():
                backend.close()
    # the report names what answered: served models, no base folder + adapter
    ran = judge_ran({"name": "standin", "backend": {"kind": standin, "per_dimension": desc}})
    assert ran["line"] == (f"Judge standin (standin-served at {server.base_url}; served models: "
                           "readability=readability, structure=base-32b)")


def test_a_registered_served_backend_refuses_local_engine_flags(standin, tmp_path, capsys):
    from surveyalign.cli import main

    config = tmp_path / "judge.yaml"
    config.write_text(yaml.safe_dump({"name": "j", "backend": {"kind": standin, "options": {"model": "m"}}}),
                      encoding="utf-8")
    survey = tmp_path / "s.md"
    survey.write_text("# A survey\n\nText.\n", encoding="utf-8")
    code = main(["score", str(survey), "--judge", str(config), "--out", str(tmp_path / "o"), "--quantization", "4bit"])
    assert code == 2
    assert ("--quantization: only for local judges (transformers, vllm); this judge's backend is standin-served"
            in capsys.readouterr().err)


class StandInBatcher(ScriptedBackend):
    """A registered kind that takes 64 prompts per generate() call unless told otherwise."""

    name = "standin-batcher"
    default_batch_size = 64


def _call(backend, i: int) -> Call:
    messages = [{"role": "user", "content": f"prompt {i}"}]
    return Call(key=f"k{i}", stage="judge", unit_id=f"u{i}", namespace="readability", sample=0, messages=messages,
                messages_hash=f"h{i}", settings=GenerationSettings(), backend=backend)


def test_a_call_group_falls_back_to_its_kinds_batch_size(monkeypatch):
    monkeypatch.setitem(BACKENDS, "standin-batcher", f"{__name__}:StandInBatcher")
    sizes: dict[str, list[int]] = {"scripted": [], "standin-batcher": []}

    def counted(backend):
        generate = backend.generate

        def record(prompts, settings=None, n=1):
            sizes[backend.name].append(len(prompts))
            return generate(prompts, settings, n)
        backend.generate = record
        return backend

    scripted = counted(load_backend("scripted", replies=["x"], cycle=True))
    batcher = counted(load_backend("standin-batcher", replies=["x"], cycle=True))
    calls = [_call(scripted, i) for i in range(10)] + [_call(batcher, 100 + i) for i in range(70)]
    answered = []
    run_calls(calls, lambda call, generation, seconds: answered.append(generation.text))
    assert answered == ["x"] * 80
    assert sizes == {"scripted": [8, 2], "standin-batcher": [64, 6]}  # the kind's own default (8: the base's)
    sizes["standin-batcher"].clear()
    run_calls(calls[10:], lambda *_: None, batch_size=30)
    assert sizes["standin-batcher"] == [30, 30, 10]  # the run's batch_size wins
