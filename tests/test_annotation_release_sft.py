"""The SFT recipe runs unchanged on a release written by `surveyalign data release` (issue 24 §6): made-up inputs
-> collect -> annotate (scripted judge) -> release (the LLM's labels, --allow-llm, rule recorded) -> `data build`
-> `recipes/sft.py` under accelerate (tiny Qwen3, configs/sft/tiny-readability.yaml) -> a rank-8 adapter with its
training record naming the built release. Slow (about 35 s on a loaded 2-core machine, most of it the accelerate
launch): the default suite already trains on the sample release (test_training.py) and builds a release made by
`data release` (test_annotation_pipeline.py); CI runs the slow suite."""

from __future__ import annotations

import json

import pytest
import yaml
from annotation_fixtures import _answer_for, write_inputs
from test_training import ACCELERATE_1, check_adapter, run_recipe

from surveyalign.cli import main

pytestmark = pytest.mark.slow


def test_sft_recipe_trains_on_a_built_release(tmp_path, tiny_model_dir):
    from surveyalign.annotation import read_reviews
    from surveyalign.data import load_surveyreview
    from surveyalign.models import read_training_record
    from surveyalign.training import data_hash

    inputs = write_inputs(tmp_path)
    assert main(["data", "collect", str(inputs["reviews"]), "--texts", str(inputs["texts"]), "--out",
                 str(tmp_path / "collected")]) == 0
    reviews = read_reviews(tmp_path / "collected")
    judge = tmp_path / "judge.yaml"
    judge.write_text(yaml.safe_dump({"backend": {"kind": "scripted", "options": {
        "replies": [_answer_for(r.text) for r in reviews]}}}))
    assert main(["data", "annotate", "--reviews", str(tmp_path / "collected"), "--judge", str(judge), "--out",
                 str(tmp_path / "annotated")]) == 0
    assert main(["data", "release", "--collected", str(tmp_path / "collected"), "--llm", str(tmp_path / "annotated"),
                 "--allow-llm", "--out", str(tmp_path / "release")]) == 0
    prov = json.loads((tmp_path / "release" / "provenance.json").read_text())
    # 9 reviews; the judge's answer to "Fine work." (moprd-9999) is unreadable, so that review has no label
    assert len(reviews) == 9 and prov["final_label_rules"]["llm_unverified"] == 4 * 8
    assert prov["reviews_without_final_label"] == ["moprd-9999-1-r1"]
    built = tmp_path / "surveyreview"
    assert main(["data", "build", "--official", str(tmp_path / "release"), "--out", str(built)]) == 0
    train = load_surveyreview(built, "readability", split="train")
    validation = load_surveyreview(built, "readability", split="validation")
    assert (len(train), len(validation)) == (2, 2) and set(train["score"]) | set(validation["score"]) <= {-1, 1}
    # the release keeps labels 0 and -3 in its files; only the others reach the training data
    grouped = [r for f in sorted((tmp_path / "release").glob("*/grouped_*set.json")) for r in json.loads(f.read_text())]
    released = {r["uid"]: x["score"] for r in grouped for x in r["result"] if x["dimension"] == "Readability"}
    assert sorted(released.values()) == [-1.0, -1.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    kept = sorted([*train["review_id"], *validation["review_id"]])
    assert kept == sorted(u for u, s in released.items() if s not in (0, -3))

    adapter = tmp_path / "adapter"
    run_recipe([*ACCELERATE_1, "recipes/sft.py", "--config", "configs/sft/tiny-readability.yaml",
                "--model_name_or_path", str(tiny_model_dir), "--dataset_path", str(built),
                "--output_dir", str(adapter)], tmp_path / "sft.log")
    assert (adapter / "adapter_config.json").is_file() and (adapter / "adapter_model.safetensors").is_file()
    report = check_adapter(adapter, tiny_model_dir)  # rank 8 on the seven projections, every lora_B trained
    assert report.n_nonzero_b == 14
    record = read_training_record(adapter)
    assert (record["stage"], record["dimension"], record["n_train"], record["n_eval"]) == ("sft", "readability", 2, 2)
    assert record["data_hash"] == data_hash(train)
    build = json.loads((built / "build_report.json").read_text())
    assert record["data_version"] == (f"surveyreview@{build['input']['sha256'][:12]} seed 42 builder "
                                      f"{build['surveyalign_version']}")
    assert json.loads((adapter / "surveyalign_training.json").read_text())["dimension"] == "readability"
