"""The judge of an evaluation run from its config: one backend per distinct option set, one Judge over them.

Per-dimension backend options give one backend each and dimensions with the same options share one; when the
dimensions differ only in their LoRA adapter (SurveyReview §5), the base is loaded once with every adapter
(``adapters={dimension: folder}``) and each dimension is judged by its adapter's view. The judge gets each dimension's length budget (config
``max_length``, else the adapter's training record) and the tokenizer that counts prompt tokens.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from surveyalign.backends import Backend, BackendConfig, backend_capabilities, load_backend
from surveyalign.calls import stable_hash
from surveyalign.evaluation.adapters import max_length_for
from surveyalign.evaluation.config import EvalConfig
from surveyalign.judge import DimensionOptions, Judge

__all__ = ["build_backends", "build_judge", "close_backend"]

_log = logging.getLogger(__name__)


def build_backends(cfg: BackendConfig, dimensions: Sequence[str | None], protocol: str | None = None
                   ) -> tuple[dict[str, Backend], dict[str | None, str]]:
    """One backend per distinct option set.

    Args:
        cfg: the backend config.
        dimensions: the dimensions judged (``[None]``: the shared options only, e.g. the RQS judge).
        protocol: the run's protocol, given to the constant baseline unless its options name one.

    Returns:
        ``(group -> backend, dimension -> group)``; the first group is ``"shared"``.

    Raises:
        ValueError: invalid backend options (naming the dimension when per-dimension options are at fault).
    """
    shared_base = _one_base_adapters(cfg, dimensions)
    if shared_base is not None:
        return shared_base
    groups: dict[str, Backend] = {}
    of_dim: dict[str | None, str] = {}
    by_options: dict[str, str] = {}
    for dim in dimensions:
        options = cfg.options_for(dim)
        if protocol is not None and backend_capabilities(cfg.kind).takes_protocol:
            options.setdefault("protocol", protocol)
        h = stable_hash(options)
        if h not in by_options:
            group = "shared" if not by_options else f"g{len(by_options)}"
            by_options[h] = group
            try:
                groups[group] = load_backend(cfg.kind, **options)
            except TypeError as err:
                raise ValueError(f"backend {cfg.kind!r}: invalid options {sorted(options)}: {err}") from None
            except ValueError as err:
                where = f" (dimension {dim})" if dim is not None and dim in cfg.per_dimension else ""
                raise ValueError(f"backend{where}: {err}") from None
        of_dim[dim] = by_options[h]
    return groups, of_dim


def _one_base_adapters(cfg: BackendConfig, dimensions: Sequence[str | None]
                       ) -> tuple[dict[str, Backend], dict[str | None, str]] | None:
    """Dimensions that differ only in their LoRA adapter share one loaded base (SurveyReview §5: one adapter per
    dimension on one base): one local engine (transformers / vLLM / Ray: ``local_engine``) with ``adapters={dimension: folder}``, each dimension
    judged by its adapter's view. ``None`` when that does not apply (other kinds, other differing options, fewer
    than two distinct adapters)."""
    if not backend_capabilities(cfg.kind).local_engine:
        return None
    dims = [d for d in dimensions if d is not None]
    per = {d: cfg.options_for(d) for d in dims}
    rest = {stable_hash({k: v for k, v in o.items() if k not in ("adapter", "merge_adapter")}) for o in per.values()}
    adapters = {d: str(o["adapter"]) for d, o in per.items() if o.get("adapter")}
    if len(rest) != 1 or len(set(adapters.values())) < 2:
        return None
    options = {k: v for k, v in next(iter(per.values())).items() if k not in ("adapter", "merge_adapter")}
    try:
        owner = load_backend(cfg.kind, **options, adapters=adapters)
    except (TypeError, ValueError) as err:
        raise ValueError(f"backend {cfg.kind!r} with one adapter per dimension: {err}") from None
    groups: dict[str, Backend] = {"shared": owner, **{d: owner.adapter_view(d) for d in adapters}}
    of_dim: dict[str | None, str] = {d: d if d in adapters else "shared" for d in dims}
    if None in dimensions:
        of_dim[None] = "shared"
    return groups, of_dim


def build_judge(config: EvalConfig, given: Backend | None
                ) -> tuple[Judge, dict[str, Backend], dict[str | None, str], dict[str, str | None]]:
    """The run's :class:`surveyalign.judge.Judge`.

    Args:
        config: the run configuration.
        given: a backend to use for every dimension instead of building ``config.backend`` (not closed here).

    Returns:
        ``(judge, group -> backend, dimension -> group, dimension -> source of its max_length)``; the backends
        built here are the caller's to close (:func:`close_backend`).

    Raises:
        ValueError: invalid backend options; ``config.tokenizer`` cannot be loaded.
    """
    if given is not None:
        groups, of_dim = {"shared": given}, {d: "shared" for d in config.dimensions}
    else:
        groups, of_dim = build_backends(config.backend, config.dimensions, config.protocol)
    options: dict[str, DimensionOptions] = {}
    sources: dict[str, str | None] = {}
    for dim in config.dimensions:
        budget, sources[dim] = max_length_for(config, dim, given)
        options[dim] = DimensionOptions(max_length=budget, tokenizer=config.tokenizer, backend=groups[of_dim[dim]])
    judge = Judge(groups["shared"], protocol=config.protocol, settings=config.generation, dimensions=options,
                  concurrency=config.concurrency, batch_size=config.batch_size, layout=config.layout)
    if config.tokenizer:
        try:
            judge.tokenizer_for(config.dimensions[0])  # loaded once, now: a bad folder fails before any call
        except ValueError as err:
            raise ValueError(f"{err} (config key: tokenizer)") from None
    return judge, groups, of_dim, sources


def close_backend(backend: Any) -> None:
    """Close a backend; a failure to close must not mask the run's outcome (it is only logged)."""
    close = getattr(backend, "close", None)
    if callable(close):
        try:
            close()
        except Exception as err:  # noqa: BLE001
            _log.debug("closing %s failed: %s", type(backend).__name__, err)
