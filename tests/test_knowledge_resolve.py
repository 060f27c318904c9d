"""The safe matching rule and the Resolver (DOI / arXiv first; title + year +-1 or first author; reasons kept)."""

from __future__ import annotations

from surveyalign.documents import Paper, Reference, normalise_title, same_paper
from surveyalign.knowledge import Resolver, resolution_counts, resolve_by_search

ATTN = Paper(id="W1", title="Attention Is All You Need", year=2017, authors=["Ashish Vaswani"])


def _ref(title="Attention is all you need", year=2017, authors=("A. Vaswani",), doi=None, arxiv=None, key="r"):
    return Reference(key=key, title=title, year=year, authors=list(authors), doi=doi, arxiv_id=arxiv)


def test_normalise_title():
    assert normalise_title(r"{BERT}: Pre-training of Deep \emph{Bidirectional} Transformers") == (
        "bert pre training of deep bidirectional transformers")
    assert normalise_title("Graph Neural Networks: A Révieẃ") == "graph neural networks a review"
    assert normalise_title(None) == ""


def test_identifiers_decide_first():
    with_doi = Paper(id="W1", title="Something else entirely", year=1990, doi="10.1000/ABC")
    assert same_paper(_ref(doi="10.1000/abc"), with_doi).method == "doi"
    different = same_paper(_ref(doi="10.1000/xyz"), Paper(id="W1", title=ATTN.title, year=2017, doi="10.1000/abc"))
    assert not different.same and "different DOIs" in different.reason  # same title, two DOIs: not the same
    assert same_paper(_ref(arxiv="1706.03762v5"), Paper(id="W9", title="x", arxiv_id="arXiv:1706.03762")).same
    assert not same_paper(_ref(arxiv="1706.03762"), Paper(id="W9", title=ATTN.title, arxiv_id="1810.04805")).same


def test_title_needs_year_within_one_or_first_author():
    assert same_paper(_ref(year=2018), ATTN).method == "title+year+author"
    assert same_paper(_ref(year=2018, authors=()), ATTN).method == "title+year"
    assert same_paper(_ref(year=2012), ATTN).method == "title+author"  # year off by 5, author agrees
    off = same_paper(_ref(year=2019, authors=("N. Shazeer",)), ATTN)
    assert not off.same and off.reason == "similar title (100.0) but years 2019 vs 2017 and first authors shazeer vs vaswani differ"
    bare = same_paper(_ref(year=None, authors=()), ATTN)
    assert not bare.same and "no year or first author" in bare.reason
    negated = same_paper(_ref(title="Attention is not all you need"), ATTN)  # ratio 92.6, same year and author
    assert not negated.same and negated.score > 92 and negated.reason == "one title is negated (not / no / without)"
    gpt = same_paper(_ref(title="GPT-4 Technical Report", year=2023, authors=("OpenAI",)),
                     Paper(id="G3", title="GPT-3 technical report", year=2023, authors=["OpenAI"]))
    assert not gpt.same and gpt.reason == "titles carry different numbers (4 vs 3)"
    far = same_paper(_ref(title="Deep residual learning"), Paper(id="R", title="Deep residual learning for image "
                                                                 "recognition", year=2017))
    assert not far.same and far.score < 92 and far.reason == "title similarity 66.7 < 92"


def test_resolver_index_and_reasons_kept():
    papers = [ATTN,
              Paper(id="W2", title="Attention is all you need", year=2023, authors=["Someone Else"]),  # a namesake
              Paper(id="W3", title="Deep residual learning for image recognition", year=2016, doi="10.1109/cvpr.2016.90",
                    authors=["Kaiming He"]),
              Paper(id="W4", title="Long short-term memory", year=1997, authors=["Sepp Hochreiter"])]
    resolver = Resolver(papers)
    refs = [_ref(key="attn"),
            _ref(key="resnet", title="Deep Residual Learning", doi="10.1109/CVPR.2016.90", authors=()),
            _ref(key="lstm-typo", title="Long short term memroy", year=1997, authors=("S. Hochreiter",)),
            _ref(key="missing", title="A paper nobody indexed", year=2001),
            _ref(key="empty", title="", year=None, authors=())]
    res = {r.key: r for r in resolver.resolve_all(refs)}
    assert (res["attn"].paper_id, res["attn"].method, res["attn"].n_candidates) == ("W1", "title+year+author", 2)
    assert (res["resnet"].paper_id, res["resnet"].method) == ("W3", "doi")
    assert (res["lstm-typo"].paper_id, res["lstm-typo"].method) == ("W4", "title+year+author")
    assert res["missing"].paper_id is None and res["missing"].reason == "no candidate with a similar title"
    assert res["empty"].reason == "reference has no title, DOI or arXiv id"
    counts = resolution_counts(res.values())
    assert counts == {"n": 5, "resolved": 3, "unresolved": 2, "by_method": {"doi": 1, "title+year+author": 2},
                      "unresolved_reasons": {"no candidate with a similar title": 1,
                                             "reference has no title, DOI or arXiv id": 1}}


def test_search_top_hit_is_never_taken_blindly():
    hits = [Paper(id="S1", title="Attention is all you need in speech separation", year=2021),
            Paper(id="S2", title="Attention is all you need", year=2017, authors=["Ashish Vaswani"])]
    got = resolve_by_search(_ref(), lambda query: hits)
    assert got.paper_id == "S2" and got.n_candidates == 2  # not S1, the first hit
    only_wrong = resolve_by_search(_ref(), lambda query: hits[:1])
    assert only_wrong.paper_id is None and only_wrong.reason.startswith("best candidate rejected: title similarity")


def test_an_agreeing_abstract_confirms_a_title_match_when_year_and_author_are_unknown():
    """Release records carry a title and an abstract only (SurveyReview App. A)."""
    from dataclasses import dataclass

    @dataclass
    class Record:
        title: str
        abstract: str
        year: int | None = None
        doi: str | None = None
        arxiv_id: str | None = None
        first_author_surname: str | None = None

    abstract = ("We pooled forty field trials of winter cover crops and measured how much organic carbon the "
                "topsoil gained over five years")
    hit = Paper(id="PMC1", title="Soil carbon under cover crops: a review.", year=2021,
                abstract=f"Background {abstract}. Conclusions More trials are needed.")
    ok = same_paper(Record("Soil carbon under cover crops: a review", abstract), hit)
    assert (ok.same, ok.method, ok.reason) == (True, "title+abstract", "title 100.0 confirmed by abstract")
    other = Paper(id="PMC2", title=hit.title, year=2021,
                  abstract="Grassland soils were sampled at twelve sites to compare nitrogen cycling under grazing "
                           "and mowing regimes across three seasons")
    bad = same_paper(Record("Soil carbon under cover crops: a review", abstract), other)
    assert not bad.same and bad.reason.startswith("similar title (100.0) but abstracts (similarity ")
    short = same_paper(Record("Soil carbon under cover crops: a review", "Abstract of soil carbon."), hit)
    assert not short.same and "nor an abstract" in short.reason  # too short to confirm anything
