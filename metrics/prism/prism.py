"""PRISM review-quality metrics as an `evaluate` metric, one config per dimension.

A thin wrapper over the column functions of :mod:`surveyalign.prism` (``depth_by_review``,
``novelty_by_review``, ``flaws_by_reviewer``, ``prioritisation_by_review``, ``constructiveness_by_review``),
which group extracted units by review and apply PRISM's formulas.
"""

import datasets
import evaluate

from surveyalign.prism import (
    constructiveness_by_review,
    depth_by_review,
    flaws_by_reviewer,
    novelty_by_review,
    prioritisation_by_review,
)

_CITATION = """\
@article{prism2026,
  title   = {PRISM: A Multi-Dimensional Benchmark for Evaluating LLM Peer Reviewers},
  author  = {Loc, Ngoc Phan Phuoc and others},
  journal = {arXiv preprint arXiv:2605.26730},
  year    = {2026}
}
"""

_DESCRIPTION = """\
PRISM scores a peer review from discrete units an LLM extracted from it, never from a holistic grade.
Pick the dimension with config_name: "depth" (one row per argumentative unit: DoA = harmonic mean of the
premise ratio and the mean premise grounding / 2), "novelty" (one row per (novelty claim, prior paper) pair:
NS, support rate, strict support rate), "flaws" (one row per pooled flaw: critical / minor recall and their
consensus-weighted forms), "prioritisation" (one row per critique: nCPS, a per-section nDCG of severity
weights) and "constructiveness" (one row per atomic comment: MCS, actionability ratio, solution density,
constructiveness density). Units are grouped by review; means are over reviews that have a value.
"""

_KWARGS_DESCRIPTION = """
Args (by config):
    depth: review_ids (`str`), roles ("claim" | "premise"), aspects (soundness | clarity | contribution |
        other), grounding (`int` in {0, 1, 2} or None for an ungraded unit).
    novelty: review_ids, claim_ids (`str`), scores (`int` in -2..2, or None for a claim without any pair),
        relevance (`float` >= 0); compute argument policy (default "top3_weighted"; also "weighted",
        "mean", "top1", "top3_mean").
    flaws: flaw_ids (`str`), severities ("critical" | "minor" | other), valid (`bool`), raised_by (`list`
        of exact reviewer ids); compute arguments reviewer_ids and consensus_reviewers (lists of ids).
    prioritisation: review_ids, sections (`str`), severities, quotes (`str`, may be ""); compute argument
        review_texts ({review id: full text}) to recover the order from the quotes.
    constructiveness: review_ids, kinds (weakness | strength | question | suggestion | observation),
        actionability, specificity, justification, solution, tone (`int` in {0, 1, 2}).

Returns:
    per_review (or per_reviewer for flaws): each review's scores; the means over reviews of the main
    scores (None when no review has one) and n_reviews.

Examples:

    >>> import evaluate
    >>> depth = evaluate.load("metrics/prism", "depth")
    >>> out = depth.compute(review_ids=["a", "a", "a", "a", "b"],
    ...                     roles=["claim", "premise", "premise", "claim", "claim"],
    ...                     aspects=["soundness", "soundness", "clarity", "other", "other"],
    ...                     grounding=[None, 2, 1, None, None])
    >>> out["per_review"]["a"]["r_premise"], out["per_review"]["a"]["s_depth"], round(out["per_review"]["a"]["doa"], 4)
    (0.5, 1.5, 0.6)
    >>> out["per_review"]["b"]["doa"], round(out["doa"], 4)
    (0.0, 0.3)

    >>> novelty = evaluate.load("metrics/prism", "novelty")
    >>> out = novelty.compute(review_ids=["a", "a", "a", "a"], claim_ids=["c1", "c1", "c2", "c3"],
    ...                       scores=[2, -2, 1, None], relevance=[0.75, 0.25, 0.5, None])
    >>> out["per_review"]["a"]["claim_scores"], round(out["ns"], 4), round(out["sr"], 4)
    ([1.0, 1.0, 0.0], 0.6667, 0.6667)

    >>> flaws = evaluate.load("metrics/prism", "flaws")
    >>> out = flaws.compute(flaw_ids=["F1", "F2", "F3"], severities=["critical", "critical", "minor"],
    ...                     valid=[True, True, True], raised_by=[["R1", "R2"], ["R10"], ["R2"]],
    ...                     reviewer_ids=["R1", "R2"])
    >>> out["per_reviewer"]["R1"]["critical_recall"], out["per_reviewer"]["R1"]["minor_recall"]
    (0.5, 0.0)
    >>> round(out["per_reviewer"]["R1"]["weighted_critical_recall"], 4), out["critical_recall"]
    (0.6667, 0.5)

    >>> prio = evaluate.load("metrics/prism", "prioritisation")
    >>> out = prio.compute(review_ids=["a", "a"], sections=["weaknesses", "weaknesses"],
    ...                    severities=["minor", "critical"], quotes=["typos", "proof gap"],
    ...                    review_texts={"a": "There is a proof gap. Also typos."})
    >>> out["per_review"]["a"]["ncps"], out["ncps"]
    (1.0, 1.0)

    >>> cons = evaluate.load("metrics/prism", "constructiveness")
    >>> out = cons.compute(review_ids=["a", "a"], kinds=["weakness", "question"], actionability=[2, 0],
    ...                    specificity=[2, 1], justification=[1, 1], solution=[2, 0], tone=[1, 2])
    >>> round(out["mcs"], 4), out["ar"], out["sd"], out["cd"]
    (0.6, 0.5, 0.5, 0.5)
"""

_FEATURES = {
    "depth": {"review_ids": datasets.Value("string"), "roles": datasets.Value("string"),
              "aspects": datasets.Value("string"), "grounding": datasets.Value("int64")},
    "novelty": {"review_ids": datasets.Value("string"), "claim_ids": datasets.Value("string"),
                "scores": datasets.Value("int64"), "relevance": datasets.Value("float64")},
    "flaws": {"flaw_ids": datasets.Value("string"), "severities": datasets.Value("string"),
              "valid": datasets.Value("bool"), "raised_by": datasets.Sequence(datasets.Value("string"))},
    "prioritisation": {"review_ids": datasets.Value("string"), "sections": datasets.Value("string"),
                       "severities": datasets.Value("string"), "quotes": datasets.Value("string")},
    "constructiveness": {"review_ids": datasets.Value("string"), "kinds": datasets.Value("string"),
                         **{axis: datasets.Value("int64") for axis in
                            ("actionability", "specificity", "justification", "solution", "tone")}},
}


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Prism(evaluate.Metric):
    """PRISM review-quality metrics; ``config_name`` picks the dimension (default "depth")."""

    def _info(self):
        if self.config_name == "default":
            self.config_name = "depth"
        if self.config_name not in _FEATURES:
            raise ValueError(f"metrics/prism: unknown config {self.config_name!r}; choose one of {sorted(_FEATURES)}")
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(_FEATURES[self.config_name]),
            reference_urls=["https://arxiv.org/abs/2605.26730", "https://khanhthanhdev.github.io/prism-page/"],
        )

    def _compute(self, policy="top3_weighted", reviewer_ids=None, consensus_reviewers=None, review_texts=None,
                 **columns):
        name = self.config_name
        if name == "depth":
            return depth_by_review(columns["review_ids"], columns["roles"], columns["aspects"], columns["grounding"])
        if name == "novelty":
            return novelty_by_review(columns["review_ids"], columns["claim_ids"], columns["scores"],
                                     columns["relevance"], policy=policy)
        if name == "flaws":
            return flaws_by_reviewer(columns["flaw_ids"], columns["severities"], columns["valid"],
                                     columns["raised_by"], reviewer_ids, consensus_reviewers)
        if name == "prioritisation":
            return prioritisation_by_review(columns["review_ids"], columns["sections"], columns["severities"],
                                            columns["quotes"], review_texts)
        axes = {k: v for k, v in columns.items() if k not in ("review_ids", "kinds")}
        return constructiveness_by_review(columns["review_ids"], columns["kinds"], **axes)
