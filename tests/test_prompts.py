"""Judge prompt builder, SFT examples, targets and chat rendering (SurveyReview App. C)."""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from surveyalign.constants import DIMENSIONS, VALID_SCORES
from surveyalign.prompts import (
    PROTOCOLS,
    RUBRICS,
    build_judge_prompt,
    build_sft_example,
    format_target,
    parse_judgement,
    render_chat,
    validate_score,
)
from surveyalign.prompts import templates as T

SURVEY = "# Graph Neural Networks: A Survey\n\n## 1 Introduction\nWe review 212 papers (2016-2024).\n\n## 2 Methods\n..."
KNOWLEDGE = (
    "- Semi-Supervised Classification with Graph Convolutional Networks (2017), 30112 citations\n"
    "- Graph Attention Networks (2018), 15870 citations"
)
PROTOCOL_NAMES = tuple(PROTOCOLS)


def _positions(content: str, parts: list[str]) -> list[int]:
    """Index of each part's first occurrence; every part must occur exactly once, except separators."""
    found = []
    for part in parts:
        idx = content.find(part)
        assert idx >= 0, f"part not found: {part[:60]!r}"
        if T.SEPARATOR not in part:
            assert content.count(part) == 1, f"part occurs more than once: {part[:60]!r}"
        found.append(idx)
    return found


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("dimension", DIMENSIONS)
@pytest.mark.parametrize("with_knowledge", [False, True])
def test_template_parts_in_app_c_order(dimension, protocol, with_knowledge):
    rubric = RUBRICS[dimension]
    prompt = build_judge_prompt(
        dimension, SURVEY, protocol=protocol, knowledge=KNOWLEDGE if with_knowledge else None
    )
    content = prompt.content
    parts = [T.ROLE.format(label=rubric.label)]
    if with_knowledge:
        parts.append(rubric.ka_description.format(label=rubric.label))
    parts += [rubric.definition]
    parts += [f"{s:+d} ({T.SCORE_LABELS[s]}): {rubric.criteria[s]}" for s in (-2, -1, 1, 2)]
    parts += [T.REQUIREMENTS, PROTOCOLS[protocol].format_text, T.SEPARATOR + "\n"]
    if with_knowledge:
        parts += [rubric.ka_heading, KNOWLEDGE]
    parts += [T.SURVEY_HEADING, SURVEY]
    positions = _positions(content, parts)
    assert positions == sorted(positions)
    assert content.count(T.SEPARATOR) == 2
    assert content.endswith(SURVEY + "\n" + T.SEPARATOR)
    assert content.startswith(T.ROLE.format(label=rubric.label))
    assert prompt.dimension == dimension and prompt.protocol == protocol
    assert prompt.has_knowledge is with_knowledge


@pytest.mark.parametrize("knowledge", [None, "", "   \n"])
def test_no_knowledge_block_without_knowledge(knowledge):
    for dimension in DIMENSIONS:
        rubric = RUBRICS[dimension]
        content = build_judge_prompt(dimension, SURVEY, knowledge=knowledge).content
        assert rubric.ka_heading not in content
        assert rubric.ka_description.format(label=rubric.label) not in content
        # Only the opening and the closing separator.
        assert content.count(T.SEPARATOR) == 2


def test_knowledge_block_between_separator_and_survey():
    prompt = build_judge_prompt("comprehensiveness", SURVEY, knowledge="\n" + KNOWLEDGE + "\n\n")
    content = prompt.content
    sep = content.index(T.SEPARATOR)
    assert sep < content.index(RUBRICS["comprehensiveness"].ka_heading) < content.index(KNOWLEDGE) < content.index(
        SURVEY
    )
    # KA text sits in the instruction (everything but the survey), never in the input.
    assert KNOWLEDGE in prompt.instruction and prompt.input == SURVEY
    # Surrounding blank lines of the KA text are trimmed: heading, content, blank line, survey heading.
    expected = RUBRICS["comprehensiveness"].ka_heading + "\n" + KNOWLEDGE + "\n\n" + T.SURVEY_HEADING
    assert expected in content


def test_comp_and_crit_knowledge_descriptions_differ():
    comp = build_judge_prompt("comprehensiveness", SURVEY, knowledge=KNOWLEDGE).content
    crit = build_judge_prompt("criticalness", SURVEY, knowledge=KNOWLEDGE).content
    assert "title, year of publication and number of citations" in comp
    assert "year" in crit and "interval" in crit and "influential" in crit and "recent" in crit
    assert RUBRICS["criticalness"].ka_description not in comp


OWN_WORDS_FIXTURE = Path(__file__).parent / "fixtures" / "own_words" / "surveyreview_6grams.txt.gz"


def _gram_hashes(text: str, n: int = 6) -> set[str]:
    """sha256 (first 12 hex) of every run of ``n`` lower-case words of ``text``: what the fixture holds for the
    SurveyReview paper (the hashes, not the text), so the check runs without the paper."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {hashlib.sha256(" ".join(words[i:i + n]).encode()).hexdigest()[:12] for i in range(len(words) - n + 1)}


def test_prompts_are_in_our_own_words():
    """No run of 6 words of any rendered judge or RQS prompt appears in the SurveyReview paper (facts carry over,
    wording does not). The paper's 6-word runs are shipped as hashes in tests/fixtures/own_words/."""
    from surveyalign.evaluation import build_rqs_messages

    paper = set(gzip.decompress(OWN_WORDS_FIXTURE.read_bytes()).decode().split())
    assert len(paper) > 5000
    for dimension in DIMENSIONS:
        for protocol in PROTOCOL_NAMES:
            content = build_judge_prompt(dimension, "", protocol=protocol, knowledge="k", title="t").content
            assert not _gram_hashes(content) & paper, (dimension, protocol)
        rqs = build_rqs_messages(dimension, title="t", reference=["r"], prediction="p")[0]["content"]
        assert not _gram_hashes(rqs) & paper, dimension


def test_own_words_fixture_matches_the_paper():
    """When the paper is at hand (../shared/seeds), the shipped hashes are exactly its 6-word runs."""
    seeds = sorted((Path(__file__).resolve().parents[2] / "shared" / "seeds").glob("000_*.txt"))
    if not seeds:
        pytest.skip("the seed documents (../shared/seeds, kept for development beside the repository) are not here; the own-words test above still runs on the shipped fixture")
    shipped = set(gzip.decompress(OWN_WORDS_FIXTURE.read_bytes()).decode().split())
    assert shipped == _gram_hashes(seeds[0].read_text(encoding="utf-8"))


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
def test_protocol_formats_in_prompt(protocol):
    content = build_judge_prompt("structure", SURVEY, protocol=protocol).content
    if protocol == "v1.0":
        assert "Reason$$$X$$$" in content and "<score>" not in content
    else:
        assert "<reason>Reason</reason> <score>X</score>" in content and "$$$" not in content
    assert "{-2, -1, 1, 2}" in content


def test_prompt_pieces_and_messages():
    prompt = build_judge_prompt("readability", SURVEY, title="  Graph Neural Networks: A Survey ")
    assert prompt.instruction + prompt.input + prompt.suffix == prompt.content
    assert prompt.input == SURVEY
    assert prompt.instruction.endswith(T.SURVEY_HEADING + "\nTitle: Graph Neural Networks: A Survey\n\n")
    assert prompt.suffix == "\n" + T.SEPARATOR
    assert prompt.messages() == [{"role": "user", "content": prompt.content}]
    assert all(m["role"] != "system" for m in prompt.messages())
    untitled = build_judge_prompt("readability", SURVEY)
    assert "Title:" not in untitled.content


def test_hash_ignores_survey_title_text_and_knowledge_text():
    base = build_judge_prompt("criticalness", SURVEY, knowledge=KNOWLEDGE, title="A")
    other = build_judge_prompt("criticalness", "completely different survey", knowledge="other KA", title="B")
    assert base.template_hash == other.template_hash
    assert len(base.template_hash) == 64 and int(base.template_hash, 16) >= 0
    assert base.content != other.content


def test_hash_changes_with_dimension_protocol_and_flags():
    hashes = set()
    for dimension in DIMENSIONS:
        for protocol in PROTOCOL_NAMES:
            for knowledge in (None, KNOWLEDGE):
                for title in (None, "T"):
                    hashes.add(build_judge_prompt(dimension, SURVEY, protocol=protocol, knowledge=knowledge, title=title).template_hash)
    assert len(hashes) == len(DIMENSIONS) * len(PROTOCOL_NAMES) * 2 * 2


def test_hash_is_stable_across_processes():
    code = (
        "from surveyalign.prompts import build_judge_prompt as b;"
        "print(b('structure', 'x', protocol='v1.1', knowledge='k').template_hash)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": "123"})
    assert out.stdout.strip() == build_judge_prompt("structure", "y", protocol="v1.1", knowledge="z").template_hash


def test_hash_follows_template_text(monkeypatch):
    before = build_judge_prompt("structure", SURVEY).template_hash
    monkeypatch.setattr(T, "REQUIREMENTS", T.REQUIREMENTS + " Be brief.")
    assert build_judge_prompt("structure", SURVEY).template_hash != before
    monkeypatch.undo()
    assert build_judge_prompt("structure", SURVEY).template_hash == before
    rubric = RUBRICS["structure"]
    patched = T.DimensionRubric(
        name=rubric.name,
        label=rubric.label,
        definition=rubric.definition + " Also headings.",
        criteria=dict(rubric.criteria),
        ka_description=rubric.ka_description,
        ka_heading=rubric.ka_heading,
    )
    monkeypatch.setattr(T, "RUBRICS", {**RUBRICS, "structure": patched})
    assert build_judge_prompt("structure", SURVEY).template_hash != before
    assert build_judge_prompt("readability", SURVEY).template_hash == build_judge_prompt("readability", "other").template_hash


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("dimension", DIMENSIONS)
def test_sft_prompt_is_the_evaluation_prompt(dimension, protocol):
    knowledge = KNOWLEDGE if dimension in ("comprehensiveness", "criticalness") else None
    rationales = ["The taxonomy in Section 2 is hard to follow.", "  ", "Transitions are abrupt. "]
    example = build_sft_example(dimension, SURVEY, rationales, -1, protocol=protocol, knowledge=knowledge)
    prompt = build_judge_prompt(dimension, SURVEY, protocol=protocol, knowledge=knowledge)
    assert example["prompt"] == prompt.messages()
    assert example["completion"] == [{"role": "assistant", "content": format_target(rationales, -1, protocol)}]
    assert example["chat_template_kwargs"] == {"enable_thinking": False}
    parsed = parse_judgement(example["completion"][0]["content"], protocol)
    assert parsed.score == -1
    assert parsed.rationale == "The taxonomy in Section 2 is hard to follow. Transitions are abrupt."


@pytest.mark.parametrize("protocol", PROTOCOL_NAMES)
@pytest.mark.parametrize("score", VALID_SCORES)
def test_format_target_round_trip(score, protocol):
    rationale = "Cites 85 of the 120 key works; Table 3 omits 2023 methods."
    target = format_target(rationale, score, protocol)
    for mode in (protocol, "auto"):
        parsed = parse_judgement(target, mode)
        assert (parsed.score, parsed.rationale, parsed.error) == (score, rationale, None)
    # The same answer behind Qwen3's empty think block.
    assert parse_judgement("<think>\n\n</think>\n\n" + target, protocol).score == score


def test_format_target_exact_strings():
    assert format_target("Clear.", -1, "v1.0") == "Clear.$$$-1$$$"
    assert format_target(["Clear.", "Well explained."], 2, "v1.0") == "Clear. Well explained.$$$2$$$"
    assert format_target("Clear.", 1, "v1.1") == "<reason>Clear.</reason> <score>1</score>"
    assert format_target("Clear.", np.int64(-2)) == "Clear.$$$-2$$$"
    assert format_target("Clear.", -1.0) == "Clear.$$$-1$$$"


@pytest.mark.parametrize("bad", [0, 3, -3, 1.5, True, "1", None])
def test_bad_scores_are_named(bad):
    with pytest.raises(ValueError, match=repr(bad).replace(".", r"\.")):
        format_target("x", bad)
    with pytest.raises(ValueError, match="score"):
        build_sft_example("readability", SURVEY, ["x"], bad)


def test_validate_score():
    assert [validate_score(s) for s in (-2, -1.0, np.int64(1), np.float32(2.0))] == [-2, -1, 1, 2]
    assert all(type(validate_score(s)) is int for s in (np.int64(1), 2.0))


def test_unknown_dimension_and_protocol_are_named():
    with pytest.raises(ValueError, match="novelty"):
        build_judge_prompt("novelty", SURVEY)
    with pytest.raises(ValueError, match="v2.0"):
        build_judge_prompt("readability", SURVEY, protocol="v2.0")
    with pytest.raises(ValueError, match="v2.0"):
        format_target("x", 1, "v2.0")
    with pytest.raises(ValueError, match="v2.0"):
        build_sft_example("readability", SURVEY, "x", 1, protocol="v2.0")
    with pytest.raises(TypeError, match="NoneType"):
        build_judge_prompt("readability", None)  # type: ignore[arg-type]


def test_v11_rationale_with_tags_is_refused():
    with pytest.raises(ValueError, match="</reason>"):
        format_target("ends early </reason> oops", 1, "v1.1")
    # v1.0 has no tags to collide with: the appended marker is always the last one.
    assert parse_judgement(format_target("costs 5$ and $$$1$$$ inline", -1, "v1.0"), "v1.0").score == -1


def test_render_chat_with_tiny_model(tiny_model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    example = build_sft_example("structure", SURVEY, ["Sections 3 and 5 overlap."], -1)
    off = render_chat(tokenizer, example["prompt"], enable_thinking=False)
    on = render_chat(tokenizer, example["prompt"], enable_thinking=True)
    user = "<|im_start|>user\n" + example["prompt"][0]["content"] + "<|im_end|>\n"
    assert on == user + "<|im_start|>assistant\n"
    assert off == user + "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    # Training renders prompt + completion; with thinking off the evaluation prompt is an exact prefix,
    # and what follows it is the target and the end-of-turn token.
    full = render_chat(tokenizer, example["prompt"] + example["completion"], enable_thinking=False, add_generation_prompt=False)
    assert full.startswith(off)
    assert full[len(off) :] == "Sections 3 and 5 overlap.$$$-1$$$<|im_end|>\n"
    assert render_chat(tokenizer, example["prompt"], enable_thinking=False, add_generation_prompt=False) == user


def _cli(argv: list[str]) -> argparse.Namespace:
    from surveyalign.prompts.cli import register

    parser = argparse.ArgumentParser(prog="surveyalign")
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_cli_show(tmp_path, capsys):
    ka = tmp_path / "ka.txt"
    ka.write_text(KNOWLEDGE, encoding="utf-8")
    args = _cli(["prompts", "show", "--dimension", "Comprehensiveness", "--protocol", "v1.1", "--knowledge", str(ka)])
    assert args.handler(args) == 0
    out, err = capsys.readouterr()
    expected = build_judge_prompt("comprehensiveness", "{survey text}", protocol="v1.1", knowledge=KNOWLEDGE)
    assert out == expected.content + "\n"
    assert expected.template_hash in err
    args = _cli(["prompts", "show", "--dimension", "readability", "--json"])
    assert args.handler(args) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["template_hash"] == build_judge_prompt("readability", "x").template_hash and payload["protocol"] == "v1.0"


def test_cli_parse(tmp_path, capsys):
    answer = tmp_path / "a.txt"
    answer.write_text("<think>\n\n</think>\n\nShallow.$$$-1$$$", encoding="utf-8")
    args = _cli(["prompts", "parse", str(answer)])
    assert args.handler(args) == 0
    assert json.loads(capsys.readouterr().out) == {"score": -1, "rationale": "Shallow.", "error": None}
    answer.write_text("Shallow.$$$0$$$", encoding="utf-8")
    args = _cli(["prompts", "parse", str(answer), "--protocol", "v1.0"])
    assert args.handler(args) == 3  # no usable result (issue 21 B: the same code as every command)
    assert json.loads(capsys.readouterr().out)["score"] is None


def test_sft_example_thinking_switch():
    on = build_sft_example("readability", SURVEY, "Clear.", 1, enable_thinking=True)
    assert on["chat_template_kwargs"] == {"enable_thinking": True}
    assert "chat_template_kwargs" not in build_sft_example("readability", SURVEY, "Clear.", 1, enable_thinking=None)


def test_trl_sft_trains_on_the_evaluation_prompt(tiny_model_dir, tmp_path):
    """TRL's own tokenization of our SFT example: the masked prompt is the evaluation prompt, token for token."""
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    examples = [
        build_sft_example("criticalness", SURVEY, ["Mostly a catalogue of methods."], -2, knowledge=KNOWLEDGE),
        build_sft_example("structure", SURVEY, ["Logical order.", "Smooth transitions."], 1, protocol="v1.1"),
    ]
    config = SFTConfig(
        output_dir=str(tmp_path / "sft"),
        use_cpu=True,
        bf16=False,
        max_length=None,
        report_to=[],
        completion_only_loss=True,
    )
    trainer = SFTTrainer(
        model=str(tiny_model_dir), args=config, train_dataset=Dataset.from_list(examples), processing_class=tokenizer
    )
    for example, row in zip(examples, trainer.train_dataset, strict=True):
        eval_prompt = render_chat(tokenizer, example["prompt"], enable_thinking=False)
        prompt_ids = tokenizer(eval_prompt, add_special_tokens=False)["input_ids"]
        n = len(prompt_ids)
        assert row["input_ids"][:n] == prompt_ids
        # TRL 1.16 turns the completion mask into labels: -100 on the prompt, the token ids after it.
        assert row["labels"] == [-100] * n + row["input_ids"][n:]
        assert tokenizer.decode(row["input_ids"][n:]) == example["completion"][0]["content"] + "<|im_end|>\n"


def test_cli_help_and_bare_group(capsys):
    for argv in (["prompts", "--help"], ["prompts", "show", "--help"], ["prompts", "parse", "--help"]):
        with pytest.raises(SystemExit) as exc:
            _cli(argv)
        assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "--dimension" in out and "--knowledge" in out and "--protocol" in out
    args = _cli(["prompts"])
    assert args.handler(args) == 2
    assert "show" in capsys.readouterr().out
