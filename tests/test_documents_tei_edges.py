"""Edges of the GROBID TEI reader (issue 27): keys by position, titles and venues from analytic or monograph,
every forename kept and a name without surname dropped, the year from ``when`` or the date's text, ids by type."""

from __future__ import annotations

import pytest

from surveyalign.documents import Reference, parse_tei_references

TEI = """<listBibl xmlns="http://www.tei-c.org/ns/1.0">
<biblStruct><analytic><title level="a">  Spaced
   title </title><author><persName><forename type="first">Ada</forename><forename type="middle">K.</forename>\
<surname>Lovelace</surname></persName></author>
<author><persName><forename>Nobody</forename></persName></author>
<author><persName><surname>Solo</surname></persName></author></analytic>
<monogr><title level="j">Journal  X</title><imprint><date>June 2001</date></imprint></monogr>
<idno type="arXiv">arXiv:2101.00001v2</idno><idno type="DOI"> 10.1000/X </idno><idno>123</idno></biblStruct>
<biblStruct xml:id="b9"><monogr><title>Only monograph</title><imprint><date when="">2002</date></imprint></monogr>\
<idno type="doi"/></biblStruct>
<biblStruct><monogr><imprint><date when="1999-01">2005</date></imprint></monogr></biblStruct>
</listBibl>"""


def test_tei_fields_from_every_place():
    refs = parse_tei_references(TEI.encode("utf-8"), path="t.xml")
    assert (refs.format, refs.path, refs.problems) == ("tei", "t.xml", [])
    assert refs.references == [
        Reference(key="ref-1", title="Spaced title", authors=["Ada K. Lovelace", "Solo"], year=2001,
                  doi="10.1000/x", arxiv_id="2101.00001", venue="Journal X",
                  raw="Spaced title Ada K. Lovelace Nobody Solo Journal X June 2001 arXiv:2101.00001v2 10.1000/X 123",
                  source="tei"),
        # no analytic title: the monograph's title is the title (and the venue); an empty when: the date's text
        Reference(key="b9", title="Only monograph", year=2002, venue="Only monograph", raw="Only monograph 2002",
                  source="tei"),
        # the when attribute wins over the date's text
        Reference(key="ref-3", year=1999, raw="2005", source="tei"),
    ]


def test_tei_without_entries_and_malformed_xml():
    refs = parse_tei_references('<TEI xmlns="http://www.tei-c.org/ns/1.0"><text/></TEI>')
    assert (refs.references, refs.problems, refs.path) == ([], [], None)
    with pytest.raises(ValueError, match=r"^TEI: not well-formed XML \("):
        parse_tei_references("<TEI>")
    with pytest.raises(ValueError, match=r"^x\.tei: not well-formed XML"):
        parse_tei_references("<TEI><a></b></TEI>", path="x.tei")


def test_tei_external_entities_are_not_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret", encoding="utf-8")
    xml = (f'<!DOCTYPE TEI [<!ENTITY e SYSTEM "{secret.as_uri()}">]><TEI xmlns="http://www.tei-c.org/ns/1.0">'
           "<biblStruct><analytic><title>&e;</title></analytic></biblStruct></TEI>")
    ref = parse_tei_references(xml).references[0]
    assert ref.title == "&e;" and "secret" not in ref.raw


def test_tei_text_with_markup_inside_and_a_declared_encoding():
    xml = ('<?xml version="1.0" encoding="UTF-8"?>\n<TEI xmlns="http://www.tei-c.org/ns/1.0"><biblStruct><analytic>'
           '<title level="a">Deep <hi rend="italic">residual</hi> learning</title></analytic></biblStruct></TEI>')
    ref = parse_tei_references(xml).references[0]  # a str with an encoding declaration is read as its bytes
    assert ref.title == "Deep residual learning"
