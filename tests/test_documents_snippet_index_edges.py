"""Edges of the snippet indexes (surveyalign/documents/snippet_index.py): the near-verbatim prefilter equals
comparing runs of four words (also from a cold power cache and across its growth), runs at the ends of a text or
across two snippets, the exact index's hash-bucket collisions, and single_spaced (issue 27)."""

from __future__ import annotations

import random

import pytest

from surveyalign.documents import snippet_index
from surveyalign.documents.snippet_index import (
    VerbatimIndex,
    shared_chunk_candidates,
    single_spaced,
)

WORDS = ["soil", "carbon", "cover", "crops", "add", "the", "of", "to", "naïve", "café", "nitrogen", "yield", "a",
         "long-term", "trials", "are", "needed", "in", "dry", "regions"]


def _reference(snips: list[str], text: str, min_chars: int) -> set[int]:
    """The candidate set by its definition: snippets of fewer than four words, or sharing four words in a row."""
    tw = text.split()
    runs = {tuple(tw[i : i + 4]) for i in range(len(tw) - 3)}
    out = set()
    for n, s in enumerate(snips):
        if len(s) < min_chars:
            continue
        sw = s.split()
        if len(sw) < 4 or any(tuple(sw[i : i + 4]) in runs for i in range(len(sw) - 3)):
            out.add(n)
    return out


def _case(rng: random.Random, n_words: int) -> tuple[list[str], str]:
    words = [rng.choice(WORDS) for _ in range(n_words)]
    text = " ".join(words)
    snips = []
    for _ in range(12):
        start, length = rng.randrange(max(1, n_words - 12)), rng.randrange(2, 12)
        s = words[start : start + length]
        if rng.random() < 0.5 and len(s) > 4:  # change every fourth word: no run left, or one changed word
            s = [w + "x" if (i % (4 if rng.random() < 0.5 else 9)) == 3 else w for i, w in enumerate(s)]
        snips.append(" ".join(s))
    snips.append(" ".join(rng.choice(WORDS) for _ in range(6)))
    return snips, text


def test_candidates_equal_the_four_word_runs_of_random_texts():
    rng = random.Random(27)
    for _ in range(40):
        snips, text = _case(rng, rng.randrange(3, 60))
        assert shared_chunk_candidates(snips, text, 12) == _reference(snips, text, 12), (snips, text)


def test_candidates_from_a_cold_cache_and_after_it_grows(monkeypatch):
    monkeypatch.setattr(snippet_index, "_POWERS", [])
    rng = random.Random(5)
    snips, text = _case(rng, 40)
    assert shared_chunk_candidates(snips, text, 12) == _reference(snips, text, 12)
    # a text of survey size (~150 kB, above the first 2**16 powers): the cache grows and still agrees
    words = [rng.choice(WORDS) for _ in range(27_000)]
    long_text = " ".join(words)
    assert len(long_text.encode()) > 1 << 17
    snips = [" ".join(words[i : i + 6]) for i in (0, 13_000, 26_994)] + ["soil soil soil soil soil carbon"]
    snips.append(" ".join(words[5_000:5_004]) + " " + "x" * 10)
    assert shared_chunk_candidates(snips, long_text, 12) == _reference(snips, long_text, 12) >= {0, 1, 2, 4}
    # a snippet whose only shared run is its first, in the middle of the text; a text that is a single run, in the
    # middle of a snippet (runs hash alike wherever they stand, also at position 0)
    assert shared_chunk_candidates(["cover crops add carbon"], "we add the cover crops add carbon here", 12) == {0}
    assert shared_chunk_candidates(["we add cover crops add carbon"], "cover crops add carbon", 12) == {0}
    # and a short text after that, from the grown cache
    snips, text = _case(rng, 30)
    assert shared_chunk_candidates(snips, text, 12) == _reference(snips, text, 12)


def test_the_first_run_of_the_first_snippet_found_in_the_middle_of_the_text():
    text = "we add the cover crops add carbon in dry regions"
    assert shared_chunk_candidates(["cover crops add carbon to soil"], text, 12) == {0}
    assert shared_chunk_candidates(["zzz", "cover crops add carbon to soil"], text, 12) == {1}


def test_runs_at_the_ends_of_the_text():
    text = "cover crops add carbon to soil in dry regions"
    assert shared_chunk_candidates(["cover crops add carbon"], text, 12) == {0}  # the text's first run
    assert shared_chunk_candidates(["soil in dry regions"], text, 12) == {0}  # its last run
    # a text of exactly four words holds one run; a snippet run hashing above it is no candidate
    assert shared_chunk_candidates(["yield of the trials", "cover crops add carbon"], "cover crops add carbon",
                                   12) == {1}


def test_a_run_across_two_snippets_is_no_candidate():
    text = "long-term trials are needed in dry regions and more"
    snips = ["soil carbon trials long-term", "trials are needed yield of"]  # "long-term trials are needed" crosses
    assert shared_chunk_candidates(snips, text, 12) == set()


def test_a_run_ending_in_the_next_snippets_one_letter_word_is_no_candidate():
    # "in dry regions a" crosses into the second snippet, whose first word is one byte long
    snips = ["qq rr ss in dry regions", "a long-term trial zz yy"]
    assert shared_chunk_candidates(snips, "we see in dry regions a decline", 12) == set()


def test_a_text_of_one_run_found_later_in_a_snippet():
    assert shared_chunk_candidates(["the cover crops add carbon"], "cover crops add carbon", 12) == {0}
    assert shared_chunk_candidates(["zz yy xx ww", "so cover crops add carbon"], "cover crops add carbon", 12) == {1}


def test_later_snippets_are_attributed_to_themselves():
    rng = random.Random(11)
    text = " ".join(rng.choice(WORDS) for _ in range(80))
    tw = text.split()
    snips = ["qq rr ss tt uu"] * 6 + [" ".join(tw[70:75]), "qq rr ss tt uu", " ".join(tw[2:9])]
    assert shared_chunk_candidates(snips, text, 12) == {6, 8}


def test_short_snippets_and_few_words():
    text = "cover crops add carbon to soil"
    # under min_chars: never; fewer than four words: always (scored directly); four words: only when shared
    assert shared_chunk_candidates(["add carbon", "nitrogen yield gaps", "yield of the trials"], text, 12) == {1}
    assert shared_chunk_candidates(["carbon to soil", "add carbon"], text, 14) == {0}  # 14 characters: checked
    assert shared_chunk_candidates(["carbon to soil"], text, 15) == set()


def test_the_text_is_single_spaced_unless_told_so():
    text = "we add  cover crops  add carbon  to soil"
    snip = ["cover crops add carbon to"]
    assert shared_chunk_candidates(snip, text, 12) == {0}
    assert shared_chunk_candidates(snip, text, 12, spaced=True) == set()


@pytest.mark.parametrize(("value", "expected"), [
    ("a b c", "a b c"), (" a b", "a b"), ("a b ", "a b"), ("a  b", "a b"), ("a\tb", "a b"), ("a\nb", "a b"),
    ("naïve café", "naïve café"), ("naïve\u00a0café", "naïve café"), ("x", "x"), ("", ""),
])
def test_single_spaced(value, expected):
    assert single_spaced(value) == expected


def test_a_hash_bucket_collision_is_no_hit():
    snippet = "leak soil carbon stocksrise"  # anchor: the 16 bytes after the first space, "soil carbon stoc"
    # "soil carxxitmhwp" was found by search: the same first 8 bytes and the same 22-bit bucket of the anchor hash,
    # with a larger key, so it passes both bitmaps and is looked up past the end of the one sorted key
    index = VerbatimIndex([snippet], min_chars=20)
    assert index.find("we leak soil carxxitmhwp here") == set()
    assert index.find("we leak soil carbon stocksrise here") == {0}
