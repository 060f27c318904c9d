"""Training and pair files refuse to mix runs (surveyalign/training/rundir.py, pairs.py, recipes/sft.py): an SFT or
DPO ``output_dir`` holding another run's settings is refused unless ``--resume`` (recorded) or ``--overwrite``
(its checkpoints deleted); DPO pairs carry the SFT adapter's fingerprint and pairs made by another adapter are made
again, not kept. Real TRL argument objects from the shipped tiny configs, real files; no training step runs."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("trl", reason="TRL (the train extra) is not installed: pip install -e '.[train]'")

from surveyalign.training import RUN_SETTINGS, guard_output_dir

REPO = Path(__file__).resolve().parents[1]


def _recipe(kind: str):
    spec = importlib.util.spec_from_file_location(f"_rundir_recipe_{kind}", REPO / "recipes" / f"{kind}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sft_args(out: Path, *extra: str, model: str = "/models/tiny", dataset: str = "/data/sr"):
    return _recipe("sft").make_parser().parse_args_and_config([
        "--config", "configs/sft/tiny-readability.yaml", "--model_name_or_path", model, "--dataset_path", dataset,
        "--output_dir", str(out), *extra])


def test_same_settings_resume_other_settings_are_refused_unless_resume_or_overwrite(tmp_path):
    out = tmp_path / "sft"
    first = guard_output_dir(*_sft_args(out))
    assert (first.resume, first.changed, first.overwritten) == (False, [], False) and not out.exists()
    first.commit()  # right before training: the settings are written
    saved = json.loads((out / RUN_SETTINGS).read_text())
    assert saved["script"]["dimension"] == "readability" and saved["model"]["lora_r"] == 8
    assert saved["training"]["learning_rate"] == 5e-05 and "resume" not in saved["script"]
    (out / "checkpoint-2").mkdir()  # what the first run left
    assert guard_output_dir(*_sft_args(out)).resume is True  # the same run again: resumes as before

    with pytest.raises(ValueError) as refused:  # another learning rate and LoRA rank into the same folder
        guard_output_dir(*_sft_args(out, "--learning_rate", "1e-4", "--lora_r", "4"))
    assert str(refused.value) == (
        f"{out} holds another run (model.lora_r: 8 -> 4; training.learning_rate: 5e-05 -> 0.0001); pass --resume "
        "to continue its checkpoint with these settings, --overwrite to start again there, or another --output_dir")
    assert json.loads((out / RUN_SETTINGS).read_text()) == saved  # a refused run writes nothing

    resumed = guard_output_dir(*_sft_args(out, "--learning_rate", "1e-4", "--resume"))
    assert (resumed.resume, resumed.changed) == (True, ["training.learning_rate: 5e-05 -> 0.0001"])
    resumed.commit()
    assert json.loads((out / RUN_SETTINGS).read_text())["training"]["learning_rate"] == 0.0001

    fresh = guard_output_dir(*_sft_args(out, "--dimension", "structure", "--overwrite"))
    assert (fresh.resume, fresh.overwritten) == (False, True) and (out / "checkpoint-2").exists()
    fresh.commit()
    assert not (out / "checkpoint-2").exists()
    assert json.loads((out / RUN_SETTINGS).read_text())["script"]["dimension"] == "structure"
    with pytest.raises(ValueError, match="^--resume and --overwrite exclude each other"):
        guard_output_dir(*_sft_args(out, "--resume", "--overwrite"))


def test_a_checkpoint_without_recorded_settings_is_refused(tmp_path):
    out = tmp_path / "old"
    (out / "checkpoint-5").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"holds another run \(the earlier run's settings were not recorded\)"):
        guard_output_dir(*_sft_args(out))
    assert guard_output_dir(*_sft_args(out, "--resume")).changed == ["the earlier run's settings were not recorded"]


def test_the_sft_recipe_refuses_before_loading_anything(tiny_model_dir, dataset_dir, tmp_path):
    out = tmp_path / "sft"
    guard_output_dir(*_sft_args(out, model=str(tiny_model_dir), dataset=str(dataset_dir))).commit()
    (out / "checkpoint-1").mkdir()
    with pytest.raises(ValueError, match=r"holds another run \(script.max_train_samples: 16 -> 4\)"):
        _recipe("sft").main(*_sft_args(out, "--max_train_samples", "4", model=str(tiny_model_dir),
                                       dataset=str(dataset_dir)))
    assert not (out / "training_log.jsonl").exists()


def _adapter(folder: Path, tiny_model_dir: Path, rank: int) -> Path:
    folder.mkdir()
    (folder / "surveyalign_training.json").write_text(json.dumps(
        {"dimension": "criticalness", "protocol": "v1.0", "enable_thinking": False, "use_knowledge": True,
         "base_model": str(tiny_model_dir)}))
    (folder / "adapter_config.json").write_text(json.dumps({"r": rank, "lora_alpha": 16}))
    return folder


def test_pairs_made_by_another_adapter_are_made_again(tiny_model_dir, ka_dataset_dir, tmp_path):
    from surveyalign.backends import load_backend
    from surveyalign.backends.fingerprint import adapter_fingerprint
    from surveyalign.training import make_dpo_pairs, read_pairs

    first = _adapter(tmp_path / "sft-a", tiny_model_dir, 8)
    second = _adapter(tmp_path / "sft-b", tiny_model_dir, 4)
    sampler = load_backend("scripted", replies=lambda m, s, i: "Deep synthesis.$$$2$$$" if i else "Shallow.$$$-1$$$")
    out = tmp_path / "pairs.jsonl"
    args = {"k": 2, "limit": 3, "max_new_tokens": 64, "max_length": 2048, "sampler": sampler}
    made = make_dpo_pairs(str(ka_dataset_dir), str(first), out, **args)
    assert (made.n_paired, made.n_remade_stale) == (3, 0)
    print_a = adapter_fingerprint(first)["sha256"]
    assert {r["adapter_fingerprint"] for r in read_pairs(out)} == {print_a}

    again = make_dpo_pairs(str(ka_dataset_dir), str(first), out, **args)  # same adapter: kept
    assert (again.n_skipped_existing, again.n_paired, again.n_remade_stale) == (3, 0, 0)

    shutil.copy(first / "surveyalign_training.json", second / "surveyalign_training.json")
    remade = make_dpo_pairs(str(ka_dataset_dir), str(second), out, **args)  # another adapter: remade
    assert (remade.n_remade_stale, remade.n_skipped_existing, remade.n_paired, remade.n_paired_in_file) == (3, 0, 3, 3)
    records = read_pairs(out, paired_only=False)
    assert len(records) == 3 and {r["adapter_fingerprint"] for r in records} == {adapter_fingerprint(second)["sha256"]}
    assert "3 record(s) made by another adapter removed and made again" in remade.describe()

    lines = out.read_text().splitlines()  # a record from a version that did not record the fingerprint
    legacy = json.loads(lines[0])
    del legacy["adapter_fingerprint"]
    out.write_text("\n".join([json.dumps(legacy), *lines[1:]]) + "\n")
    fixed = make_dpo_pairs(str(ka_dataset_dir), str(second), out, **args)
    assert (fixed.n_remade_stale, fixed.n_skipped_existing, fixed.n_paired) == (1, 2, 1)


def test_the_dpo_recipe_refuses_pairs_sampled_from_another_adapter(tiny_model_dir, ka_dataset_dir, tmp_path):
    from surveyalign.backends import load_backend
    from surveyalign.training import make_dpo_pairs, read_dpo_inputs

    first = _adapter(tmp_path / "sft-a", tiny_model_dir, 8)
    second = _adapter(tmp_path / "sft-b", tiny_model_dir, 4)
    sampler = load_backend("scripted", replies=lambda m, s, i: "Deep synthesis.$$$2$$$" if i else "Shallow.$$$-1$$$")
    out = tmp_path / "pairs.jsonl"
    make_dpo_pairs(str(ka_dataset_dir), str(first), out, k=2, limit=2, max_new_tokens=64, max_length=2048,
                   sampler=sampler)

    def inputs(adapter: Path):
        script, _, model = _recipe("dpo").make_parser().parse_args_and_config([
            "--config", "configs/dpo/tiny-criticalness.yaml", "--sft_adapter", str(adapter), "--pairs_path", str(out),
            "--output_dir", str(tmp_path / "dpo")])
        return read_dpo_inputs(script, model)

    assert len(inputs(first).pairs) == 2
    with pytest.raises(ValueError) as refused:
        inputs(second)
    unit = json.loads(out.read_text().splitlines()[0])["unit_id"]
    assert str(refused.value) == (f"{out}: pair 1 ({unit}) was sampled from another adapter than {second} "
                                  f"(adapter_fingerprint differs); re-make the pairs with `surveyalign train dpo-pairs "
                                  f"--adapter {second}`")
