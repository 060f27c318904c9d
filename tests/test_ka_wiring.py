"""Knowledge augmentation cannot be lost silently between the KA dataset, training and evaluation (SurveyAlign §5.2.3,
SurveyReview App. F): training with ``use_knowledge`` on rows without knowledge is refused in one line (override
``allow_missing_knowledge``, recorded), the training record counts the examples that carried knowledge, and
evaluation compares that count with the units it judges.

Real pieces: the sample release built with ``datasets``, its KA version from ``surveyalign ka build``
(``ka_dataset_dir``), the tiny Qwen3, the recipes run in a subprocess and through their ``main``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _recipe(kind: str):
    spec = importlib.util.spec_from_file_location(f"_ka_recipe_{kind}", REPO / "recipes" / f"{kind}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _refusal(dataset: Path, split: str = "train", why: str = "the dataset has no `knowledge` column") -> str:
    return (f"{dataset}: use_knowledge is true but no {split} row of criticalness carries a knowledge text ({why}); "
            f"build the KA dataset with `surveyalign ka build --dataset {dataset} --graph GRAPH --out {dataset}-ka "
            f"--config configs/ka/default.yaml` and train on {dataset}-ka, or ")


# --- training -----------------------------------------------------------------------------------------------------


def test_sft_recipe_on_a_dataset_without_knowledge_exits_with_one_line(tiny_model_dir, dataset_dir, tmp_path):
    """configs/sft/tiny-criticalness.yaml (use_knowledge: true, as configs/sft/criticalness.yaml) on the plain
    sample release: exit 2, one line naming the folder and the `ka build` command, nothing trained."""
    out = tmp_path / "out"
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.pop("SURVEYALIGN_TRACEBACK", None)
    proc = subprocess.run([sys.executable, "recipes/sft.py", "--config", "configs/sft/tiny-criticalness.yaml",
                           "--model_name_or_path", str(tiny_model_dir), "--dataset_path", str(dataset_dir),
                           "--output_dir", str(out)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert errors == ["recipes/sft.py: error: ValueError: " + _refusal(dataset_dir)
                      + "set use_knowledge: false (plain prompts) or allow_missing_knowledge: true to train without "
                        "it (recorded)"]
    assert not out.exists()


def test_the_paper_config_is_refused_before_the_32b_base_is_looked_up(dataset_dir, tmp_path):
    """configs/sft/comprehensiveness.yaml as shipped (Qwen/Qwen3-32B, offline) on the plain dataset: the refusal
    comes from the data alone, before the tokenizer or the model is asked for (no Hub error)."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env.pop("SURVEYALIGN_TRACEBACK", None)
    proc = subprocess.run([sys.executable, "recipes/sft.py", "--config", "configs/sft/comprehensiveness.yaml",
                           "--dataset_path", str(dataset_dir), "--output_dir", str(tmp_path / "out")], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=600, check=False)
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert proc.returncode == 2 and len(errors) == 1 and "Traceback" not in proc.stderr
    assert errors[0].startswith("recipes/sft.py: error: ValueError: " + _refusal(dataset_dir).replace(
        "criticalness", "comprehensiveness"))
    assert not (tmp_path / "out").exists()


def _blank_knowledge(ka_dataset_dir: Path, out: Path) -> Path:
    """A copy of the KA dataset whose criticalness train rows all have an empty `knowledge` text."""
    from surveyalign.data import load_surveyreview

    shutil.copytree(ka_dataset_dir, out, copy_function=shutil.copy)  # new mtimes: a new datasets cache key
    rows = load_surveyreview(ka_dataset_dir, "criticalness", split="train").map(lambda row: {"knowledge": ""})
    rows.to_parquet(str(out / "data" / "criticalness" / "train.parquet"))
    return out


def _sft_args(tiny_model_dir: Path, dataset: Path, out: Path, *extra: str):
    return _recipe("sft").make_parser().parse_args_and_config([
        "--config", "configs/sft/tiny-criticalness.yaml", "--model_name_or_path", str(tiny_model_dir),
        "--dataset_path", str(dataset), "--output_dir", str(out), "--max_train_samples", "6", "--max_steps", "1",
        "--eval_strategy", "no", "--load_best_model_at_end", "false", "--save_strategy", "no", *extra])


def test_an_all_empty_knowledge_column_is_refused_too(tiny_model_dir, ka_dataset_dir, tmp_path):
    folder = _blank_knowledge(ka_dataset_dir, tmp_path / "surveyreview-blank")
    with pytest.raises(ValueError) as caught:
        _recipe("sft").main(*_sft_args(tiny_model_dir, folder, tmp_path / "out"))
    assert str(caught.value).startswith(_refusal(folder, why="the `knowledge` column is empty in all 6 rows"))
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def trained(tiny_model_dir, dataset_dir, ka_dataset_dir, tmp_path_factory) -> dict[str, Path]:
    """Two one-step Criticalness SFT runs of 6 units through recipes/sft.py's main: on the KA dataset, and on the
    plain one with allow_missing_knowledge."""
    root = tmp_path_factory.mktemp("ka-wiring")
    recipe = _recipe("sft")
    recipe.main(*_sft_args(tiny_model_dir, ka_dataset_dir, root / "ka"))
    recipe.main(*_sft_args(tiny_model_dir, dataset_dir, root / "allowed", "--allow_missing_knowledge", "true"))
    return {"ka": root / "ka", "allowed": root / "allowed"}


def test_the_training_record_counts_the_examples_with_knowledge(trained, ka_dataset_dir):
    from surveyalign.data import load_surveyreview
    from surveyalign.models import read_training_record

    first6 = load_surveyreview(ka_dataset_dir, "criticalness", split="train").select(range(6))
    assert sum(bool(text.strip()) for text in first6["knowledge"]) == 6  # each of the 6 has a Crit-KA text
    record = read_training_record(trained["ka"])
    assert (record["use_knowledge"], record["n_train"], record["n_train_with_knowledge"],
            record["allow_missing_knowledge"]) == (True, 6, 6, False)
    allowed = read_training_record(trained["allowed"])
    assert (allowed["use_knowledge"], allowed["n_train"], allowed["n_train_with_knowledge"],
            allowed["allow_missing_knowledge"]) == (True, 6, 0, True)


# --- evaluation ---------------------------------------------------------------------------------------------------


def _config(dataset: Path, adapter: Path, **fields):
    from surveyalign.evaluation import EvalConfig

    return EvalConfig.from_dict({
        "name": "ka-check", "dataset": str(dataset), "dimensions": ["criticalness"], "progress": False,
        "bootstrap": 0, "output_dir": "runs/never-written",
        "backend": {"kind": "transformers", "options": {"model": "tiny", "adapter": str(adapter), "device": "cpu"}},
        **fields})


def _check(config):
    from rich.console import Console

    from surveyalign.evaluation.adapters import check_training_records
    from surveyalign.evaluation.units import load_units

    console = Console(record=True, width=400)
    summary = check_training_records(config, load_units(config)[0], None, console)
    return summary["criticalness"], console.export_text()


def test_a_knowledge_trained_adapter_on_plain_units_is_refused_naming_both_counts(trained, dataset_dir, tmp_path):
    """Before any model is loaded: the KA adapter (6/6) on the plain dataset's 12 Criticalness test units."""
    from surveyalign.evaluation import TrainingMismatchError, run_evaluation

    config = _config(dataset_dir, trained["ka"], output_dir=str(tmp_path / "runs"))
    with pytest.raises(TrainingMismatchError) as caught:
        run_evaluation(config)
    assert str(caught.value).splitlines()[1] == (
        f"  adapter {trained['ka']} (judging criticalness): trained with knowledge in 6/6 training examples; this "
        f"evaluation has knowledge in 0/12 units of criticalness (config keys: dataset, a KA dataset of "
        f"`surveyalign ka build`; knowledge_dimensions)")
    assert not (tmp_path / "runs" / "ka-check" / "calls.jsonl").exists()
    # allow_training_mismatch: evaluated anyway, the mismatch with both counts is recorded
    entry, printed = _check(config.model_copy(update={"allow_training_mismatch": True}))
    assert entry["knowledge"] == {"train": [6, 6], "evaluation": [0, 12]}
    assert entry["mismatches"] == [{"field": "knowledge", "adapter": "trained with knowledge in 6/6 training examples",
                                    "evaluation": "this evaluation has knowledge in 0/12 units of criticalness "
                                                  "(config keys: dataset, a KA dataset of `surveyalign ka build`; "
                                                  "knowledge_dimensions)"}]
    assert "allow_training_mismatch: evaluating despite" in printed
    assert (entry["record"]["n_train"], entry["record"]["n_train_with_knowledge"]) == (6, 6)


def test_the_knowledge_trained_adapter_on_the_ka_dataset_passes(trained, ka_dataset_dir):
    entry, _ = _check(_config(ka_dataset_dir, trained["ka"]))
    # 11 of the 12 test units have a Crit-KA text (sr0016: no paper of R+ reaches a threshold, an empty record)
    assert entry["mismatches"] == [] and entry["knowledge"] == {"train": [6, 6], "evaluation": [11, 12]}
    # the same units without knowledge_dimensions: the KA text is left out of every prompt -> refused
    with pytest.raises(ValueError, match=r"trained with knowledge in 6/6 training examples; this evaluation has "
                                         r"knowledge in 0/12 units of criticalness"):
        _check(_config(ka_dataset_dir, trained["ka"], knowledge_dimensions=[]))


def test_a_use_knowledge_record_trained_without_any_is_flagged(trained, ka_dataset_dir, dataset_dir):
    """allow_missing_knowledge trained a KA-flagged adapter on plain prompts (0/6): flagged on any units."""
    for dataset, n_eval_with in ((ka_dataset_dir, 11), (dataset_dir, 0)):
        with pytest.raises(ValueError) as caught:
            _check(_config(dataset, trained["allowed"]))
        assert str(caught.value).splitlines()[1] == (
            f"  adapter {trained['allowed']} (judging criticalness): use_knowledge true but knowledge in 0/6 "
            f"training examples (trained on a dataset without a `knowledge` column: retrain it on the KA dataset of "
            f"`surveyalign ka build`); knowledge in {n_eval_with}/12 units of criticalness")


def _hand_record(folder: Path, **fields) -> Path:
    from surveyalign.models import write_training_record

    folder.mkdir(parents=True)
    write_training_record(folder, {"stage": "sft", "dimension": "criticalness", "protocol": "v1.0",
                                   "enable_thinking": False, **fields})
    return folder


def test_a_plain_adapter_on_units_with_knowledge_is_refused(ka_dataset_dir, tmp_path):
    adapter = _hand_record(tmp_path / "plain", use_knowledge=False, n_train=20)
    with pytest.raises(ValueError) as caught:
        _check(_config(ka_dataset_dir, adapter))
    assert str(caught.value).splitlines()[1] == (
        f"  adapter {adapter} (judging criticalness): trained without knowledge (knowledge in 0/20 training "
        f"examples); this evaluation has knowledge in 11/12 units of criticalness (config key: knowledge_dimensions)")
    entry, _ = _check(_config(ka_dataset_dir, adapter, knowledge_dimensions=[]))  # KA column left out: fine
    assert entry["mismatches"] == [] and entry["knowledge"] == {"train": [0, 20], "evaluation": [0, 12]}


def test_an_sft_record_without_the_count_is_read_from_its_length_report(dataset_dir, tmp_path):
    """A record written before n_train_with_knowledge existed: the SFT length report's count is used, so an
    adapter flagged use_knowledge that saw no knowledge (0 of 16) is still caught."""
    from surveyalign.evaluation.adapters import trained_knowledge

    old = {"use_knowledge": True, "n_train": 16, "length": {"train": {"n_units": 16, "n_with_knowledge": 0}}}
    assert trained_knowledge(old) == (0, 16)
    assert trained_knowledge({"use_knowledge": False, "n_train": 5}) == (0, 5)
    assert trained_knowledge({"use_knowledge": True, "stage": "dpo", "n_train": 8}) == (None, 8)  # unknown
    adapter = _hand_record(tmp_path / "old", **old)
    with pytest.raises(ValueError, match=r"use_knowledge true but knowledge in 0/16 training examples"):
        _check(_config(dataset_dir, adapter))


# --- DPO pairs and the DPO recipe -----------------------------------------------------------------------------------


@pytest.fixture()
def crit_record(tmp_path, tiny_model_dir) -> Path:
    """An adapter folder holding only a Criticalness training record with use_knowledge: true."""
    return _hand_record(tmp_path / "crit-adapter", use_knowledge=True, n_train=16, n_train_with_knowledge=16,
                        base_model=str(tiny_model_dir))


def test_dpo_pairs_on_a_dataset_without_knowledge_is_one_line(crit_record, dataset_dir, tmp_path, capsys):
    from surveyalign.cli import main

    code = main(["train", "dpo-pairs", "--adapter", str(crit_record), "--dataset", str(dataset_dir),
                 "--out", str(tmp_path / "p.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    # (the dataset's first load may draw a progress bar on stderr before it)
    assert [line for line in err.splitlines() if "error:" in line] == [
        "surveyalign train: error: ValueError: " + _refusal(dataset_dir) + "pass --no-knowledge (plain prompts, for "
        "an adapter trained without knowledge) or --allow-missing-knowledge to make the pairs without it (recorded)"]
    assert not (tmp_path / "p.jsonl").exists()


def test_dpo_recipe_refuses_pairs_without_knowledge_unless_allowed(crit_record, tiny_model_dir, dataset_dir,
                                                                   ka_dataset_dir, tmp_path):
    from surveyalign.backends import load_backend
    from surveyalign.training import make_dpo_pairs, read_dpo_inputs, read_pairs

    sampler = load_backend("scripted", replies=lambda m, s, i: "Deep.$$$2$$$" if i else "Shallow.$$$-1$$$")
    plain = tmp_path / "plain-pairs.jsonl"
    summary = make_dpo_pairs(str(dataset_dir), str(crit_record), plain, k=2, limit=3, max_new_tokens=16,
                             max_length=4096, sampler=sampler, allow_missing_knowledge=True)
    assert summary.n_paired == 3
    assert [(p["use_knowledge"], p["with_knowledge"], p["allow_missing_knowledge"]) for p in read_pairs(plain)] == \
        [(True, False, True)] * 3
    with_ka = tmp_path / "ka-pairs.jsonl"
    make_dpo_pairs(str(ka_dataset_dir), str(crit_record), with_ka, k=2, limit=3, max_new_tokens=16,
                   max_length=4096, sampler=sampler)
    assert [p["with_knowledge"] for p in read_pairs(with_ka)] == [True] * 3

    parser = _recipe("dpo").make_parser()

    def inputs(pairs: Path, *extra: str):
        script, _, model = parser.parse_args_and_config([
            "--config", "configs/dpo/tiny-criticalness.yaml", "--sft_adapter", str(crit_record), "--pairs_path",
            str(pairs), "--output_dir", str(tmp_path / "out"), *extra])
        return read_dpo_inputs(script, model)

    with pytest.raises(ValueError) as caught:
        inputs(plain)
    assert str(caught.value) == (
        f"{plain}: use_knowledge is true but none of the 3 pairs' prompts carries a knowledge block (made from "
        f"{dataset_dir}, which has no `knowledge` text); build the KA dataset with `surveyalign ka build --dataset "
        f"{dataset_dir} --graph GRAPH --out {dataset_dir}-ka --config configs/ka/default.yaml` and re-make the pairs "
        f"with `surveyalign train dpo-pairs --dataset {dataset_dir}-ka`, or set allow_missing_knowledge: true to "
        f"train without it (recorded)")
    assert (inputs(plain, "--allow_missing_knowledge", "true").n_with_knowledge, inputs(with_ka).n_with_knowledge) \
        == (0, 3)
    legacy = tmp_path / "legacy-pairs.jsonl"  # a file from before with_knowledge: the count is unknown
    legacy.write_text("".join(json.dumps({k: v for k, v in p.items() if k != "with_knowledge"}) + "\n"
                              for p in read_pairs(plain)))
    assert inputs(legacy).n_with_knowledge is None
