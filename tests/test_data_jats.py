"""JATS XML -> markdown: article sections, captions and numbered references; sub-articles kept apart by element."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from surveyalign.documents import JatsError, extract_references, parse_jats

FIXTURE = Path(__file__).parent / "fixtures" / "jats" / "review_article.xml"


@pytest.fixture(scope="module")
def article():
    return parse_jats(FIXTURE.read_bytes(), source=FIXTURE.name)


def test_metadata_and_title_without_the_status_note(article):
    assert article.title == "Soil carbon under cover crops: a review"
    assert article.doi == "10.12688/f1000research.90001.2"
    assert article.pmcid == "PMC7000001"
    assert article.year == "2021"
    assert article.authors == ["Ada Okafor", "Per Lindqvist"]  # the editor is not an author
    assert article.keywords == ["soil carbon", "cover crops"]
    assert article.abstract == "**Background:** Cover crops may add carbon to topsoil.\n\n**Methods:** We pooled 41 field trials."


def test_sections_headings_levels_and_text(article):
    assert [(s.heading, s.level) for s in article.sections] == [
        ("", 1), ("1 Introduction", 1), ("1.1 Scope", 2), ("Results", 1), ("Acknowledgements", 1),
    ]
    assert article.sections[0].text == "A short preface before any section."
    intro = article.sections[1].text
    assert intro == ("Cover crops are grown between cash crops (Smith, 2019). Their effect on carbon stocks is "
                     "debated (2).")
    assert article.sections[2].text == (
        "We cover temperate farms only, where the gain is \\Delta C > 0.\n\n- winter rye\n- hairy vetch"
    )


def test_captions_and_table(article):
    assert [(c.kind, c.label, c.caption, c.id) for c in article.captions] == [
        ("figure", "Figure 1.", "Carbon gain per trial. Bars show the mean gain.", "f1"),
        ("table", "Table 1.", "Trials by region.", "t1"),
    ]
    results = article.sections[3].text
    assert "**Figure 1.** Carbon gain per trial. Bars show the mean gain." in results
    assert "| Region | Trials |\n| --- | --- |\n| North | 25 |\n| South | 16 |" in results


def test_references_numbered_mixed_and_element_citations(article):
    assert [(r.number, r.id, r.label, r.doi, r.year) for r in article.references] == [
        (1, "r1", "", "10.1000/soil.2019.1", "2019"), (2, "r2", "2", "", "2020"),
    ]
    assert article.references[0].text == (
        "Smith J, Jones K, et al.: Cover crops and soil organic carbon. Soil Biol. 2019;12:1–9. "
        "doi:10.1000/soil.2019.1"
    )
    assert article.references[1].text == "Brown L. Carbon stocks under rye. Agron J. 2020. 7:10-20."
    assert article.references[1].title == "Carbon stocks under rye"


def test_sub_articles_parsed_apart_with_nesting(article):
    subs = article.sub_articles
    assert [(s.article_type, s.id, s.parent_id) for s in subs] == [
        ("ref-report", "report1", ""), ("author-comment", "comment1", "report1"), ("decision-letter", "dl1", ""),
    ]
    report = subs[0]
    assert report.title == "Reviewer response for version 2"
    assert report.contributors == ["Rita Referee"]
    assert report.recommendation == "approve"
    assert report.text == "The search missed grey literature entirely.\n\nFigure 1 would read better with error bars."
    assert [r.text for r in report.references] == ["Grey literature handbook. 2018."]
    assert subs[1].text == "We added the grey literature search as asked." and subs[1].contributors == ["Ada Okafor"]


def test_markdown_has_the_article_and_nothing_of_the_sub_articles(article):
    md = article.to_markdown()
    assert md.startswith("# Soil carbon under cover crops: a review\n\n## Abstract\n\n**Background:**")
    assert re.findall(r"^#+ .*$", md, re.MULTILINE) == [
        "# Soil carbon under cover crops: a review", "## Abstract", "## 1 Introduction", "### 1.1 Scope",
        "## Results", "## Acknowledgements", "## References",
    ]
    assert extract_references(md) == [r.text for r in article.references]
    for sub in article.sub_articles:
        for para in sub.text.split("\n\n"):
            assert para not in md
    for leaked in ("grey literature", "error bars", "Referee", "Decision letter", "version 2", "plain summary",
                   "Grey literature handbook", "Editorson"):
        assert leaked not in md


def test_exclusion_is_by_element_not_by_text():
    """Review-like words in the article stay; a sub-article with plain words goes."""
    xml = """<article><front><article-meta><title-group><article-title>T</article-title></title-group>
    </article-meta></front><body><sec><title>Open Peer Review</title><p>Referee report practices vary.</p></sec>
    </body><floats-group><fig id="f9"><label>Figure 9.</label><caption><p>Floating.</p></caption></fig>
    </floats-group><response response-type="reply" id="x"><body><p>Carbon rose steadily.</p></body></response>
    </article>"""
    art = parse_jats(xml)
    md = art.to_markdown()
    assert "## Open Peer Review\n\nReferee report practices vary." in md
    assert "## Figures and tables\n\n**Figure 9.** Floating." in md
    assert "Carbon rose steadily." not in md
    assert [(s.article_type, s.id, s.text) for s in art.sub_articles] == [("reply", "x", "Carbon rose steadily.")]


def test_entities_are_not_resolved(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    xml = f"""<?xml version="1.0"?>
<!DOCTYPE article [<!ENTITY xxe SYSTEM "file://{secret}"><!ENTITY a "AAAAAAAAAA">
<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>
<article><front><article-meta><title-group><article-title>T</article-title></title-group></article-meta></front>
<body><p>before &xxe; after &b; end</p></body></article>"""
    md = parse_jats(xml).to_markdown()
    assert "TOP-SECRET" not in md and "AAAA" not in md
    assert "before after end" in md


@pytest.mark.parametrize(
    ("xml", "message"),
    [
        ("<article><body><p>unclosed</body></article>", "bad.xml: not well-formed XML"),
        ("<html><body/></html>", "bad.xml: expected a JATS <article> root element, found <html>"),
    ],
)
def test_bad_documents_name_the_source(xml, message):
    with pytest.raises(JatsError, match=re.escape(message)):
        parse_jats(xml, source="bad.xml")


@pytest.mark.real
def test_real_f1000_article_without_its_referee_reports(shared_real):
    path = shared_real / "f1000" / "207_6-229_v1.xml"
    if not path.is_file():
        pytest.skip(f"the real JATS article {path.name} (../shared/real, kept for development beside the repository) is not here")
    art = parse_jats(path.read_bytes(), source=path.name)
    md = art.to_markdown()
    assert art.title == "A survey of working conditions within biomedical research in the United Kingdom"
    assert art.doi == "10.12688/f1000research.11029.1"
    headings = re.findall(r"^(#+) (.*)$", md, re.MULTILINE)
    assert [h for _, h in headings if _ == "##"] == [
        "Abstract", "Introduction", "Methods", "Results", "Discussion", "Ethics statement", "Data availability",
        "Acknowledgements", "Supplementary material", "References",
    ]
    assert ("###", "Survey design") in headings and ("###", "Data analysis") in headings
    # The file holds 17 <ref> elements: 16 in the article's list and 1 in the second referee report's list.
    refs = extract_references(md)
    assert len(refs) == len(art.references) == 16
    assert refs[0].startswith("Alberts B, Kirschner MW, Tilghman S, et al.: Rescuing US biomedical research")
    assert refs[15].startswith("Schillebeeckx M, Maricque B, Lewis C: The missing piece")
    assert [(s.article_type, s.contributors, s.recommendation) for s in art.sub_articles] == [
        ("ref-report", ["Kearney T. W. Gunsalus"], "approve-with-reservations"),
        ("ref-report", ["Jessica K. Polka"], "approve-with-reservations"),
    ]
    assert len(art.references) + sum(len(s.references) for s in art.sub_articles) == 17
    assert [c.label for c in art.captions] == ["Box 1.", "Box 2.", "Box 3.", "Figure 1."]
    assert "**Figure 1.** Graphical representation of analysed survey data." in md
    report_paras = [p for s in art.sub_articles for p in s.text.split("\n\n") if len(p) >= 30]
    assert len(report_paras) >= 10
    assert not [p for p in report_paras if p in md]
    for leaked in ("Kearney", "Polka", "Reviewer response", "Reviewer Expertise", "The Scientific Century", "peer review:"):
        assert leaked not in md
