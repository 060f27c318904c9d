"""PaperOrchestra citation F1 over P0/P1 partitions of resolved reference ids, as an `evaluate` metric.

A thin wrapper over :func:`surveyalign.autoraters.citation_f1_by_pair` (PaperOrchestra §5, App. F.3); the
variant is the config name: "seed" (default) or "official".
"""

import datasets
import evaluate

from surveyalign.autoraters import CITATION_F1_VARIANTS, citation_f1_by_pair

_CITATION = """\
@article{paperorchestra2026,
  title   = {PaperOrchestra},
  author  = {Song and others},
  journal = {arXiv preprint arXiv:2604.05018},
  year    = {2026}
}
"""

_DESCRIPTION = """\
Citation F1 of PaperOrchestra: how well a generated paper's references match those of its ground-truth paper,
with every reference resolved to a paper id (e.g. a Semantic Scholar paperId) and labelled P0 (must cite:
compared baselines, used datasets, methods built on, relied-on metrics) or P1 (good to have) by an LLM.
Config "seed" (the paper's description): both papers are partitioned; P0, P1 and overall (P0 | P1) precision =
|GT & Gen| / |Gen|, recall = |GT & Gen| / |GT|, F1 = 2PR / (P + R). Config "official" (the released code): only
the ground truth is partitioned (unlabelled counts as P1, an id under both labels as P0); overall P/R/F1 of all
generated ids against all ground-truth ids, plus P0 and P1 recall. Unresolved references (id None) are left out
of the sets and counted per side; an id given twice counts once; a zero denominator gives 0.0 and a flag.
"""

_KWARGS_DESCRIPTION = """
Args (one row per reference):
    pairs (`str`): the paper pair the reference belongs to (e.g. "paper-7"); results are per pair, then averaged.
    sides (`str`): "ground_truth" or "generated".
    paper_ids (`str` or `None`): the resolved paper id; None (or "") when the reference could not be resolved.
    labels (`str` or `None`): "P0", "P1" or None (or "": not labelled); "official" ignores the generated side's
        labels.

Returns:
    variant (`str`): the config that ran ("seed" or "official").
    mean (`dict`): overall / p0 / p1 -> precision, recall, f1, each the mean over pairs (None where the variant
        defines no value: official P0/P1 precision and F1).
    n_pairs (`int`), n_flagged_pairs (`int`): pairs, and pairs with a zero denominator somewhere.
    n_unresolved (`dict`): unresolved references per side.
    per_pair (`dict`): the full result of each pair (scores with counts and flags, side summaries).

Examples:

    Load by path from the repository root (or by bare name after `surveyalign metrics register`):

    >>> import evaluate
    >>> f1 = evaluate.load("metrics/citation_f1")
    >>> rows = dict(
    ...     pairs=["p"] * 7,
    ...     sides=["ground_truth"] * 4 + ["generated"] * 3,
    ...     paper_ids=["a", "b", "c", None, "a", "c", "x"],
    ...     labels=["P0", "P0", "P1", "P1", "P0", "P1", None],
    ... )
    >>> out = f1.compute(**rows)
    >>> out["variant"], out["mean"]["overall"]["precision"], round(out["mean"]["overall"]["recall"], 4)
    ('seed', 1.0, 0.6667)
    >>> round(out["mean"]["overall"]["f1"], 4), out["mean"]["p0"]["recall"], out["n_unresolved"]
    (0.8, 0.5, {'ground_truth': 1, 'generated': 0})
    >>> out["per_pair"]["p"]["generated"]["unlabelled"]
    ('3',)

    The official variant partitions only the ground truth; "x" now counts as a generated id:

    >>> official = evaluate.load("metrics/citation_f1", "official").compute(**rows)
    >>> official["variant"], round(official["mean"]["overall"]["precision"], 4), official["mean"]["p0"]
    ('official', 0.6667, {'precision': None, 'recall': 0.5, 'f1': None})

    An empty generated side gives zeros with a flag, not an error:

    >>> empty = f1.compute(pairs=["q"], sides=["ground_truth"], paper_ids=["a"], labels=["P0"])
    >>> empty["mean"]["overall"], empty["n_flagged_pairs"]
    ({'precision': 0.0, 'recall': 0.0, 'f1': 0.0}, 1)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class CitationF1(evaluate.Metric):
    """PaperOrchestra citation F1; ``config_name`` picks the variant (default "seed")."""

    def _info(self):
        if self.config_name == "default":
            self.config_name = "seed"
        if self.config_name not in CITATION_F1_VARIANTS:
            raise ValueError(f"metrics/citation_f1: unknown config {self.config_name!r}; "
                             f"choose one of {list(CITATION_F1_VARIANTS)}")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({
                "pairs": datasets.Value("string"),
                "sides": datasets.Value("string"),
                "paper_ids": datasets.Value("string"),
                "labels": datasets.Value("string"),
            }),
            reference_urls=["https://arxiv.org/abs/2604.05018"],
        )

    # evaluate type-checks the first value of every string column, so a batch starting with None would be
    # refused: None (unresolved id / no label) travels as "" and means the same to the pure function.
    @staticmethod
    def _blank_none(kwargs):
        for name in ("paper_ids", "labels"):
            if kwargs.get(name) is not None:
                kwargs[name] = ["" if v is None else v for v in kwargs[name]]
        return kwargs

    def add_batch(self, **kwargs):
        """Add a batch of reference rows (``pairs``, ``sides``, ``paper_ids``, ``labels``; None allowed)."""
        return super().add_batch(**self._blank_none(kwargs))

    def add(self, **kwargs):
        """Add one reference row (``pairs``, ``sides``, ``paper_ids``, ``labels``; None allowed)."""
        for name in ("paper_ids", "labels"):
            if name in kwargs and kwargs[name] is None:
                kwargs[name] = ""
        return super().add(**kwargs)

    def compute(self, **kwargs):
        """Citation F1 over the given and the added rows (PaperOrchestra App. F.3; outputs in the card).

        Args:
            **kwargs: ``pairs``, ``sides``, ``paper_ids`` (None = unresolved), ``labels`` (None = unlabelled).

        Returns:
            ``{"variant", "mean", "n_pairs", "n_flagged_pairs", "n_unresolved", "per_pair"}``.
        """
        return super().compute(**self._blank_none(kwargs))

    def _compute(self, pairs, sides, paper_ids, labels):
        return citation_f1_by_pair(pairs, sides, paper_ids, labels, variant=self.config_name)
