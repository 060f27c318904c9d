"""SurveyAlign as one judge: voting on crafted samples, seeds, rationale synthesis, KA refusal, one prefill."""

from __future__ import annotations

import pytest

from surveyalign.backends import Generation, load_backend
from surveyalign.backends.simple import ScriptedBackend
from surveyalign.calls import CallCache
from surveyalign.documents import read_document
from surveyalign.inference.judge import KNOWLEDGE_REFUSED, SurveyAlignJudge
from surveyalign.inference.knowledge import FileKnowledge
from surveyalign.inference.spec import JudgeSpec
from surveyalign.judge.synthesis import build_synthesis_messages

SURVEY = "# A Survey of Tests\n\n## 1 Introduction\n\nTests check programs.\n"


@pytest.fixture
def document(tmp_path):
    path = tmp_path / "tests.md"
    path.write_text(SURVEY, encoding="utf-8")
    return read_document(path)


def _judge(replies, *, dims=("readability",), synthesis=False, cache=None, seed=0, adapters=None, **spec):
    """A SurveyAlignJudge over a scripted backend; ``replies[k]`` answers sample k (seed 0 + k)."""
    def reply(messages, settings, index):
        content = messages[0]["content"]
        if "Merge their notes" in content:
            return replies["synthesis"]
        return replies[settings.seed + index]
    backend = ScriptedBackend(reply)
    per_dimension = {d: {"model": name} for d, name in (adapters or {}).items()}
    spec = JudgeSpec(backend={"kind": "openai", "options": {"model": "scripted"}, "per_dimension": per_dimension},
                     generation={"seed": seed}, dimensions=list(dims), synthesis=synthesis, **spec)
    return SurveyAlignJudge(spec, cache=cache, backends=(backend, {d: backend for d in dims})), backend


def _g(text, logprob):
    return Generation(text, "stop", logprob)


def test_clear_majority_counts_unparsed_samples(document):
    judge, _ = _judge({0: _g("Clear. $$$1$$$", -0.5), 1: _g("Clear. $$$1$$$", -0.6), 2: _g("Murky. $$$-1$$$", -0.1),
                       3: _g("Clear too. $$$+1$$$", -0.4), 4: _g("I cannot decide.", -0.2)})
    record = judge.review(document, progress=False)["dimensions"]["readability"]
    assert (record["status"], record["score"]) == ("scored", 1)
    assert record["votes"] == {"-1": 1, "1": 3} and (record["n_voted"], record["n_unparsed"]) == (4, 1)
    assert record["vote_share"] == 0.75 and record["tie_break"] is None
    assert record["rationale"] == "Clear too."  # best winning sample (highest log-prob) with synthesis off
    assert [s["seed"] for s in record["samples"]] == [0, 1, 2, 3, 4]
    assert record["samples"][4]["parse_error"] is not None and record["samples"][4]["score"] is None


def test_two_two_one_tie_goes_to_the_higher_mean_logprob(document):
    judge, _ = _judge({0: _g("Hard. $$$-1$$$", -0.9), 1: _g("Great. $$$2$$$", -0.2), 2: _g("Hard. $$$-1$$$", -0.9),
                       3: _g("Great! $$$2$$$", -0.3), 4: _g("Fine. $$$1$$$", -0.05)})
    record = judge.review(document, progress=False)["dimensions"]["readability"]
    # -1: mean -0.9; +2: mean -0.25 -> +2 wins the tie (the single +1 has the best log-prob but fewer votes)
    assert (record["score"], record["tie_break"], record["votes"]) == (2, "logprob", {"-1": 2, "1": 1, "2": 2})
    assert record["vote_share"] == pytest.approx(0.4) and record["chosen_sample"] == 1


def test_all_unparsed_fails_the_dimension_with_the_reasons(document):
    judge, _ = _judge({k: _g(f"no marker {k}", -0.1) for k in range(5)})
    review = judge.review(document, progress=False)
    record = review["dimensions"]["readability"]
    assert (record["status"], record["score"], record["n_voted"], record["n_unparsed"]) == ("parse_failed", None, 0, 5)
    assert "no score marker" in record["reason"] or "missing" in record["reason"]
    assert review["summary"] == {"n_dimensions": 1, "n_scored": 0, "n_failed": 1, "n_refused": 0, "n_failed_samples": 5,
                                 "n_partial": 0}


def test_one_parsed_sample_decides(document):
    replies = {k: _g("thinking...", -0.1) for k in range(4)}
    replies[4] = _g("Weak. $$$-2$$$", -1.5)
    judge, _ = _judge(replies)
    record = judge.review(document, progress=False)["dimensions"]["readability"]
    assert (record["score"], record["n_voted"], record["n_unparsed"], record["vote_share"]) == (-2, 1, 4, 1.0)


def test_k_distinct_seeds_sent_and_recorded(document):
    judge, backend = _judge({k: _g(f"r{k}. $$$1$$$", -0.1) for k in range(10, 15)}, seed=10)
    review = judge.review(document, progress=False)
    assert sorted(s.seed + i for _, s, i in backend.calls) == [10, 11, 12, 13, 14]
    assert review["judge"]["seeds"] == [10, 11, 12, 13, 14]
    assert [s["seed"] for s in review["dimensions"]["readability"]["samples"]] == [10, 11, 12, 13, 14]


def test_synthesis_must_keep_the_winning_score(document):
    votes = {0: _g("Dense prose. $$$-1$$$", -0.5), 1: _g("Jargon unexplained. $$$-1$$$", -0.4),
             2: _g("Fine. $$$1$$$", -0.3), 3: _g("Dense prose. $$$-1$$$", -0.6), 4: _g("?", -0.1)}
    judge, backend = _judge({**votes, "synthesis": _g("Dense prose and unexplained jargon. $$$-1$$$", -0.2)},
                            synthesis=True)
    record = judge.review(document, progress=False)["dimensions"]["readability"]
    assert record["rationale"] == "Dense prose and unexplained jargon."
    assert record["synthesis"]["source"] == "synthesized" and record["synthesis"]["n_merged"] == 2
    merge_prompt = next(m for m, _, _ in backend.calls if "Merge their notes" in m[0]["content"])
    assert merge_prompt == build_synthesis_messages("readability", -1, ["Dense prose.", "Jargon unexplained."])
    assert "1. Dense prose.\n2. Jargon unexplained." in merge_prompt[0]["content"]
    judge, _ = _judge({**votes, "synthesis": _g("All good. $$$2$$$", -0.2)}, synthesis=True)
    record = judge.review(document, progress=False)["dimensions"]["readability"]
    assert record["rationale"] == "Jargon unexplained."  # the best winning sample (log-prob -0.4)
    assert record["synthesis"]["source"] == "best_sample"
    assert record["synthesis"]["error"] == "merge answer gave score +2, not the winning -1"


def test_resume_from_the_call_cache(document, tmp_path):
    replies = {k: _g(f"r{k}. $$$1$$$", -0.1) for k in range(5)}
    cache = CallCache.load(tmp_path / "calls.jsonl")
    judge, backend = _judge(replies, cache=cache)
    first = judge.review(document, progress=False)
    assert len(backend.calls) == 5
    cache.close()
    again, backend2 = _judge(replies, cache=CallCache.load(tmp_path / "calls.jsonl"))
    second = again.review(document, progress=False)
    assert backend2.calls == [] and second["dimensions"] == first["dimensions"]


def test_ka_adapters_refuse_without_knowledge(document, tmp_path, tiny_model_dir):
    replies = {k: _g(f"r{k}. $$$1$$$", -0.1) for k in range(5)}
    dims = ("readability", "comprehensiveness")
    adapters = {"readability": "a", "comprehensiveness": "b"}  # not folders: no training records, SurveyAlign's choice
    judge, backend = _judge(replies, dims=dims, adapters=adapters)
    review = judge.review(document, progress=False)
    comp = review["dimensions"]["comprehensiveness"]
    assert comp["status"] == KNOWLEDGE_REFUSED and comp["score"] is None and comp["samples"] == []
    assert "trained with knowledge augmentation" in comp["reason"] and "--allow-no-knowledge" in comp["reason"]
    assert review["dimensions"]["readability"]["status"] == "scored"
    assert review["summary"]["n_refused"] == 1 and len(backend.calls) == 5
    allowed, _ = _judge(replies, dims=dims, adapters=adapters)
    allowed.allow_no_knowledge = True
    comp = allowed.review(document, progress=False)["dimensions"]["comprehensiveness"]
    assert comp["status"] == "scored" and comp["knowledge"]["used"] is False
    assert comp["notes"][0].startswith("judged WITHOUT knowledge augmentation")
    ka = tmp_path / "ka"
    ka.mkdir()
    (ka / "tests.comprehensiveness.txt").write_text("Related: Paper A (2020), 120 citations.", encoding="utf-8")
    with_ka, backend3 = _judge(replies, dims=dims, adapters=adapters)
    with_ka.knowledge = FileKnowledge(ka)
    comp = with_ka.review(document, progress=False)["dimensions"]["comprehensiveness"]
    assert comp["knowledge"]["used"] is True and comp["prompt"]["has_knowledge"] is True
    sent = [m[0]["content"] for m, _, _ in backend3.calls]
    assert sum("Paper A (2020)" in c for c in sent) == 5  # only comprehensiveness prompts carry it


def test_one_prefill_for_the_k_samples_through_the_judge(tiny_model_dir):
    from surveyalign.judge import Judge

    backend = load_backend("transformers", model=str(tiny_model_dir), device="cpu", batch_size=16)
    calls = []
    handle = backend.model.get_input_embeddings().register_forward_hook(
        lambda module, args, out: calls.append(tuple(args[0].shape)))
    try:
        from surveyalign.backends import GenerationSettings

        verdict = Judge(backend, settings=GenerationSettings(temperature=0.7, max_new_tokens=4, seed=3)).judge(
            SURVEY, "readability", samples=5)
    finally:
        handle.remove()
    assert [s.seed for s in verdict.samples] == [3, 4, 5, 6, 7]
    prompt_rows = [(r, t) for r, t in calls if t > 1]
    assert len(prompt_rows) == 1 and prompt_rows[0][0] == 1  # the prompt went through the model once
    assert calls[1] == (5, 1)


def test_spec_from_config_and_adapter_folder(tmp_path, tiny_adapters, tiny_model_dir):
    from surveyalign.inference.spec import load_judge_spec

    spec = load_judge_spec(tiny_adapters["readability"].parent)
    assert spec.model == str(tiny_model_dir) and set(spec.adapters) == set(tiny_adapters)
    config = tmp_path / "judge.yaml"
    config.write_text(f"backend:\n  kind: transformers\n  options: {{model: {tiny_model_dir}}}\n"
                      f"  per_dimension:\n    readability: {{adapter: {tiny_adapters['readability']}}}\n"
                      "samples: 3\ngeneration: {temperature: 0.5}\n", encoding="utf-8")
    spec = load_judge_spec(config, samples=2)
    assert (spec.samples, spec.generation.temperature, spec.adapters) == (
        2, 0.5, {"readability": str(tiny_adapters["readability"])})
    config.write_text("backend: {kind: transformers, options: {model: x}}\nsampels: 3\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"judge\.yaml: field sampels: Extra inputs"):
        load_judge_spec(config)
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        load_judge_spec(tmp_path / "missing.yaml")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no judge config"):
        load_judge_spec(tmp_path / "empty")
    from surveyalign.models import NotCachedError

    with pytest.raises(NotCachedError, match=r"^judge someone/surveyalign-judge: not cached: pass a local folder or "
                                             r"set HF_HUB_OFFLINE=0$"):
        load_judge_spec("someone/surveyalign-judge")  # offline (the tests' default): one line


def test_same_seeds_give_the_same_review(tiny_model_dir, document):
    backend = load_backend("transformers", model=str(tiny_model_dir), device="cpu")
    spec = JudgeSpec(backend={"kind": "transformers", "options": {"model": str(tiny_model_dir)}},
                     dimensions=["readability"], samples=4, generation={"max_new_tokens": 6, "seed": 21},
                     synthesis=False)

    def samples(spec):
        judge = SurveyAlignJudge(spec, backends=(backend, {"readability": backend}))
        return [(s["seed"], s["text"], s["mean_logprob"])
                for s in judge.review(document, progress=False)["dimensions"]["readability"]["samples"]]

    first, again = samples(spec), samples(spec)
    assert first == again and [seed for seed, _, _ in first] == [21, 22, 23, 24]
    assert len({text for _, text, _ in first}) > 1  # T=0.7: the four seeds give different samples
    other = samples(spec.model_copy(update={"generation": spec.generation.model_copy(update={"seed": 50})}))
    assert [text for _, text, _ in other] != [text for _, text, _ in first]


def test_spec_yaml_sampling_keys_are_the_generation_settings(tmp_path):
    """The judge config's sampling keys load into the backends' GenerationSettings; an unknown key is refused."""
    from surveyalign.backends import GenerationSettings
    from surveyalign.inference.spec import load_judge_spec

    config = tmp_path / "surveyalign_judge.yaml"
    config.write_text("backend: {kind: openai, options: {model: some/base}}\nsamples: 4\n"
                      "generation: {temperature: 0.3, top_p: 0.9, max_new_tokens: 64, seed: 11, enable_thinking: true}\n",
                      encoding="utf-8")
    spec = load_judge_spec(config)
    assert spec.settings == GenerationSettings(temperature=0.3, top_p=0.9, max_new_tokens=64, seed=11,
                                               enable_thinking=True, want_logprobs=True)
    defaults = JudgeSpec(backend={"kind": "openai", "options": {"model": "m"}}).settings
    assert (defaults.temperature, defaults.top_p, defaults.max_new_tokens, defaults.seed) == (0.7, 1.0, 512, 0)
    backend = ScriptedBackend(["x"])
    judge = SurveyAlignJudge(load_judge_spec(config, dimensions=["readability"]), backends=(backend, {"readability": backend}))
    assert judge.settings == spec.settings
    config.write_text("backend: {kind: openai, options: {model: m}}\ntemprature: 0.3\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"surveyalign_judge\.yaml: field temprature: Extra inputs"):
        load_judge_spec(config)
    config.write_text("backend: {kind: openai, options: {model: m}}\ngeneration: {top_p: 1.5}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"field generation\.top_p: Input should be less than or equal to 1"):
        load_judge_spec(config)
