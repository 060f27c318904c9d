"""Shared fixtures: offline environment, the tiny Qwen3 model, paths to shipped resources."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

for _var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# The whole session writes its Hugging Face caches (datasets, evaluate modules, hub) into one temporary folder,
# never into the user's: set before any test module imports datasets/evaluate (they read these at import).
_HF_HOME = tempfile.mkdtemp(prefix="surveyalign-tests-hf-")
os.environ["HF_HOME"] = _HF_HOME
os.environ["HF_DATASETS_CACHE"] = os.path.join(_HF_HOME, "datasets")
os.environ["HF_MODULES_CACHE"] = os.path.join(_HF_HOME, "modules")
atexit.register(shutil.rmtree, _HF_HOME, True)

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_REAL = REPO_ROOT.parent / "shared" / "real"


def pytest_collection_modifyitems(config, items):
    """Tests marked ``late`` run after all the others, in their own order (the Label Studio round trip: in CI
    ``.ci/run`` prepares its environment in the background while the rest of the suite runs)."""
    items[:] = sorted(items, key=lambda item: item.get_closest_marker("late") is not None)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root (where configs/, recipes/ and metrics/ live)."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A tiny random Qwen3 model + locally trained tokenizer, built once per test session."""
    from surveyalign.testing import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-qwen3"))


@pytest.fixture(scope="session")
def dataset_dir(tmp_path_factory) -> Path:
    """The shipped made-up sample release built once per session into ``.../data/surveyreview`` (layout: ``surveyalign/data/schema.py``).

    Shared read-only by the evaluation, training and report tests; a test that changes a dataset builds its own.
    """
    from surveyalign.data import build_dataset, sample_release_dir

    out = tmp_path_factory.mktemp("data") / "surveyreview"
    build_dataset(sample_release_dir(), out)
    return out


@pytest.fixture(scope="session")
def ka_dataset_dir(dataset_dir, tmp_path_factory) -> Path:
    """``dataset_dir`` with the ``knowledge`` column (``surveyalign ka build``, SurveyReview App. F), built once per
    session into ``.../data/surveyreview-ka``: Comp-KA from the sample citation graph (at most 60 whitespace
    tokens), Crit-KA from a scripted summariser that answers one fixed sentence. What the KA-trained configs
    (``use_knowledge: true``) train on; read-only, like ``dataset_dir``."""
    from surveyalign.backends import load_backend
    from surveyalign.knowledge import KAConfig, build_ka_dataset, sample_graph

    out = tmp_path_factory.mktemp("data-ka") / "surveyreview-ka"
    build_ka_dataset(dataset_dir, sample_graph(dataset_dir), out,
                     KAConfig(tokenizer="whitespace", dimensions=["comprehensiveness", "criticalness"],
                              comp_max_tokens=60, block_tokens=64, summary_tokens=16, length=32),
                     backend=load_backend("scripted", replies=lambda m, s, i: "Later work favours graph transformers."),
                     progress=False)
    return out


@pytest.fixture(scope="session")
def shared_real() -> Path:
    """../shared/real (real third-party inputs); tests using it skip when it is absent."""
    if not SHARED_REAL.is_dir():
        pytest.skip("the real inputs beside the repository (../shared/real, third-party files kept for development) are not here; a clone of the project has none, nothing to install")
    return SHARED_REAL


@pytest.fixture(scope="session")
def tiny_adapters(tiny_model_dir, tmp_path_factory) -> dict[str, Path]:
    """Four LoRA adapters on the tiny model, one per dimension, each answering its fixed judgement
    (``tests/tiny_adapters.py`` ANSWERS); trained once per session (a few seconds each)."""
    from tiny_adapters import ANSWERS, train_constant_adapter

    root = tmp_path_factory.mktemp("tiny-adapters")
    return {dim: train_constant_adapter(tiny_model_dir, root / dim, dim, seed=i)
            for i, dim in enumerate(ANSWERS)}


@pytest.fixture
def far_east(monkeypatch):
    """The machine's clock set to UTC+14 (POSIX TZ string: no time-zone database needed); restored afterwards."""
    import time

    monkeypatch.setenv("TZ", "XYZ-14")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def tqdm_thread_lock(monkeypatch):
    """tqdm's default write lock holds a multiprocessing lock shared across fork(), and its monitor thread takes it
    every 10 s: a process forked from this one (mutmut forks one per mutant) can inherit it held and block on the
    first progress bar. The test gets a thread lock of its own and no monitor thread (``usefixtures``)."""
    import threading

    from surveyalign.calls import executor

    monkeypatch.setattr(executor.tqdm, "_lock", threading.RLock(), raising=False)
    monkeypatch.setattr(executor.tqdm, "monitor_interval", 0)


@pytest.fixture
def ascii_locale(monkeypatch):
    """A machine whose locale encoding is ASCII (``io.text_encoding`` answers "ascii" for an unnamed encoding):
    files written and read by the code under test must be UTF-8 all the same."""
    import io

    monkeypatch.setattr(io, "text_encoding", lambda encoding, stacklevel=2: "ascii" if encoding is None else encoding)
