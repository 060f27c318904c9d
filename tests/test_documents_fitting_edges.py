"""Edges of the one token fitter (surveyalign/documents/fitting.py): exact budgets, tokenizers with special
tokens, without offsets (Python tokenizers) or with a token for a trailing space, the retry after a cut that
renders over the budget, and grapheme clusters longer than the look-around window (issue 27).

The tokenizers here are small stand-ins with the ``transformers`` calling convention whose token counts can be
worked out by hand (one token per word, or per code point); tests/test_char_safe_shortening.py runs the same rule
with a real byte-level tokenizer."""

from __future__ import annotations

import pytest

from surveyalign.documents import fit_texts, truncate_to_tokens


class Words:
    """One token per whitespace-separated word (character offsets, like a fast tokenizer); with ``space_token``
    a text ending in whitespace gets one more token for it (as SentencePiece / byte-level BPE emit one).
    ``add_special_tokens=True`` puts a BOS token in front, as real tokenizers do."""

    def __init__(self, space_token: bool = False):
        self.space_token = space_token
        self.vocab: list[str] = []

    def _id(self, piece: str) -> int:
        if piece not in self.vocab:
            self.vocab.append(piece)
        return self.vocab.index(piece)

    def __call__(self, text, add_special_tokens=True, return_offsets_mapping=False):
        if not isinstance(add_special_tokens, bool):  # as the Rust-backed tokenizers check it
            raise TypeError(f"{add_special_tokens!r} is not an instance of 'bool'")
        ids, spans, pos = [], [], 0
        for word in text.split():
            start = text.index(word, pos)
            ids.append(self._id(word))
            spans.append((start, start + len(word)))
            pos = start + len(word)
        if self.space_token and text[-1:].isspace():
            ids.append(self._id(" "))
            spans.append((pos, len(text)))
        if add_special_tokens:
            ids, spans = [-1, *ids], [(0, 0), *spans]
        out = {"input_ids": ids}
        if return_offsets_mapping:
            out["offset_mapping"] = spans
        return out

    def decode(self, ids):
        return " ".join(self.vocab[i] for i in ids if i >= 0)


class PythonWords(Words):
    """:class:`Words` without offsets: like ``transformers``' Python tokenizers, asking for them raises."""

    def __call__(self, text, add_special_tokens=True, return_offsets_mapping=False):
        if return_offsets_mapping:
            raise NotImplementedError("return_offset_mapping is not available when using Python tokenizers")
        return super().__call__(text, add_special_tokens=add_special_tokens)


class CodePoints:
    """One token per code point, with offsets."""

    def __call__(self, text, add_special_tokens=True, return_offsets_mapping=False):
        out = {"input_ids": [ord(c) for c in text]}
        if return_offsets_mapping:
            out["offset_mapping"] = [(i, i + 1) for i in range(len(text))]
        return out


def test_truncate_keeps_a_text_that_fits_exactly_and_refuses_negative_limits():
    assert truncate_to_tokens("a b c d", Words(), 4) == "a b c d"
    assert truncate_to_tokens("a b c d", Words(), 9) == "a b c d"
    assert truncate_to_tokens("a b c d", Words(), 2) == "a b "  # special tokens are not counted
    assert truncate_to_tokens("a b c d", Words(), 1) == "a "
    assert truncate_to_tokens("  a b", Words(), 0) == ""
    with pytest.raises(ValueError, match=r"^limit must be >= 0, got -1$"):
        truncate_to_tokens("a b", Words(), -1)


def test_truncate_without_offsets_cuts_at_the_decoded_prefix():
    assert truncate_to_tokens("alpha beta gamma", PythonWords(), 2) == "alpha beta"
    assert truncate_to_tokens("alpha beta gamma", PythonWords(), 3) == "alpha beta gamma"
    assert truncate_to_tokens("alpha beta gamma", Words(), 2) == "alpha beta "


def test_truncate_drops_one_more_token_when_the_prefix_tokenises_longer():
    # "a b " is 3 tokens (a, b and the trailing space) for a budget of 2: one token less, "a " (2 tokens)
    assert truncate_to_tokens("a b c d", Words(space_token=True), 2) == "a "
    assert truncate_to_tokens("a b c d", Words(space_token=True), 3) == "a b "
    assert truncate_to_tokens("a b c d", Words(space_token=True), 1) == ""  # "a " is 2 tokens
    assert truncate_to_tokens("a b c d", Words(space_token=True), 0) == ""


def test_cuts_fall_on_grapheme_boundaries():
    tok = CodePoints()
    # a cut inside "e" + two combining acutes keeps none of it
    assert truncate_to_tokens("ab" + "e\u0301\u0301" + "cd", tok, 3) == "ab"
    assert truncate_to_tokens("ab" + "e\u0301\u0301" + "cd", tok, 5) == "abe\u0301\u0301"
    # a family emoji (5 code points joined by ZWJ) is kept whole or dropped whole
    family = "\U0001F469\u200d\U0001F469\u200d\U0001F467"
    assert truncate_to_tokens("hi " + family + "!", tok, 6) == "hi "
    # the first cluster alone is over the budget: nothing is kept
    assert truncate_to_tokens("e" + "\u0301" * 10 + " z", tok, 3) == ""
    assert truncate_to_tokens(family + " hi", tok, 2) == ""  # not the lone first code point, nor "woman + ZWJ"


def test_cuts_far_into_a_text_and_clusters_longer_than_the_window():
    tok = CodePoints()
    plain = "abcdefghij" * 20
    assert truncate_to_tokens(plain, tok, 150) == plain[:150]
    # a letter with 200 combining marks: the cut at 150 lies inside it, further than the 64-character window
    zalgo = "x" * 10 + "e" + "\u0301" * 200 + "yz"
    assert truncate_to_tokens(zalgo, tok, 150) == "x" * 10
    assert truncate_to_tokens(zalgo, tok, 211) == zalgo[:211]


def _count(texts):
    """A prompt of 10 tokens around the texts, one token per word."""
    return 10 + sum(len(t.split()) for t in texts)


def _count_space(texts):
    """As :func:`_count`, and a text ending in a space costs one more token (a cut text does)."""
    return _count(texts) + sum(t[-1:] == " " for t in texts)


def test_a_cut_that_renders_one_over_is_cut_one_token_more():
    fit = fit_texts(["a b c d e f g h", "x y"], _count_space, Words(), 16)
    # first try: cap 4 -> "a b c d " renders 10 + 4 + 2 + 1 = 17; the budget drops by the excess (1): cap 3
    assert (fit.texts, fit.total, fit.cut_tokens, fit.reason) == (("a b c ", "x y"), 16, (5, 0), None)


def test_the_budget_is_the_limit_minus_the_rest_of_the_prompt():
    # a template that merges a cut text's trailing space into its next token renders the cut one token shorter;
    # the texts get limit - rest = 8 - 5 = 3 tokens, and the cut that fits is not grown back
    def merging(texts):
        return 5 + sum(len(t.split()) - (t[-1:] == " ") for t in texts)

    fit = fit_texts(["a b c d e f"], merging, Words(), 8)
    assert (fit.texts, fit.total, fit.cut_tokens) == (("a b c ",), 7, (3,))


def test_water_filling_over_three_texts():
    texts = ["a b c d e f g h i", "p q r s t", "x y"]
    # 12 tokens for the texts: cap 5 (5 + 5 + 2); the longest is cut, the others stay whole
    fit = fit_texts(texts, _count, Words(), 22)
    assert (fit.texts, fit.total, fit.cut_tokens) == (("a b c d e ", "p q r s t", "x y"), 22, (4, 0, 0))
    # one token less: cap 4 -> both long ones are cut (4 + 4 + 2 = 10 < 11: the largest cap that fits)
    fit = fit_texts(texts, _count, Words(), 21)
    assert (fit.texts, fit.total, fit.cut_tokens) == (("a b c d ", "p q r s ", "x y"), 20, (5, 1, 0))


def test_a_prompt_at_the_limit_is_untouched_and_the_budget_is_exact():
    assert fit_texts(["a b c", "x"], _count, Words(), 14) == fit_texts(["a b c", "x"], _count, Words(), None)
    fit = fit_texts(["a b c", "x"], _count, Words(), 14)
    assert (fit.texts, fit.total, fit.cut_tokens) == (("a b c", "x"), 14, (0, 0))
    fit = fit_texts(["a b c", "x"], _count, Words(), 13)
    assert (fit.texts, fit.total, fit.cut_tokens) == (("a b ", "x"), 13, (1, 0))


def test_the_budget_search_finds_the_largest_cap():
    # 6 tokens for one text of 9: cap 6 (the binary search's last step lowers its upper end by one)
    fit = fit_texts(["a b c d e f g h i"], _count, Words(), 16)
    assert (fit.texts, fit.total, fit.cut_tokens) == (("a b c d e f ",), 16, (3,))
    # 1 token left is still a budget (not "nothing left")
    fit = fit_texts(["a b c"], _count, Words(), 11)
    assert (fit.texts, fit.total, fit.cut_tokens) == (("a ",), 11, (2,))
    # fewer tokens left than texts: every text emptied
    fit = fit_texts(["a b", "c d", "e f"], _count, Words(), 12)
    assert (fit.texts, fit.total, fit.cut_tokens) == (("", "", ""), 10, (2, 2, 2))


def test_a_prompt_over_the_limit_without_any_text_is_refused():
    fit = fit_texts(["a b", "c"], _count, Words(), 9)
    assert (fit.texts, fit.total, fit.cut_tokens, fit.reason) == (None, 10, (0, 0), "10 tokens without any text, 9 allowed")


def test_fitting_with_a_python_tokenizer():
    fit = fit_texts(["alpha beta gamma delta", "x"], _count, PythonWords(), 13)
    assert (fit.texts, fit.total, fit.cut_tokens) == (("alpha beta", "x"), 13, (2, 0))
