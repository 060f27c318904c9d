"""The shipped configs connect: what a training config writes is what the evaluation, judge and study configs read
(SurveyAlign §5.1-§5.2, App. D; knowledge augmentation SurveyReview §5.2, App. F).

Every YAML under configs/sft, configs/dpo, configs/eval, configs/judge and configs/studies is loaded through its
real parser. The pairs checked:

* a training config with ``use_knowledge: true`` reads the KA dataset (``data/surveyreview-ka``, what
  ``surveyalign ka build --out`` writes from ``data/surveyreview``), one without it reads the plain dataset;
* a DPO config continues from an SFT config's ``output_dir`` of its dimension, and its documented ``dpo-pairs``
  command reads that SFT adapter and the dataset it was trained on and writes the DPO config's ``pairs_path``;
* every adapter of an eval / judge config is some training config's ``output_dir`` for that dimension, and the
  last stage (not an SFT adapter a DPO config continues from); the eval dataset holds the columns the adapter was
  trained on and ``knowledge_dimensions`` puts the knowledge in exactly the prompts trained with it;
* study configs name run folders that shipped eval configs write;
* records as the shipped training configs write them pass the evaluation's record check on the shipped adapter
  config (on a KA dataset built here), and a KA adapter evaluated on the plain dataset is refused.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PLAIN = "data/surveyreview"  # `surveyalign data build --out`, the plain dataset
KA = "data/surveyreview-ka"  # `surveyalign ka build --out`, the same rows with the knowledge column


def _yaml(folder: str) -> list[str]:
    return sorted(p.relative_to(REPO).as_posix() for p in (REPO / "configs" / folder).glob("*.yaml"))


@pytest.fixture(scope="module")
def training() -> dict[str, dict]:
    """rel path -> {kind, dimension, use_knowledge, dataset_path, output_dir, sft_adapter, pairs_path} of every
    recipe config, parsed by the recipe's own parser."""
    from surveyalign.training import parse_recipe_yaml

    out = {}
    for rel in _yaml("sft") + _yaml("dpo"):
        script, train, _ = parse_recipe_yaml(REPO / rel, check_device=False)
        kind = "dpo" if rel.startswith("configs/dpo/") else "sft"
        out[rel] = {"kind": kind, "dimension": script.dimension, "output_dir": train.output_dir,
                    "use_knowledge": getattr(script, "use_knowledge", None),
                    "dataset_path": getattr(script, "dataset_path", None),
                    "sft_adapter": getattr(script, "sft_adapter", None),
                    "pairs_path": getattr(script, "pairs_path", None)}
    for rel, entry in out.items():  # DPO prompts carry what its SFT adapter was trained with
        if entry["kind"] == "dpo" and entry["sft_adapter"]:
            sft = next(e for e in out.values() if e["kind"] == "sft" and e["output_dir"] == entry["sft_adapter"])
            entry["use_knowledge"], entry["dataset_path"] = sft["use_knowledge"], sft["dataset_path"]
    return out


def _by_output(training: dict[str, dict]) -> dict[str, dict]:
    outputs: dict[str, dict] = {}
    for rel, entry in training.items():
        earlier = outputs.get(entry["output_dir"], {}).get("rel")
        assert earlier is None, f"{rel} and {earlier} write the same folder {entry['output_dir']}"
        outputs[entry["output_dir"]] = {**entry, "rel": rel}
    return outputs


def test_every_recipe_config_was_read(training):
    assert len([r for r in training if r.startswith("configs/sft/")]) == 16  # the paper, qlora, tiny, demo and tiny-paper-profile recipes
    assert len([r for r in training if r.startswith("configs/dpo/")]) == 3


def test_training_with_knowledge_reads_the_ka_dataset(training):
    from surveyalign.training.data import ka_dataset_path

    assert ka_dataset_path(PLAIN) == KA == ka_dataset_path(PLAIN + "/")
    checked = 0
    for rel, entry in training.items():
        if entry["kind"] != "sft" or entry["dataset_path"] is None:  # tiny / demo: the folder comes at run time
            continue
        want = KA if entry["use_knowledge"] else PLAIN
        assert entry["dataset_path"] == want, f"{rel}: use_knowledge {entry['use_knowledge']} reads " \
                                              f"{entry['dataset_path']}, expected {want}"
        assert entry["use_knowledge"] == (entry["dimension"] in ("comprehensiveness", "criticalness")), rel
        checked += 1
    assert checked == 9  # 4 paper + 4 QLoRA + 1 QLoRA ZeRO-3 configs


def test_tiny_and_demo_training_configs_agree_with_what_fills_them():
    """Null dataset paths are filled at run time: the demo configs say whether a KA step runs before training,
    and the tiny variants keep their paper config's knowledge setting."""
    from surveyalign.demo import DemoConfig
    from surveyalign.training import parse_recipe_yaml

    for name in ("demo.yaml", "demo-ka.yaml"):
        demo = DemoConfig.from_yaml(REPO / "configs" / name)
        script = parse_recipe_yaml(REPO / demo.sft_config, check_device=False)[0]
        assert script.dataset_path is None and script.dimension == demo.dimension
        assert script.use_knowledge is (demo.knowledge is not None), name  # KA step <=> KA prompts
    for tiny, paper in (("tiny-criticalness", "criticalness"), ("tiny-readability", "readability")):
        small = parse_recipe_yaml(REPO / f"configs/sft/{tiny}.yaml", check_device=False)[0]
        full = parse_recipe_yaml(REPO / f"configs/sft/{paper}.yaml", check_device=False)[0]
        assert (small.use_knowledge, small.dimension) == (full.use_knowledge, full.dimension)


def test_dpo_continues_from_the_sft_adapter_its_pairs_come_from(training):
    outputs = _by_output(training)
    checked = 0
    for rel, entry in training.items():
        if entry["kind"] != "dpo" or entry["sft_adapter"] is None:
            continue
        sft = outputs[entry["sft_adapter"]]
        assert sft["kind"] == "sft" and sft["dimension"] == entry["dimension"] == "criticalness", rel
        text = (REPO / rel).read_text(encoding="utf-8")
        command = re.search(r"dpo-pairs --adapter (\S+) --dataset (\S+) \\\n#\s+--out (\S+)", text)
        assert command, f"{rel}: the documented `surveyalign train dpo-pairs` command is missing"
        assert command.groups() == (entry["sft_adapter"], sft["dataset_path"], entry["pairs_path"]), rel
        checked += 1
    assert checked == 2  # paper + QLoRA; the tiny config gets every path on the command line


def test_dpo_pairs_reads_the_ka_dataset_by_default(training):
    from surveyalign.cli import build_parser

    args = build_parser().parse_args(["train", "dpo-pairs", "--adapter", "runs/sft/criticalness", "--out", "p.jsonl"])
    assert args.dataset == KA == training["configs/sft/criticalness.yaml"]["dataset_path"]
    assert (args.no_knowledge, args.allow_missing_knowledge) == (False, False)


def _eval_configs():
    from surveyalign.evaluation import EvalConfig

    return {rel: EvalConfig.from_yaml(REPO / rel) for rel in _yaml("eval")}


def _check_adapter(where: str, dim: str, adapter: str, outputs: dict[str, dict], consumed: set[str]) -> dict:
    assert adapter in outputs, f"{where}: {dim} adapter {adapter} is no training config's output_dir " \
                               f"({sorted(outputs)})"
    trained = outputs[adapter]
    assert trained["dimension"] == dim, f"{where}: {adapter} is trained for {trained['dimension']}, judges {dim}"
    assert adapter not in consumed, f"{where}: {adapter} is the SFT stage a DPO config continues from"
    return trained


def test_eval_configs_read_what_training_writes(training):
    outputs = _by_output(training)
    consumed = {e["sft_adapter"] for e in training.values() if e["kind"] == "dpo" and e["sft_adapter"]}
    with_adapters = 0
    for rel, config in _eval_configs().items():
        adapters = {dim: config.backend.options_for(dim).get("adapter") for dim in config.dimensions}
        adapters = {dim: str(a) for dim, a in adapters.items() if a}
        if not adapters:  # a zero-shot judge: the plain App. C prompt on a plain dataset (tiny-smoke: the demo's)
            assert not config.dataset.endswith("-ka"), rel
            assert config.dataset != PLAIN or config.knowledge_dimensions == [], rel
            continue
        with_adapters += 1
        for dim, adapter in adapters.items():
            trained = _check_adapter(rel, dim, adapter, outputs, consumed)
            if trained["use_knowledge"]:  # the dataset has the column it was trained on, and the prompt uses it
                assert config.dataset == trained["dataset_path"] == KA, (rel, dim, config.dataset)
                assert dim in config.knowledge_dimensions, (rel, dim)
            else:  # plain prompts: the KA dataset holds the same rows, its column is left out of this prompt
                assert config.dataset in (trained["dataset_path"], KA), (rel, dim, config.dataset)
                assert dim not in config.knowledge_dimensions, (rel, dim)
        assert set(adapters) == set(config.dimensions), f"{rel}: a dimension without adapter"
    assert with_adapters == 1  # configs/eval/surveyalign-adapter.yaml
    adapter_config = _eval_configs()["configs/eval/surveyalign-adapter.yaml"]
    assert {d: adapter_config.backend.options_for(d)["adapter"] for d in adapter_config.dimensions} == {
        "readability": "runs/sft/readability", "structure": "runs/sft/structure",
        "comprehensiveness": "runs/sft/comprehensiveness", "criticalness": "runs/dpo/criticalness"}


@pytest.mark.parametrize("name", ["surveyalign-adapter", "qwen3-32b-api", "qwen3-32b-vllm", "qwen3-32b-ray-vllm",
                                  "gpt-5.2", "claude-opus-4.5"])
def test_paper_judges_have_the_gpt52_rqs_stage(name):
    """App. G: GPT-5.2 rates every rationale (the RQS of Table 2), the same judge for every system."""
    from surveyalign.evaluation import EvalConfig

    config = EvalConfig.from_yaml(REPO / f"configs/eval/{name}.yaml")
    assert config.rqs is not None and config.rqs.enabled
    assert (config.rqs.backend.kind, config.rqs.backend.options["model"]) == ("openai", "gpt-5.2")
    assert config.rqs.backend.options["api_key_env"] == "OPENAI_API_KEY"
    assert config.rqs.generation.temperature == 0.0
    off = EvalConfig.from_yaml(REPO / f"configs/eval/{name}.yaml", overrides={"rqs.enabled": False})
    assert off.rqs is not None and off.rqs.enabled is False  # the documented way to judge without it


def test_judge_configs_read_what_training_writes(training):
    from surveyalign.inference import load_judge_spec

    outputs = _by_output(training)
    consumed = {e["sft_adapter"] for e in training.values() if e["kind"] == "dpo" and e["sft_adapter"]}
    local = 0
    for rel in _yaml("judge"):
        spec = load_judge_spec(REPO / rel)
        assert set(spec.adapters) == set(spec.dimensions), rel
        if spec.backend.kind == "openai":  # served adapter names: the dimension each serves
            assert spec.adapters == {d: d for d in spec.dimensions}, rel
            continue
        local += 1
        for dim, adapter in spec.adapters.items():
            trained = _check_adapter(rel, dim, adapter, outputs, consumed)
            if spec.knowledge_dimensions is not None:
                assert (dim in spec.knowledge_dimensions) == bool(trained["use_knowledge"]), (rel, dim)
    assert local == 2


def test_study_configs_name_runs_the_eval_configs_write():
    from surveyalign.evaluation import JuryConfig, RQSJudgesConfig, SweepConfig

    runs = {config.run_dir.as_posix(): rel for rel, config in _eval_configs().items()}
    jury = JuryConfig.from_yaml(REPO / "configs/studies/jury.yaml")
    assert [runs.get(m.run) for m in jury.members] == [
        "configs/eval/gpt-5.2.yaml", "configs/eval/claude-opus-4.5.yaml", "configs/eval/qwen3-32b-api.yaml"]
    rqs = RQSJudgesConfig.from_yaml(REPO / "configs/studies/rqs-judges.yaml")
    assert {name: runs.get(run) for name, run in rqs.systems.items()} == {
        "SurveyAlign": "configs/eval/surveyalign-adapter.yaml", "GPT-5.2": "configs/eval/gpt-5.2.yaml",
        "Claude-Opus-4.5": "configs/eval/claude-opus-4.5.yaml"}
    sweep = SweepConfig.from_yaml(REPO / "configs/studies/sweep-ka.yaml")
    assert (REPO / "configs/studies" / sweep.base).resolve() == REPO / "configs/eval/surveyalign-adapter.yaml"
    assert sweep.set["dataset"] == KA
    # the no-KA variant judges KA-trained adapters on plain prompts: the record check refuses it unless allowed
    assert sweep.variants["no-ka"] == {"knowledge_dimensions": [], "allow_training_mismatch": True}
    layout = SweepConfig.from_yaml(REPO / "configs/studies/sweep-layout.yaml")
    # the shared-survey layout against the App. C order, on a zero-shot judge (an adapter refuses the layout)
    assert (REPO / "configs/studies" / layout.base).resolve() == REPO / "configs/eval/claude-opus-4.5.yaml"
    assert layout.variants == {"shared": {"layout": "shared"}} and layout.set["rqs.enabled"] is False
    assert layout.eval_config("shared").layout == "shared" and layout.eval_config("base").layout == "app_c"


def _records_as_trained(root: Path, training: dict[str, dict], adapters: dict[str, str], n_train: int) -> None:
    """Write each adapter's training record as its shipped training config would: every example with knowledge
    when it trains with knowledge on the KA dataset, none otherwise."""
    from surveyalign.models import write_training_record

    outputs = _by_output(training)
    for dim, adapter in adapters.items():
        trained = outputs[adapter]
        folder = root / adapter
        folder.mkdir(parents=True)
        write_training_record(folder, {
            "stage": trained["kind"], "dimension": dim, "protocol": "v1.0", "enable_thinking": False,
            "use_knowledge": bool(trained["use_knowledge"]), "n_train": n_train,
            "n_train_with_knowledge": n_train if trained["use_knowledge"] else 0})


def test_shipped_adapter_config_passes_the_record_check_on_the_ka_dataset(training, ka_dataset_dir, dataset_dir,
                                                                          tmp_path, monkeypatch):
    """The four records the shipped training configs write, against configs/eval/surveyalign-adapter.yaml on a KA
    dataset (the sample release through `ka build`): no mismatch. The same config on the plain dataset (the old
    wiring): Comprehensiveness and Criticalness are refused, naming both counts."""
    from rich.console import Console

    from surveyalign.evaluation import EvalConfig, TrainingMismatchError
    from surveyalign.evaluation.adapters import check_training_records
    from surveyalign.evaluation.units import load_units

    config = EvalConfig.from_yaml(REPO / "configs/eval/surveyalign-adapter.yaml")
    adapters = {d: str(config.backend.options_for(d)["adapter"]) for d in config.dimensions}
    monkeypatch.chdir(tmp_path)  # the config's relative runs/... folders resolve here
    _records_as_trained(tmp_path, training, adapters, n_train=40)
    console = Console(file=None, quiet=True)

    on_ka = config.model_copy(update={"dataset": str(ka_dataset_dir)})
    units, _ = load_units(on_ka)
    summary = check_training_records(on_ka, units, None, console)
    assert {d: e["mismatches"] for d, e in summary.items()} == {d: [] for d in adapters}
    # test units of the sample: 11 readability, 12 of each other dimension; a Comp-KA text for all 12, a Crit-KA
    # text for 11 (sr0016: no paper of R+ reaches the citation or year threshold, an empty KA record); none in the
    # plain prompts
    assert {d: e["knowledge"] for d, e in summary.items()} == {
        "readability": {"train": [0, 40], "evaluation": [0, 11]},
        "structure": {"train": [0, 40], "evaluation": [0, 12]},
        "comprehensiveness": {"train": [40, 40], "evaluation": [12, 12]},
        "criticalness": {"train": [40, 40], "evaluation": [11, 12]}}

    on_plain = config.model_copy(update={"dataset": str(dataset_dir)})
    units, _ = load_units(on_plain)
    with pytest.raises(TrainingMismatchError) as caught:
        check_training_records(on_plain, units, None, console)
    lines = str(caught.value).splitlines()
    fix = "(config keys: dataset, a KA dataset of `surveyalign ka build`; knowledge_dimensions)"
    comp = (f"  adapter runs/sft/comprehensiveness (judging comprehensiveness): trained with knowledge in 40/40 "
            f"training examples; this evaluation has knowledge in 0/12 units of comprehensiveness {fix}")
    crit = (f"  adapter runs/dpo/criticalness (judging criticalness): trained with knowledge in 40/40 training "
            f"examples; this evaluation has knowledge in 0/12 units of criticalness {fix}")
    assert lines[1:3] == [comp, crit]
    assert json.loads((tmp_path / "runs/sft/readability/surveyalign_training.json").read_text())["use_knowledge"] \
        is False
