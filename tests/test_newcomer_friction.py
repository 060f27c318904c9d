"""The newcomer's friction (issue 21 F): one line for an uncached Hub id offline, the KA config's needs named,
third-party noise silenced at its logger."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from surveyalign.console import THIRD_PARTY_NOISE, quiet_third_party
from surveyalign.models import NotCachedError, from_hub, not_cached_message

ONE_LINE = "not cached: pass a local folder or set HF_HUB_OFFLINE=0"


def test_from_hub_turns_a_multi_line_offline_error_into_one_line(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def loader(name, **kwargs):
        raise OSError("We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in "
                      f"the cached files.\nCheck your internet connection or see how to run the library in offline "
                      f"mode at 'https://huggingface.co/docs/transformers/installation#offline-mode'. ({name})")

    with pytest.raises(NotCachedError) as info:
        from_hub(loader, "Org/Model", "tokenizer", trust_remote_code=False)
    assert str(info.value) == f"tokenizer Org/Model: {ONE_LINE}" and "\n" not in str(info.value)
    assert not_cached_message("Org/Model", "model") == f"model Org/Model: {ONE_LINE}"
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    assert not_cached_message("Org/Model") == ("model Org/Model: not cached and huggingface.co cannot be reached: "
                                               "pass a local folder or check the network")

    def other(name):
        raise ValueError("tokenizer.json is malformed")

    with pytest.raises(ValueError, match="malformed"):  # any other failure is left as it is
        from_hub(other, "Org/Model")


def test_a_real_tokenizer_load_of_an_uncached_hub_id_is_one_line(monkeypatch):
    from surveyalign.knowledge import TokenCounter

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(NotCachedError, match=rf"^KA tokenizer surveyalign-tests/not-a-model: {ONE_LINE}$"):
        TokenCounter("surveyalign-tests/not-a-model")


def test_a_peft_adapter_hub_id_offline_is_one_line_before_the_base_loads(tiny_model_dir, monkeypatch):
    """Issue 21 F: an adapter named by Hub id went to PEFT after the base loaded and failed with "Can't find
    'adapter_config.json' at ..."; it now says the one line base models say, before anything is loaded."""
    import transformers

    from surveyalign.backends import load_backend
    from surveyalign.models import hub_folder

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    loads = []
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained",
                        lambda *a, **k: loads.append(a) or (_ for _ in ()).throw(AssertionError("base loaded")))
    with pytest.raises(NotCachedError) as info:
        load_backend("transformers", model=str(tiny_model_dir), adapter="surveyalign-tests/not-an-adapter",
                     device="cpu")
    assert str(info.value) == f"transformers backend: adapter surveyalign-tests/not-an-adapter: {ONE_LINE}"
    with pytest.raises(NotCachedError, match=rf"^transformers backend: adapter 'readability' "
                                             rf"surveyalign-tests/not-an-adapter: {ONE_LINE}$"):
        load_backend("transformers", model=str(tiny_model_dir), device="cpu",
                     adapters={"readability": "surveyalign-tests/not-an-adapter", "structure": str(tiny_model_dir)})
    assert loads == []  # refused before the base model was loaded
    assert hub_folder(tiny_model_dir) == str(tiny_model_dir)  # a local folder is used as it is
    with pytest.raises(NotCachedError, match=rf"^--sft_adapter Org/sft: {ONE_LINE}$"):
        hub_folder("Org/sft", "--sft_adapter")


def test_train_plan_offline_says_not_cached_in_one_line(capsys, monkeypatch):
    from surveyalign.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    code = main(["train", "plan", "--config", "configs/sft/readability.yaml"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"NotCachedError: model Qwen/Qwen3-32B: {ONE_LINE}" in err
    assert "couldn't connect" not in err and "Traceback" not in err


def test_score_graph_with_the_shipped_ka_config_offline_names_what_it_needs(tmp_path, capsys, monkeypatch):
    from surveyalign.cli import main

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "survey.md").write_text("# A survey\n\nText.\n", encoding="utf-8")
    (tmp_path / "judge.yaml").write_text("backend:\n  kind: openai\n  options: {model: Qwen/Qwen3-32B, "
                                         "base_url: 'http://127.0.0.1:9/v1'}\n", encoding="utf-8")
    base = ["score", str(tmp_path / "survey.md"), "--judge", str(tmp_path / "judge.yaml"), "--out",
            str(tmp_path / "out"), "--graph", str(tmp_path / "graph.jsonl")]
    assert main([*base, "--ka-config", "configs/ka/default.yaml"]) == 2
    err = capsys.readouterr().err
    assert ("--graph: configs/ka/default.yaml needs the judge's tokenizer 'Qwen/Qwen3-32B' (`tokenizer:`; a local "
            "folder, or 'whitespace' to count words) and for Crit-KA a summariser server at http://localhost:8000/v1"
            ) in err
    assert f"KA tokenizer Qwen/Qwen3-32B: {ONE_LINE}" in err and "couldn't connect" not in err
    assert main(base) == 2  # no --ka-config: the built-in settings, the judge's model as tokenizer
    err = capsys.readouterr().err
    assert "--graph: the built-in KA settings (no --ka-config) needs the judge's tokenizer 'Qwen/Qwen3-32B'" in err
    assert "a summariser server at (none set)" in err


def test_the_offline_ka_config_of_the_readme_parses():
    from surveyalign.knowledge import KAConfig

    config = KAConfig.from_yaml("configs/ka/local.yaml")
    assert config.tokenizer == "models/Qwen3-32B"
    assert config.summariser.backend.options["base_url"] == "http://127.0.0.1:8000/v1"
    readme = Path("README.md").read_text(encoding="utf-8")
    assert "configs/ka/local.yaml" in readme and 'base_url: "http://127.0.0.1:8000/v1"' in readme


NOISE = {  # the lines as the libraries log them
    "bitsandbytes.backends.cpu.ops": (("Failed to load CPU gemm_4bit_forward from kernels-community: %s. Please make "
                                      "sure you already `pip install kernels` and the kernels >= 0.11.1"), "x"),
    "transformers.tokenization_utils_base": (("Token indices sequence length is longer than the specified maximum "
                                             "sequence length for this model (84667 > 32768). Running this sequence "
                                             "through the model will result in indexing errors"),),
}


class _Keep(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_third_party_noise_is_silenced_at_its_logger_and_other_lines_stay():
    quiet_third_party()
    assert quiet_third_party() == []  # idempotent
    for name in THIRD_PARTY_NOISE:
        logger = logging.getLogger(name)
        keep = _Keep()
        logger.addHandler(keep)
        try:
            logger.warning(NOISE[name][0], *NOISE[name][1:])
            logger.warning("something else from %s", name)
        finally:
            logger.removeHandler(keep)
        assert keep.lines == [f"something else from {name}"], name
    ours = logging.getLogger("surveyalign.judge")
    keep = _Keep()
    ours.addHandler(keep)
    ours.warning("survey cut to 32768 tokens (pip install kernels)")
    ours.removeHandler(keep)
    assert keep.lines == ["survey cut to 32768 tokens (pip install kernels)"]


def test_demo_says_why_it_judges_fewer_units_than_the_split_holds(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from surveyalign.demo import eval_scope_line

    for dim, n in (("readability", 11), ("structure", 12), ("comprehensiveness", 13), ("criticalness", 11)):
        (tmp_path / "data" / dim).mkdir(parents=True)
        pq.write_table(pa.table({"unit_id": [f"{dim}-{i}" for i in range(n)]}), tmp_path / "data" / dim / "test.parquet")
    line = eval_scope_line(tmp_path, "test", "readability", None)
    assert line.startswith("evaluating 11 of the test split's 47 units: the readability units")
    assert "the other dimensions' 36 units are not judged: comprehensiveness 13, criticalness 11, structure 12" in line
    assert eval_scope_line(tmp_path, "test", "readability", 5).endswith("; eval.limit=5 keeps the first 5")


def test_citation_f1_ids_help_documents_the_numbering(capsys):
    from surveyalign.cli import main

    with pytest.raises(SystemExit):
        main(["autorate", "citation-f1", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "NUMBER is a string key (\"1\"), one numbering per paper, 1-based" in help_text
    assert "printed label ([12] -> \"12\"; an author-year list: its position in the list)" in help_text
    assert "\\bibitem order of thebibliography, or for a .bib the order of first \\cite" in help_text


def test_make_install_silences_torchs_numpy_line_only():
    """``make install`` asks torch for its version before numpy is installed; the one warning that causes is
    filtered by its message, other warnings still show."""
    import subprocess
    import sys

    makefile = Path("Makefile").read_text(encoding="utf-8")
    flag = '-W "ignore:Failed to initialize NumPy:UserWarning"'
    assert flag in makefile
    code = ("import warnings; warnings.warn(\"Failed to initialize NumPy: No module named 'numpy' (Triggered "
            "internally)\"); warnings.warn('another warning')")
    done = subprocess.run([sys.executable, "-W", "ignore:Failed to initialize NumPy:UserWarning", "-c", code],
                          capture_output=True, text=True, check=True)
    assert "NumPy" not in done.stderr and "another warning" in done.stderr
