"""The judge-answer parser against a table of realistic outputs (SurveyReview App. C).

Each row: raw answer, protocol, expected score (or None), expected rationale (exact, or None to skip the
check), and a fragment the error must contain (None = the answer must parse).
"""

from __future__ import annotations

import dataclasses

import pytest

from surveyalign.prompts import ParsedAnswer, parse_judgement
from surveyalign.prompts.parser import strip_reasoning

LONG_V10 = (
    "The survey reviews 120 papers published between 2015 and 2023, and Table 2 compares 14 denoising "
    "methods on three benchmarks. However, Section 3.1 reports a -1 dB gain without saying which baseline "
    "it refers to, and the discussion of Figure 4 (top-5 accuracy of 87.5%) repeats Section 2. Several "
    "2+ year old preprints are cited instead of their published versions."
)

CASES = [
    # --- v1.0, well formed -------------------------------------------------------------------------------
    ("plain", "The survey is well written overall.$$$1$$$", "v1.0", 1, "The survey is well written overall.", None),
    ("plus sign", "Clear prose throughout. $$$+1$$$", "auto", 1, "Clear prose throughout.", None),
    ("spaces inside", "Sections overlap heavily. $$$ -2 $$$", "v1.0", -2, "Sections overlap heavily.", None),
    ("decimal one", "Mostly complete references.$$$1.0$$$", "auto", 1, "Mostly complete references.", None),
    ("decimal minus", "Shallow comparison.$$$-1.00$$$", "v1.0", -1, "Shallow comparison.", None),
    ("unicode minus", "Hard to follow.$$$\u22122$$$", "auto", -2, "Hard to follow.", None),
    ("tabs and CRLF", "\r\n\tThe flow between parts is smooth.\t$$$\t2\t$$$\r\n", "auto", 2,
     "The flow between parts is smooth.", None),
    ("long rationale with other numbers", LONG_V10 + "$$$-1$$$", "auto", -1, LONG_V10, None),
    ("inline $$$ in rationale", ("The authors write prices as $$$ inline, e.g. $$$ 5, which is odd. "
     "Otherwise clear.$$$1$$$"), "auto", 1,
     "The authors write prices as $$$ inline, e.g. $$$ 5, which is odd. Otherwise clear.", None),
    ("text after the marker", "Weak synthesis of the literature.$$$-1$$$\n\nI hope this review helps!", "auto", -1,
     "Weak synthesis of the literature.", None),
    ("malformed later marker ignored", "Weak synthesis.$$$-1$$$ Confidence: $$$high$$$", "auto", -1,
     "Weak synthesis.", None),
    ("two markers: last counts", "First impression: $$$1$$$. On reflection the transitions are abrupt.$$$-1$$$",
     "auto", -1, "First impression: On reflection the transitions are abrupt.", None),
    ("earlier marker mid-sentence dropped", ("Dense but readable, so $$$-1$$$ then; on reflection Section 4 is "
     "unreadable.$$$-2$$$"), "v1.0", -2, "Dense but readable, so then; on reflection Section 4 is unreadable.", None),
    ("repeated marker after a label", "Clear prose.$$$1$$$\n\n**Final score:** $$$1$$$", "auto", 1, "Clear prose.",
     None),
    ("earlier marker on its own line", "Draft: $$$2$$$\nThe taxonomy is thin after 2021.\n$$$-1$$$", "auto", -1,
     "Draft:\nThe taxonomy is thin after 2021.", None),
    # a bare label before the marker: the score stands, the rationale is empty (has_rationale False)
    ("label only: empty rationale", "**Score:** $$$-1$$$", "auto", -1, "", None),
    ("marker only: empty rationale", "$$$2$$$", "v1.0", 2, "", None),
    ("v1.1 empty reason", "<reason> </reason> <score>-2</score>", "v1.1", -2, "", None),
    ("bold around marker", "Concise and clear. **$$$2$$$**", "auto", 2, "Concise and clear.", None),
    ("bold inside marker", "Key works are missing. $$$**-1**$$$", "auto", -1, "Key works are missing.", None),
    ("balanced bold kept", "The prose is **very clear**$$$2$$$", "auto", 2, "The prose is **very clear**", None),
    ("inline code marker", "Mostly a list of papers. `$$$-2$$$`", "auto", -2, "Mostly a list of papers.", None),
    ("code fence", "```\nThe taxonomy is inconsistent across sections.$$$-1$$$\n```", "auto", -1,
     "The taxonomy is inconsistent across sections.", None),
    ("labels", "Rationale: The survey omits the 2022-2024 diffusion work.\n\n**Score:** $$$-1$$$", "auto", -1,
     "The survey omits the 2022-2024 diffusion work.", None),
    ("markdown headings", ("### Rationale\nTransitions are abrupt and Section 5 duplicates Section 3.\n\n### Score\n"
     "$$$-2$$$"), "auto", -2, "Transitions are abrupt and Section 5 duplicates Section 3.", None),
    ("word 'score' in rationale kept", "The missing baselines lower the score$$$-1$$$", "v1.0", -1,
     "The missing baselines lower the score", None),
    # --- reasoning blocks ------------------------------------------------------------------------------
    ("empty think block (Qwen3, thinking off)", "<think>\n\n</think>\n\nThe structure is logical.$$$1$$$", "auto", 1,
     "The structure is logical.", None),
    ("think block holding markers", ("<think>Maybe $$$2$$$? No: the 2021 works are missing.</think>\n"
     "Several key works from 2021 are missing.$$$-1$$$"), "auto", -1, "Several key works from 2021 are missing.", None),
    ("lone closing think tag", "Weighing it: $$$2$$$ or $$$1$$$...</think>\nThe survey synthesises well.$$$1$$$",
     "auto", 1, "The survey synthesises well.", None),
    ("only a think block", "<think>I would give $$$2$$$ here.</think>", "auto", None, "",
     "no answer after the reasoning block"),
    ("unclosed think block", "<think>The survey seems weak, maybe $$$-1$$$, but let me re-read Section 4 and",
     "auto", None, "", "unclosed <think>"),
    # --- v1.0 failures ---------------------------------------------------------------------------------
    ("zero", "The dimension is barely discussed.$$$0$$$", "auto", None, "The dimension is barely discussed.",
     "'0' is outside"),
    ("minus zero", "Neutral overall.$$$-0$$$", "v1.0", None, "Neutral overall.", "'-0' is outside"),
    ("three", "Outstanding.$$$3$$$", "auto", None, "Outstanding.", "'3' is outside"),
    ("minus three (unjudgeable code)", "Cannot tell.$$$-3$$$", "auto", None, "Cannot tell.", "'-3' is outside"),
    ("two and a half", "Between good and excellent.$$$2.5$$$", "auto", None, "Between good and excellent.",
     "'2.5' is not an integer"),
    ("missing marker", "The survey is fine overall. Score: -1", "auto", None,
     "The survey is fine overall. Score: -1", "no score marker found"),
    ("fraction is not a marker", "Half right.$$$1/2$$$", "v1.0", None, None, "no score marker found"),
    ("cut off after opening", "Several key works are missing, e.g.$$$", "auto", None, None, "cut off"),
    ("cut off after sign", "Several key works are missing.$$$-", "auto", None, None, "cut off"),
    ("cut off before closing", "Several key works are missing.$$$-1$$", "v1.0", None, None, "cut off"),
    ("cut off after an earlier marker", "Okay.$$$1$$$ Revised after Section 6: $$$-", "auto", None, None, "cut off"),
    ("empty", "", "auto", None, "", "empty output"),
    ("whitespace only", "  \n\t ", "v1.0", None, "", "empty output"),
    ("None", None, "auto", None, "", "empty output"),
    # --- v1.1 ------------------------------------------------------------------------------------------
    ("v1.1 plain", "<reason>Good coverage of the 2023 retrieval work.</reason> <score>1</score>", "v1.1", 1,
     "Good coverage of the 2023 retrieval work.", None),
    ("v1.1 spaces and plus", "<reason>\nNovel framework in Section 6.\n</reason>\n<score> +2 </score>", "auto", 2,
     "Novel framework in Section 6.", None),
    ("v1.1 upper-case tags", "<Reason>Clear.</Reason> <Score>2</Score>", "auto", 2, "Clear.", None),
    ("v1.1 think then answer", ("<think>\n\n</think>\n\n<reason>Lists 40 methods without comparing them."
     "</reason> <score>-2</score>"), "v1.1", -2, "Lists 40 methods without comparing them.", None),
    ("v1.1 no reason tags", "Too many overlapping sections. <score>-1</score>", "v1.1", -1,
     "Too many overlapping sections.", None),
    ("v1.1 zero", "<reason>Not discussed.</reason> <score>0</score>", "v1.1", None, "Not discussed.", "'0' is outside"),
    ("v1.1 two point five", "<reason>x</reason> <score>2.5</score>", "auto", None, "x", "not an integer"),
    ("v1.1 truncated in reason", "<reason>The survey misses key works such as", "v1.1", None, None,
     "unclosed <reason>"),
    ("v1.1 cut score", "<reason>Shallow.</reason> <score>-", "auto", None, None, "cut off"),
    ("v1.1 cut closing tag", "<reason>Shallow.</reason> <score>-1</sco", "v1.1", None, None, "cut off"),
    ("v1.1 non-numeric score", "<reason>Fine.</reason> <score>good</score>", "v1.1", None, None,
     "no score marker found"),
    # --- protocol selection ----------------------------------------------------------------------------
    ("auto: v1.1 after v1.0", "Draft $$$-1$$$\n<reason>Actually a strong synthesis.</reason> <score>2</score>",
     "auto", 2, "Actually a strong synthesis.", None),
    ("auto: v1.0 after v1.1", "<reason>A</reason> <score>1</score> Final answer: $$$-1$$$", "auto", -1,
     "A", None),
    ("v1.0 only keeps tag text", "<reason>A</reason> <score>1</score> Final answer: $$$-1$$$", "v1.0", -1,
     "<reason>A</reason> <score>1</score>", None),
    ("v1.1: earlier score inside the reason", "<reason>First <score>2</score>, but shallow.</reason> <score>-1</score>",
     "v1.1", -1, "First, but shallow.", None),
    ("auto: lone $$$ inside v1.1 reason", "<reason>Budget tables use $$$ signs oddly.</reason> <score>-1</score>",
     "auto", -1, "Budget tables use $$$ signs oddly.", None),
    ("dollars ending the rationale", "Costs are quoted in $$$$$1$$$", "v1.0", 1, "Costs are quoted in $$", None),
    ("leading zero and plus zero", "Fine.$$$+0$$$", "auto", None, "Fine.", "'+0' is outside"),
    ("echoed template then answer", "Reason$$$X$$$\nThe survey is shallow.$$$-2$$$", "auto", -2,
     "Reason$$$X$$$\nThe survey is shallow.", None),
    ("v1.0 only ignores tags", "<reason>Clear.</reason> <score>1</score>", "v1.0", None, None,
     "no score marker found (v1.0)"),
    ("v1.1 only ignores dollars", "Clear.$$$1$$$", "v1.1", None, None, "no score marker found (v1.1)"),
    # --- issue 27: marker joins, reason tags, tag case, lone delimiters ----------------------------------------
    ("v1.0 marker at position 0", "$$$1$$$ Then weak. $$$-1$$$", "auto", -1, "Then weak.", None),
    ("v1.0 then v1.1 marker, adjacent", "Draft $$$1$$$<score>2</score> then weak. $$$-1$$$", "auto", -1,
     "Draft then weak.", None),
    ("three markers: every earlier one dropped", "A $$$1$$$ B $$$2$$$ C $$$-1$$$", "v1.0", -1, "A B C", None),
    ("earlier marker right after a newline", "Draft.\n$$$2$$$ Then weak.\n$$$-1$$$", "auto", -1, "Draft.\nThen weak.",
     None),
    ("punctuation and newline after an earlier marker", "First impression: $$$1$$$.\nOn reflection weak. $$$-1$$$",
     "auto", -1, "First impression:\nOn reflection weak.", None),
    ("earlier marker after a word ending in X", "Section IX $$$1$$$. Then weak $$$-1$$$", "auto", -1,
     "Section IX. Then weak", None),
    ("earlier marker before a word starting with X", "It skips $$$1$$$ X-ray work. $$$-1$$$", "auto", -1,
     "It skips X-ray work.", None),
    ("dropped punctuation before a word starting with X", "It skips: $$$1$$$. X-ray work. $$$-1$$$", "auto", -1,
     "It skips: X-ray work.", None),
    ("rationale ending in X", "Methods are compared in Table X $$$-1$$$", "auto", -1,
     "Methods are compared in Table X", None),
    ("one lone $$$ before the marker", "Prices are quoted in $$$ here. Clear.$$$1$$$", "auto", 1,
     "Prices are quoted in $$$ here. Clear.", None),
    ("v1.1 reason tag at position 0, text before the score", "<reason>Clear.</reason> Note: extra <score>1</score>",
     "v1.1", 1, "Clear.", None),
    ("v1.1 two reason blocks: the last counts", "<reason>A</reason> <reason>B</reason> <score>1</score>", "auto", 1,
     "B", None),
    ("v1.1 unclosed reason after a closed one", "<reason>A</reason> <reason>B <score>1</score>", "v1.1", 1, "A",
     None),
    ("v1.0 with upper-case reason tags", "<Reason>Clear prose.</REASON> $$$1$$$", "auto", 1, "Clear prose.", None),
    ("unclosed reason after a closed one, no score", "x <reason>A</reason> y <reason>B", "auto", None,
     "x <reason>A</reason> y <reason>B", "unclosed <reason> tag and no score: the output was cut off"),
    ("cut closing tag then spaces", "<reason>Shallow.</reason> <score>-1</sco  \n", "v1.1", None,
     "<reason>Shallow.</reason> <score>-1</sco", "score marker cut off at the end of the output (v1.1)"),
    ("cut v1.0 marker keeps the visible text", "Weak synthesis. $$$-", "auto", None, "Weak synthesis. $$$-",
     "score marker cut off at the end of the output (v1.0)"),
    ("no marker at all: both protocols named", "No marker here.", "auto", None, "No marker here.",
     "no score marker found (v1.0/v1.1)"),
    # --- issue 27: cosmetics around the rationale ---------------------------------------------------------------
    ("label after a closed fence", "Clear.\n```\nScore: $$$1$$$", "auto", 1, "Clear.", None),
    ("fenced rationale", "```text\nClear prose.\n``` $$$1$$$", "auto", 1, "Clear prose.", None),
    ("lone backtick after a word", "Clear. `code` ok`$$$1$$$", "auto", 1, "Clear. `code` ok", None),
    ("three unbalanced stars", "Clear.***$$$1$$$", "auto", 1, "Clear.", None),
    ("third ** is unbalanced", "Clear **bold** text**$$$1$$$", "auto", 1, "Clear **bold** text", None),
    ("a lone star is no rationale", "*$$$1$$$", "auto", 1, "", None),
]


@pytest.mark.parametrize(
    ("text", "protocol", "score", "rationale", "error"),
    [pytest.param(*row[1:], id=row[0]) for row in CASES],
)
def test_parse_table(text, protocol, score, rationale, error):
    result = parse_judgement(text, protocol=protocol)
    assert result.score == score
    if score is not None:
        assert type(result.score) is int
    if rationale is not None:
        assert result.rationale == rationale
    if error is None:
        assert result.error is None and result.ok
    else:
        assert result.error is not None and error in result.error
        assert not result.ok


def test_table_is_large_enough():
    assert len(CASES) >= 30
    assert len({row[0] for row in CASES}) == len(CASES)


def test_judgement_is_frozen():
    result = parse_judgement("Clear.$$$1$$$")
    assert result == ParsedAnswer(1, "Clear.", None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.score = 2  # type: ignore[misc]


def test_has_rationale_flags_bare_scores():
    assert parse_judgement("**Score:** $$$-1$$$").has_rationale is False
    assert parse_judgement("Weak synthesis.$$$-1$$$").has_rationale is True
    assert parse_judgement("").has_rationale is False


def test_unknown_protocol_is_named():
    with pytest.raises(ValueError, match="v9"):
        parse_judgement("Clear.$$$1$$$", protocol="v9")


def test_default_protocol_is_auto():
    assert parse_judgement("<reason>ok</reason> <score>-1</score>").score == -1
    assert parse_judgement("ok$$$-1$$$").score == -1


N = 50_000
ADVERSARIAL = [
    ("long stars", "*" * N + "x$$$1$$$", 1, None),
    ("long spaces after opener", "x$$$" + " " * N, None, "cut off"),
    ("long padding inside marker", "$$$" + " *" * N + "-2" + " " * N + "$$$", -2, None),
    ("many openers, no close", "<think>" * (N // 7), None, "unclosed <think>"),
    ("many lone closers", "</think>" * (N // 8) + "Fine.$$$2$$$", 2, None),
    ("many reason openers", "<reason>" * (N // 8) + "<score>1</score>", 1, None),
    ("many dollar runs", "$$$ " * (N // 4), None, "no score marker found"),
    ("underscores", "_ " * N + "x$$$-1$$$", -1, None),
]


@pytest.mark.timeout(20)
@pytest.mark.parametrize(("text", "score", "error"), [pytest.param(*row[1:], id=row[0]) for row in ADVERSARIAL])
def test_adversarial_inputs_stay_linear(text, score, error):
    """Inputs that made earlier regexes backtrack quadratically (minutes); all now parse in milliseconds."""
    result = parse_judgement(text)
    assert result.score == score
    assert (result.error is None) if error is None else (error in result.error)


def test_exact_errors_of_empty_and_reasoning_only_answers():
    assert parse_judgement("  \n") == ParsedAnswer(None, "", "empty output")
    assert parse_judgement(None) == ParsedAnswer(None, "", "empty output")
    assert parse_judgement("<think>Weighing it up.</think>  ") == ParsedAnswer(None, "", "no answer after the reasoning block")
    assert strip_reasoning("Fine.<think>abc") == ("", "unclosed <think> block: the output was cut off while reasoning")
    # a closed block is removed, a lone closer drops everything before it
    assert strip_reasoning("a<think>b</think>c</think>d<think>e</think>f") == ("df", None)


def test_at_most_three_nested_layers_are_peeled():
    # one trailing label per layer: the fourth "Score:" stays (the cleaning is bounded, never a loop over the text)
    assert parse_judgement("Clear. Score: Score: Score: Score: $$$1$$$").rationale == "Clear. Score:"
    assert parse_judgement("Clear. Score: Score: Score: $$$1$$$").rationale == "Clear."


def test_rationales_longer_than_the_cleaning_window():
    # labels are looked for in the first / last 200 characters only; a long rationale keeps everything between,
    # including the space that falls exactly where the last 200 characters start
    first = "The taxonomy in Section 2 is clear and complete."
    second = ("Section 4 compares the methods on three benchmarks but never says which baseline the reported "
              "gains refer to, and the discussion of Figure 4 repeats Section 2 nearly word for word, so this is a pity.")
    assert len(second) == 199
    body = first + " " + second
    assert parse_judgement(body + "$$$-1$$$").rationale == body
    assert parse_judgement("Rationale: " + body + "\n**Score:** $$$-1$$$").rationale == body
    assert parse_judgement("<reason>" + body + "</reason>\n<score>-1</score>").rationale == body
