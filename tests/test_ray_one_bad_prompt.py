"""One prompt that makes the engine raise fails only its own unit on the Ray engine (surveyalign/backends/
ray_backend.py): the worker runs the prompts of a failed batch one by one, so the others of the same worker call
are answered. The worker body on its own (no Ray), then through a local Ray instance on CPU with the tiny model on
the ``agenerate`` path ``evaluate`` uses (slow: a local Ray instance starts in 30-120 s on a loaded machine)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("ray", reason="Ray is not installed: pip install -e .[ray]")

from surveyalign.backends import GenerationSettings, load_backend
from surveyalign.backends.ray_backend import _EngineWorker

GOOD = [{"role": "user", "content": "rate this survey"}]
BAD = [{"role": "user", "content": 5}]  # the tiny model's chat template cannot join an int: the engine raises


def test_the_worker_fails_only_the_prompt_that_raised(tiny_model_dir):
    worker = _EngineWorker("transformers", {"model": str(tiny_model_dir), "device": "cpu"})
    settings = GenerationSettings(seed=1, temperature=0.7, max_new_tokens=3).model_dump()
    out = worker.generate([GOOD, BAD, GOOD], settings, 2)
    assert [[g.error is None for g in row] for row in out] == [[True, True], [False, False], [True, True]]
    assert out[1][0].error.startswith("engine error on this prompt: TypeError: can only concatenate str")
    alone = worker.generate([GOOD], settings, 2)  # the others' answers are those of a batch without the bad one
    assert [g.text for g in out[0]] == [g.text for g in alone[0]]
    with pytest.raises(TypeError, match="can only concatenate str"):  # nothing answerable: the error as it is
        worker.generate([BAD, BAD], settings, 1)
    with pytest.raises(TypeError, match="can only concatenate str"):
        worker.generate([BAD], settings, 1)


@pytest.mark.slow
def test_one_failing_prompt_fails_one_unit_through_ray(tiny_model_dir):
    backend = load_backend("ray", model=str(tiny_model_dir), workers=1, engine="transformers", batch_size=6,
                           engine_options={"device": "cpu"})
    try:
        settings = GenerationSettings(seed=3, temperature=0.7, max_new_tokens=4)

        async def six_units():  # issued together: one worker call holds all six
            prompts = [BAD if unit == 2 else GOOD for unit in range(6)]
            return await asyncio.gather(*(backend.agenerate([p], settings, 1) for p in prompts))

        out = asyncio.run(six_units())
    finally:
        backend.close()
    errors = [row[0][0].error for row in out]
    assert [e is None for e in errors] == [True, True, False, True, True, True]  # 1 of 6 failed, not 6 of 6
    assert errors[2].startswith("engine error on this prompt: TypeError")
    assert all(row[0][0].text for i, row in enumerate(out) if i != 2)
