"""``backend.options.max_enqueued_tokens`` through ``surveyalign evaluate`` (OpenAI's batch queue limit), against
the local batch stand-in through the official openai SDK: batches within the limit, the held-back calls sent by
the next runs of the same command and never twice, a single call over the limit refused in one line (exit 2), and
bad option values refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from surveyalign.backends.openai_api import OpenAIBackend
from surveyalign.cli import main
from surveyalign.testing import FakeBatchServer


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _config(dataset: Path, out: Path, name: str, url: str, **options) -> Path:
    backend = {"kind": "openai", "options": {"model": "gpt-5.2", "base_url": url, "api_key_env": None,
                                             "batch": True, "batch_wait": False, "batch_poll_s": 0.01, **options}}
    path = out / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "dataset": str(dataset), "output_dir": str(out), "run_name": name,
                                    "progress": False, "bootstrap": 0, "limit": 2, "backend": backend,
                                    "generation": {"max_new_tokens": 16}}))
    return path


def test_the_queue_limit_cuts_the_run_into_batches_sent_by_later_runs_never_twice(dataset_dir, tmp_path, capsys):
    with FakeBatchServer(reply=lambda body: "The survey reads well. $$$1$$$", complete_after=1e9) as server:
        # the 8 calls' estimated prompt tokens, from a run without a limit (one batch, its estimate in the log)
        assert main(["evaluate", "--config", str(_config(dataset_dir, tmp_path, "probe", server.openai_url))]) == 4
        probe = _lines(tmp_path / "probe" / "batches.jsonl")[0]
        total = probe["tokens"]
        assert len(probe["keys"]) == 8 and total > 0
        limit = total // 2
        config = _config(dataset_dir, tmp_path, "queue", server.openai_url, max_enqueued_tokens=limit)
        capsys.readouterr()
        assert main(["evaluate", "--config", str(config)]) == 4  # the first batch runs, the rest is held back
        first = [r for r in _lines(tmp_path / "queue" / "batches.jsonl") if r["event"] == "submitted"]
        assert len(first) == 1 and 0 < len(first[0]["keys"]) < 8 and first[0]["tokens"] <= limit
        assert f"{8 - len(first[0]['keys'])} call(s) held back by max_enqueued_tokens" in capsys.readouterr().err
        server.complete_after = 0.0
        codes = [main(["evaluate", "--config", str(config)]) for _ in range(8)]
        assert 0 in codes and set(codes[:codes.index(0)]) <= {4}
    log = _lines(tmp_path / "queue" / "batches.jsonl")
    submitted = [r for r in log if r["event"] == "submitted"]
    keys = [k for r in submitted for k in r["keys"]]
    assert len(keys) == 8 and set(keys) == set(probe["keys"])  # every call once, none twice
    assert len(submitted) >= 2 and all(r["tokens"] <= limit for r in submitted)
    assert sum(r["tokens"] for r in submitted) == total
    metrics = json.loads((tmp_path / "queue" / "metrics.json").read_text())
    assert metrics["harness"]["status_counts"]["scored"] == 8
    print(f"limit {limit} of {total} tokens: batches of {[len(r['keys']) for r in submitted]} calls, "
          f"{[r['tokens'] for r in submitted]} tokens; exit codes {codes[:codes.index(0) + 1]}")


def test_a_call_over_the_queue_limit_is_refused_in_one_line(dataset_dir, tmp_path, capsys):
    with FakeBatchServer() as server:
        config = _config(dataset_dir, tmp_path, "over", server.openai_url, max_enqueued_tokens=5)
        assert main(["evaluate", "--config", str(config)]) == 2
        assert server.created == []
    err = capsys.readouterr().err.strip().splitlines()
    assert any("prompt tokens, over the batch queue limit max_enqueued_tokens=5: raise the limit" in line
               for line in err), err


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "100"])
def test_max_enqueued_tokens_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match=r"^openai backend: max_enqueued_tokens must be a positive integer"):
        OpenAIBackend(model="m", base_url="http://127.0.0.1:9/v1", batch=True, max_enqueued_tokens=bad)
    assert OpenAIBackend(model="m", base_url="http://127.0.0.1:9/v1", max_enqueued_tokens=7).max_enqueued_tokens == 7


def test_a_batch_failed_with_token_limit_exceeded_counts_its_calls_as_api_errors_and_the_rerun_sends_them(
        dataset_dir, tmp_path, capsys):
    """The provider's queue limit (1 token) fails the run's batch at validation: its 8 calls are API errors in
    calls.jsonl (kept, with the provider's code), no unit is scored (exit 3); with room in the queue the same command
    sends the 8 again as a new batch and scores them."""
    with FakeBatchServer(reply=lambda body: "The survey reads well. $$$1$$$", enqueued_token_limit=1) as server:
        config = _config(dataset_dir, tmp_path, "full", server.openai_url, batch_wait=True)
        assert main(["evaluate", "--config", str(config)]) == 3
        first = _lines(tmp_path / "full" / "calls.jsonl")
        assert len(first) == 8 and all("token_limit_exceeded: Enqueued token limit reached for gpt-5.2" in r["error"]
                                       for r in first)
        metrics = json.loads((tmp_path / "full" / "metrics.json").read_text())
        assert metrics["harness"]["status_counts"]["api_error"] == 8
        server.enqueued_token_limit = None
        assert main(["evaluate", "--config", str(config)]) == 0
        assert len(server.created) == 2 and len(server.requests_seen) == 8  # the failed batch ran nothing
    log = _lines(tmp_path / "full" / "batches.jsonl")
    assert [(r["status"], r["missing"], r["succeeded"]) for r in log if r["event"] == "collected"] == [
        ("failed", 8, 0), ("completed", 0, 8)]
    metrics = json.loads((tmp_path / "full" / "metrics.json").read_text())
    assert metrics["harness"]["status_counts"]["scored"] == 8
