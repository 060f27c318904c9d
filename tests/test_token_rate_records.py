"""The tokens-per-character rate a plan learns from the answers' records alone (calls.jsonl keeps each prompt's
characters), so a whole-split plan and a chunked one learn the same rate."""

from surveyalign.calls.budget import TokenRate


def test_rate_from_records_by_hand():
    records = [
        {"key": "a", "stage": "judge", "prompt_tokens": 104, "prompt_chars": 200, "n_messages": 1},  # 100 / 200
        {"key": "b", "stage": "judge", "prompt_tokens": 58, "prompt_chars": 100, "n_messages": 2},   # 50 / 100
        {"key": "a", "stage": "judge", "prompt_tokens": 104, "prompt_chars": 200, "n_messages": 1},  # same key: once
        {"key": "c", "stage": "rqs", "prompt_tokens": 999, "prompt_chars": 10, "n_messages": 1},     # other stage
        {"key": "d", "stage": "judge", "prompt_tokens": 50},                                          # no chars kept
    ]
    rate = TokenRate().learn_records(records, "judge")
    assert rate.answers == 2 and rate.rate == 150 / 300
    assert rate.count([{"role": "user", "content": "x" * 30}]) == 15 + 4
    assert TokenRate().learn_records([]).rate is None
