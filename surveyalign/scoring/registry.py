"""Make the bare names ``evaluate.load("has")`` (and ``"ssr"``, its other name), ``"rqs"``, ``"survey_alignment"``
resolve offline.

How ``evaluate`` 0.4.x resolves a bare name (``evaluate/loading.py``, ``evaluation_module_factory``):
a folder ``./<name>/<name>.py`` in the working directory first; otherwise the Hub
(``evaluate-metric/<name>``), which fails at once when ``HF_EVALUATE_OFFLINE=1``; then the *module
cache* ``$HF_MODULES_CACHE/evaluate_modules/metrics/evaluate-metric--<name>/<64-hex hash>/<name>.py``
(``CachedEvaluationModuleFactory``; the most recently modified hash wins). :func:`register_metrics`
writes our modules into that cache layout, exactly as the Hub path would after a download, so the
real loader finds them with no network call.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from surveyalign.paths import resource_path

__all__ = ["METRIC_NAMES", "default_metrics_dir", "register_metrics"]

#: The evaluate modules shipped in the repository's ``metrics/`` folder.
METRIC_NAMES: tuple[str, ...] = ("survey_alignment", "rqs", "has", "ssr", "prism", "citation_f1")


def default_metrics_dir() -> Path:
    """The shipped evaluate modules: the repository's ``metrics/`` folder, package data of every install."""
    return resource_path("metrics")


def _source_root(source: str | os.PathLike | None) -> Path:
    """The folder to copy modules from; raises FileNotFoundError with the fix when it is missing."""
    if source is not None:
        root = Path(source)
        if not root.is_dir():
            raise FileNotFoundError(f"--source {root} is not a folder (it must hold <name>/<name>.py)")
        return root
    return default_metrics_dir()


def _modules_cache(cache_dir: str | os.PathLike | None) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("HF_MODULES_CACHE")
    if env:
        return Path(env)
    from evaluate import config

    return Path(config.HF_MODULES_CACHE)


def _touch_init(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").touch(exist_ok=True)


def register_metrics(
    cache_dir: str | os.PathLike | None = None,
    *,
    source: str | os.PathLike | None = None,
    names: tuple[str, ...] | list[str] | None = None,
) -> dict[str, Path]:
    """Copy the metric modules into evaluate's module cache so bare names load offline.

    Args:
        cache_dir: the ``HF_MODULES_CACHE`` folder to write to; default: ``$HF_MODULES_CACHE`` or
            evaluate's default (``~/.cache/huggingface/modules``). Bare names resolve only in processes
            that use the same ``HF_MODULES_CACHE``.
        source: folder holding ``<name>/<name>.py`` (default: the shipped ``metrics/``).
        names: which modules (default: :data:`METRIC_NAMES`).

    Returns:
        ``{name: path of the registered <name>.py}``.

    Raises:
        FileNotFoundError: naming the missing ``<source>/<name>/<name>.py``.
    """
    src_root = _source_root(source)
    cache = _modules_cache(cache_dir)
    dynamic = cache / "evaluate_modules"  # evaluate.config.MODULE_NAME_FOR_DYNAMIC_MODULES
    out: dict[str, Path] = {}
    for name in names or METRIC_NAMES:
        script = src_root / name / f"{name}.py"
        if not script.is_file():
            raise FileNotFoundError(f"metric module not found: {script} (the source folder must hold <name>/<name>.py)")
        digest = hashlib.sha256(script.read_bytes()).hexdigest()  # 64 hex: what the cache lookup expects
        _touch_init(cache)
        _touch_init(dynamic)
        _touch_init(dynamic / "metrics")
        module_dir = dynamic / "metrics" / f"evaluate-metric--{name}"
        _touch_init(module_dir)
        target_dir = module_dir / digest
        _touch_init(target_dir)
        target = target_dir / f"{name}.py"
        shutil.copyfile(script, target)  # fresh mtime: the newest registration wins the cache lookup
        for extra in (script.parent / "README.md",):
            if extra.is_file():
                shutil.copyfile(extra, target_dir / extra.name)
        out[name] = target
    return out
