"""Pure parts of the evaluation harness: K-sample vote (App. E), call cache, config, consistency parser (App. G)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from surveyalign.calls import CallCache, call_key
from surveyalign.evaluation import (
    EvalConfig,
    EvalConfigError,
    build_rqs_messages,
    parse_rqs_rating,
)
from surveyalign.evaluation.cli import overrides_from_args
from surveyalign.judge import majority_vote

REPO = Path(__file__).resolve().parents[1]
EVAL_YAMLS = sorted((REPO / "configs" / "eval").glob("*.yaml"))


# ------------------------------------------------------------------------------------------------- voting


def test_vote_clear_majority_picks_most_likely_winner_sample():
    vote = majority_vote([-1, 1, -1, None, -1], [-0.5, -0.1, -0.2, None, -0.9])
    assert vote.score == -1
    assert vote.counts == {-1: 3, 1: 1}
    assert vote.winners == (0, 2, 4)
    assert vote.best_index == 2  # -0.2 is the highest log-prob among the -1 samples
    assert vote.tie_break is None
    assert vote.n_voted == 4


def test_vote_tie_goes_to_higher_mean_logprob():
    # -1 samples average (-0.9 + -0.5)/2 = -0.7; +2 samples average (-0.4 + -0.8)/2 = -0.6 -> +2 wins
    vote = majority_vote([-1, 2, -1, 2], [-0.9, -0.4, -0.5, -0.8])
    assert vote.score == 2
    assert vote.tie_break == "logprob"
    assert vote.best_index == 1
    # flip one log-prob: -1 now averages -0.45 > -0.6
    assert majority_vote([-1, 2, -1, 2], [-0.4, -0.4, -0.5, -0.8]).score == -1


def test_vote_tie_without_logprobs_is_first_seen_and_deterministic():
    vote = majority_vote([1, -2, -2, 1])
    assert vote.score == 1
    assert vote.tie_break == "first_seen"
    assert vote.best_index == 0
    # a score with log-probs beats a tied score without any
    assert majority_vote([1, -2], [None, -3.0]).score == -2


def test_vote_nothing_parsed():
    vote = majority_vote([None, None], [None, -0.1])
    assert vote.score is None and vote.counts == {} and vote.best_index is None and vote.n_voted == 0


def test_vote_nan_logprob_ignored_and_length_checked():
    vote = majority_vote([1, -1], [math.nan, -2.0])
    assert vote.score == -1 and vote.tie_break == "logprob"
    with pytest.raises(ValueError, match="2 scores but 1"):
        majority_vote([1, -1], [0.0])


# ------------------------------------------------------------------------------------------------- cache


def _key(unit="r1::readability", sample=0, temp=0.0):
    return call_key(stage="judge", unit_id=unit, namespace="readability", sample=sample, messages_hash="p",
                    backend={"backend": "constant"}, settings={"temperature": temp})


def test_call_key_changes_with_every_component():
    base = _key()
    assert base == _key()
    assert len({base, _key(unit="r2::readability"), _key(sample=1), _key(temp=0.7)}) == 4


def test_cache_roundtrip_tolerates_torn_last_line(tmp_path):
    path = tmp_path / "calls.jsonl"
    with CallCache.load(path) as cache:
        cache.append({"key": "a", "text": "one"})
        cache.append({"key": "b", "text": "two"})
        cache.append({"key": "a", "text": "one again"})  # the last record of a key wins
    with path.open("a") as fh:
        fh.write('{"key": "c", "text": "tor')  # killed mid-write: no closing brace, no newline
    cache = CallCache.load(path)
    assert cache.n_lines == 3 and cache.n_torn == 1
    assert cache.get("a")["text"] == "one again" and "c" not in cache
    cache.append({"key": "c", "text": "three"})  # must start on a fresh line
    cache.close()
    lines = path.read_text().splitlines()
    assert lines[-1] == '{"key": "c", "text": "three"}'
    reread = CallCache.load(path)
    assert reread.n_torn == 1 and reread.get("c")["text"] == "three" and len(reread.records) == 3


def test_cache_background_writer_keeps_every_record_in_order(tmp_path):
    """Appends from several threads inside ``background()``: visible at once, all on disk after the block."""
    import threading

    path = tmp_path / "calls.jsonl"
    cache = CallCache.load(path)
    cache.append({"key": "first", "n": -1})
    with cache.background():
        def work(t: int) -> None:
            for i in range(50):
                cache.append({"key": f"{t}-{i}", "n": i})

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert cache.get("3-49") == {"key": "3-49", "n": 49}  # in memory before the writer is done
    assert not cache.writing_in_background
    cache.append({"key": "last", "n": 0})  # written synchronously again
    cache.close()
    keys = [json.loads(line)["key"] for line in path.read_text().splitlines()]
    assert len(keys) == 202 and keys[0] == "first" and keys[-1] == "last"
    for t in range(4):  # each thread's records in its own order
        assert [k for k in keys if k.startswith(f"{t}-")] == [f"{t}-{i}" for i in range(50)]
    assert len(CallCache.load(path).records) == 202


def test_cache_background_write_error_is_raised(tmp_path):
    cache = CallCache.load(tmp_path / "missing-dir-is-a-file" / "calls.jsonl")
    (tmp_path / "missing-dir-is-a-file").write_text("not a folder")
    with pytest.raises(OSError), cache.background():
        cache.append({"key": "a"})


# ------------------------------------------------------------------------------------------------- config


def _write(tmp_path, text: str) -> Path:
    p = tmp_path / "eval.yaml"
    p.write_text(text)
    return p


MINIMAL = "name: t\ndataset: d\nbackend:\n  kind: openai\n  options: {model: gpt-x}\n"


def test_config_defaults_and_overrides(tmp_path):
    cfg = EvalConfig.from_yaml(_write(tmp_path, MINIMAL), {"generation.temperature": 0.7, "limit": 3,
                                                           "backend.options.model": "m"})
    assert cfg.split == "test" and cfg.protocol == "v1.0" and cfg.samples_per_unit == 1 and cfg.resume
    assert cfg.dimensions == ["readability", "structure", "comprehensiveness", "criticalness"]
    assert cfg.generation.temperature == 0.7 and cfg.generation.max_new_tokens == 512
    assert cfg.limit == 3 and cfg.backend.options == {"model": "m"}
    assert cfg.run_dir == Path("runs/eval/t")


@pytest.mark.parametrize(
    "extra, needle",
    [
        ("not_a_key: 1\n", "not_a_key"),
        ("generation:\n  temprature: 0.5\n", "generation.temprature"),
        ("protocol: v2\n", "protocol"),
        ("dimensions: [novelty]\n", "novelty"),
        ("samples_per_unit: 0\n", "samples_per_unit"),
        ("rqs:\n  backend: {kind: constant}\n  judge_prompt: x\n", "rqs.judge_prompt"),
        ("backend:\n  kind: gpt\n", "unknown backend kind 'gpt'"),
        ("backend:\n  kind: openai\n  options: {model: m, temprature: 0.1}\n", "temprature"),
        ("backend:\n  kind: transformers\n  options: {model: m}\n  per_dimension: {structure: {adaptor: a}}\n",
         "per_dimension.structure"),
    ],
)
def test_config_errors_name_file_and_key(tmp_path, extra, needle):
    path = _write(tmp_path, MINIMAL + extra)
    with pytest.raises(EvalConfigError) as info:
        EvalConfig.from_yaml(path)
    assert str(path) in str(info.value) and needle in str(info.value)


def test_config_unknown_override_key_rejected(tmp_path):
    with pytest.raises(EvalConfigError, match="generation.temp"):
        EvalConfig.from_yaml(_write(tmp_path, MINIMAL), {"generation.temp": 0.3})


def test_cli_flags_become_overrides(tmp_path):
    from surveyalign.cli import build_parser

    args = build_parser().parse_args([
        "evaluate", "--config", "x.yaml", "--set", "generation.temperature=0.7", "--set", "dimensions=[structure]",
        "--limit", "4", "--model", "qwen", "--base-url", "http://127.0.0.1:9/v1", "--no-resume",
        "--allow-training-mismatch",
    ])
    over = overrides_from_args(args)
    assert over == {"generation.temperature": 0.7, "dimensions": ["structure"], "limit": 4,
                    "backend.options.model": "qwen", "backend.options.base_url": "http://127.0.0.1:9/v1",
                    "resume": False, "allow_training_mismatch": True}
    cfg = EvalConfig.from_yaml(_write(tmp_path, MINIMAL), over)
    assert cfg.dimensions == ["structure"] and cfg.resume is False and cfg.allow_training_mismatch is True
    assert EvalConfig.from_yaml(_write(tmp_path, MINIMAL)).allow_training_mismatch is False


def test_model_and_samples_overrides_rename_the_judge_and_its_run_folder(tmp_path):
    """Finding: two runs with other --model (or --samples 1 of a K=5 config) were labelled and stored alike."""
    from surveyalign.cli import build_parser
    from surveyalign.evaluation.cli import name_from_overrides

    def resolved(yaml_text: str, *flags: str) -> EvalConfig:
        args = build_parser().parse_args(["evaluate", "--config", str(_write(tmp_path, yaml_text)), *flags])
        return name_from_overrides(EvalConfig.from_yaml(args.config, overrides_from_args(args)), args)

    server = "name: Qwen3-32B (zero-shot, server)\ndataset: d\nbackend:\n  kind: openai\n  options: {model: q}\n"
    a = resolved(server, "--model", "Qwen/Qwen3-8B")
    b = resolved(server, "--model", "Qwen/Qwen3-14B", "--samples", "1")
    assert a.name == "Qwen3-32B (zero-shot, server) [model=Qwen/Qwen3-8B]"
    assert b.name == "Qwen3-32B (zero-shot, server) [model=Qwen/Qwen3-14B, K=1]"
    assert a.run_dir == Path("runs/eval/Qwen3-32B-zero-shot-server-model-Qwen-Qwen3-8B")
    assert a.run_dir != b.run_dir != resolved(server).run_dir
    assert resolved(server).name == "Qwen3-32B (zero-shot, server)"  # no override: unchanged
    assert resolved(server, "--model", "x", "--name", "mine").name == "mine"  # --name wins

    k5 = "name: SurveyAlign (LoRA, K=5)\nrun_name: sa-k5\nsamples_per_unit: 5\ndataset: d\nbackend:\n" \
         "  kind: transformers\n  options: {model: q}\n"
    one = resolved(k5, "--samples", "1")
    assert one.name == "SurveyAlign (LoRA, K=1)" and one.samples_per_unit == 1
    assert one.run_dir == Path("runs/eval/sa-k5-K-1")  # the YAML's run_name gets the suffix
    adapter = tmp_path / "crit-dpo"
    adapter.mkdir()
    both = resolved(k5, "--adapter", str(adapter), "--samples", "3", "--run-name", "keep")
    assert both.name == "SurveyAlign (LoRA, K=3) [adapter=crit-dpo]" and both.run_dir == Path("runs/eval/keep")


def test_secret_options_are_redacted():
    cfg = EvalConfig.from_dict(json.loads(json.dumps({
        "name": "t", "dataset": "d",
        "backend": {"kind": "openai", "options": {"model": "m", "api_key_env": "MY_KEY", "extra_body": {
            "api_key": "sk-abc", "metadata": {"Authorization": "Bearer z", "user": "u1"}}}},
    })))
    desc = json.dumps(cfg.describe())
    assert "sk-abc" not in desc and "Bearer z" not in desc
    assert "MY_KEY" in desc and "u1" in desc


@pytest.mark.parametrize("path", EVAL_YAMLS, ids=lambda p: p.name)
def test_every_shipped_eval_yaml_parses(path):
    cfg = EvalConfig.from_yaml(path)
    assert cfg.backend.kind in {"openai", "anthropic", "transformers", "vllm", "ray", "constant", "scripted"}


def test_baseline_configs_present():
    names = {p.name for p in EVAL_YAMLS}
    assert {"gpt-5.2.yaml", "claude-opus-4.5.yaml", "qwen3-32b-vllm.yaml", "qwen3-32b-api.yaml",
            "surveyalign-adapter.yaml", "constant-minus1.yaml", "constant-plus1.yaml", "tiny-smoke.yaml"} <= names
    plus = EvalConfig.from_yaml(REPO / "configs/eval/constant-plus1.yaml")
    assert plus.backend.options["score"] == 1 and plus.run_dir == Path("runs/eval/constant-plus1")


# ------------------------------------------------------------------------------------------------- consistency


@pytest.mark.parametrize(
    "text, score",
    [
        ("Both criticise the missing 2023 works. <consistency>0.8</consistency>", 0.8),
        ("Unrelated points. <consistency>0.0</consistency>", 0.0),  # 0.0 is a score, not a failure
        ("<consistency> 0 </consistency>", 0.0),
        ("<consistency>1</consistency>", 1.0),
        ("<consistency>.4</consistency>", 0.4),
        ("<think>maybe <consistency>1.0</consistency></think>Final: <consistency>0.2</consistency>", 0.2),
        ("first <consistency>0.4</consistency> then <consistency>0.6</consistency>", 0.6),
        ("<CONSISTENCY>0.60</CONSISTENCY>", 0.6),
    ],
)
def test_parse_consistency_valid(text, score):
    parsed = parse_rqs_rating(text)
    assert parsed.score == score and parsed.error is None


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "empty"),
        ("I would say 0.6", "no <consistency>"),
        ("<consistency>0.5</consistency>", "not one of"),
        ("<consistency>high</consistency>", "not a number"),
        ("<consistency>1.2</consistency>", "not one of"),
        ("<think><consistency>0.6</consistency></think>", "no <consistency>"),
        ("<think>still thinking <consistency>0.6</consistency>", "no <consistency>"),  # cut-off think block
    ],
)
def test_parse_consistency_invalid(text, reason):
    parsed = parse_rqs_rating(text)
    assert parsed.score is None and reason in parsed.error


def test_consistency_prompt_carries_all_inputs():
    (msg,) = build_rqs_messages("criticalness", title="A Survey of X",
                                        reference=["Lacks synthesis.", "Only summarises."],
                                        prediction="Mostly descriptive.")
    content = msg["content"]
    assert msg["role"] == "user"
    for piece in ("Criticalness", "A Survey of X", "- Lacks synthesis.\n- Only summarises.", "Mostly descriptive.",
                  "0.0", "0.2", "0.4", "0.6", "0.8", "1.0", "<consistency>"):
        assert piece in content


@pytest.mark.parametrize("path", EVAL_YAMLS, ids=lambda p: p.name)
def test_shipped_eval_yaml_backend_options_are_accepted(path):
    import inspect

    from surveyalign.backends import backend_class

    cfg = EvalConfig.from_yaml(path)
    missing = []  # backends whose package is absent: every other backend of the file is still checked first
    for cfg_backend in [cfg.backend] + ([cfg.rqs.backend] if cfg.rqs else []):
        try:
            cls = backend_class(cfg_backend.kind)
        except ImportError:
            missing.append(cfg_backend.kind)
            continue
        valid = set(inspect.signature(cls.__init__).parameters) - {"self"}
        for dim in [None, *cfg_backend.per_dimension]:
            assert set(cfg_backend.options_for(dim)) <= valid, (path.name, dim)
    if missing:
        pytest.skip(f"the {', '.join(missing)} backend needs a package that is not installed here "
                    "(vllm: pip install surveyalign[gpu])")


def test_adapter_flag_replaces_per_dimension_adapters(repo_root):
    from surveyalign.evaluation import EvalConfig
    from surveyalign.evaluation.cli import adapter_for_every_dimension

    config = EvalConfig.from_yaml(repo_root / "configs" / "eval" / "surveyalign-adapter.yaml")
    assert config.backend.per_dimension, "the shipped config names one adapter per dimension"
    swapped = adapter_for_every_dimension(config, "runs/my-adapter")
    for dimension in config.dimensions:
        assert swapped.backend.options_for(dimension)["adapter"] == "runs/my-adapter"
    assert config.backend.options_for("readability")["adapter"] != "runs/my-adapter"  # the original is untouched
