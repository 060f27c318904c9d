"""A made-up citation graph around a dataset's own reference lists, for the demo and tests (nothing real).

The shipped sample release invents its references, so no public graph knows them. :func:`sample_graph` makes
one node per distinct reference entry of the dataset (title, authors, year as parsed from the entry), a node
for each survey, one invented paper citing each survey (so the leakage exclusions have work to do), and a few
invented neighbours per survey linked to its references by citations both ways, with invented abstracts.
Everything is drawn from a seeded generator: the same dataset and seed give the same graph.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pyarrow.parquet as pq

from surveyalign.documents import Paper, normalise_title, parse_reference_text
from surveyalign.knowledge.graph import CitationGraph
from surveyalign.paths import inside_folder

__all__ = ["sample_graph"]

_TOPICS = ("benchmark design", "transfer across domains", "robust evaluation", "data efficiency",
           "scaling behaviour", "interpretability", "failure analysis", "reproducibility")


def sample_graph(dataset_dir: str | os.PathLike, *, seed: int = 0, neighbours_per_survey: int = 6) -> CitationGraph:
    """Build the made-up graph of a dataset folder (see the module docstring).

    Args:
        dataset_dir: a folder written by ``surveyalign data build``.
        seed: seed of the generator.
        neighbours_per_survey: invented papers linked to each survey's references.

    Returns:
        The :class:`CitationGraph` (ids ``ref-*``, ``survey-*``, ``citer-*``, ``nb-*``).

    Raises:
        FileNotFoundError: no parquet files under ``dataset_dir/data``.
    """
    files = inside_folder(dataset_dir, sorted(Path(dataset_dir).glob("data/*/*.parquet")), "dataset folder")
    if not files:
        raise FileNotFoundError(f"{dataset_dir}: no data/<dimension>/<split>.parquet files")
    rng = random.Random(seed)
    surveys: dict[str, tuple[str, list[str]]] = {}
    for path in files:
        for row in pq.read_table(path, columns=["paper_id", "title", "references"]).to_pylist():
            surveys.setdefault(row["paper_id"], (row["title"] or "", list(row["references"] or [])))
    papers: dict[str, Paper] = {}
    ref_ids: dict[str, str] = {}
    for pid in sorted(surveys):
        title, entries = surveys[pid]
        refs = []
        for entry in entries:
            ref = parse_reference_text(entry, "x")
            key = normalise_title(ref.title) + f"|{ref.year}"
            if key not in ref_ids:
                ref_ids[key] = f"ref-{len(ref_ids) + 1:04d}"
                papers[ref_ids[key]] = Paper(id=ref_ids[key], title=ref.title, year=ref.year, authors=ref.authors,
                                             citation_count=rng.randint(5, 3000), reference_count=0,
                                             abstract=f"An invented study: {ref.title.lower()}.", source="sample")
            refs.append(ref_ids[key])
        years = [papers[r].year for r in refs if papers[r].year is not None]
        year = (max(years) + 1) if years else 2024
        papers[f"survey-{pid}"] = Paper(id=f"survey-{pid}", title=title, year=year, citation_count=rng.randint(0, 50),
                                        reference_ids=list(refs), reference_count=len(refs), source="sample")
        papers[f"citer-{pid}"] = Paper(id=f"citer-{pid}", title=f"A follow-up to {title}", year=year + 1,
                                       citation_count=rng.randint(0, 20), reference_ids=[f"survey-{pid}", *refs[:2]],
                                       source="sample")
        for k in range(neighbours_per_survey if refs else 0):
            topic = rng.choice(_TOPICS)
            linked = rng.sample(refs, k=min(len(refs), rng.randint(1, 3)))
            nb_year = rng.randint(min(years, default=2010) - 3, year + 1)
            nid = f"nb-{pid}-{k}"
            cites_them = rng.random() < 0.5
            papers[nid] = Paper(
                id=nid, title=f"{topic.capitalize()} revisited: study {k + 1} near {pid}", year=nb_year,
                citation_count=rng.randint(1, 5000), reference_ids=linked if cites_them else [],
                reference_count=len(linked) if cites_them else 0, authors=[f"Invented Author{k}"],
                abstract=f"We study {topic} with invented data; results suggest {rng.choice(_TOPICS)} matters.",
                source="sample")
            if not cites_them:
                for r in linked:
                    papers[r].reference_ids.append(nid)
                    papers[r].reference_count = (papers[r].reference_count or 0) + 1
    return CitationGraph(list(papers.values()))
