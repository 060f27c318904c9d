"""The judge: backend + prompt protocol -> a scored judgement of one survey on one dimension (SurveyReview §5-6).

One object does "prompt -> backend -> parse" for everything that judges surveys (the evaluation runner, the
demo, later the ``score`` command): it builds the prompt with :func:`surveyalign.prompts.build_judge_prompt`,
applies the training length rule (:func:`surveyalign.prompts.fit_survey_text`), sends K samples (sample k
with seed ``seed + k``), reads each answer with :func:`surveyalign.judge.read_sample` and decides with a
pluggable vote step (default: majority, ties by mean log-probability; App. E). Style: prometheus-eval's judge.

Example::

    from surveyalign.backends import load_backend
    from surveyalign.judge import Judge

    judge = Judge(load_backend("constant", score=1))
    verdict = judge.judge(open("survey.md").read(), "readability")
    print(verdict.status, verdict.score, verdict.rationale)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from surveyalign.backends import Backend, Generation, GenerationSettings
from surveyalign.calls import (
    CachedAnswer,
    Call,
    CallCache,
    acached_generate,
    backend_identity,
    cached_generate,
    call_key,
    stable_hash,
)
from surveyalign.constants import MISSING_TEXT, PROMPT_TOO_LONG, Dimension
from surveyalign.judge.records import Judgement, PreparedPrompt, read_sample
from surveyalign.judge.voting import VoteFn, decide, vote_samples
from surveyalign.models.paths import from_hub
from surveyalign.prompts import (
    DEFAULT_PROTOCOL,
    build_judge_prompt,
    count_chat_tokens,
    fit_survey_text,
)

__all__ = ["TOO_LONG_TEXT", "DimensionOptions", "Judge", "JudgeRequest"]

#: Start of the reason of a ``prompt_too_long`` unit (no call is made for it).
TOO_LONG_TEXT = "prompt too long for the model context"


#: Characters per token of the length estimate used when no tokenizer is known (API judges); a common rule of
#: thumb for English BPE vocabularies. Only a prompt over a known context by this estimate is refused.
CHARS_PER_TOKEN = 4


def model_context(backend: Any, *, probe: bool = True) -> int | None:
    """The model context (tokens) of a backend: ``max_positions`` (transformers), vLLM's ``max_model_len``, or
    the ``openai`` backend's ``max_model_len`` (its option, or what the server lists in ``/v1/models``); ``None``
    when unknown. ``probe=False``: no server is asked (an API backend gives its ``max_model_len`` option only)."""
    if not probe and hasattr(backend, "max_model_len_option"):
        value = backend.max_model_len_option
        return value if isinstance(value, int) and value > 0 else None
    for getter in (lambda b: b.max_positions, lambda b: b.max_model_len,
                   lambda b: b.llm.llm_engine.model_config.max_model_len):
        try:
            value = getter(backend)
        except Exception:  # noqa: BLE001, S112 - attribute absent or engine internals differ
            continue
        if isinstance(value, int) and value > 0:
            return value
    return None


@dataclass(frozen=True)
class DimensionOptions:
    """How one dimension is judged.

    Attributes:
        max_length: token budget of prompt + ``max_new_tokens`` (the adapter's training ``max_length``); the
            survey body is cut to fit. ``None``: no shortening.
        tokenizer: a tokenizer object or a folder / hub id to load one from, to count prompt tokens; ``None``: the
            backend's own ``tokenizer`` when it has one (API backends have none: no counting, no shortening).
        adapter: the adapter name on a multi-adapter backend (recorded; a backend that serves several adapters
            picks it).
        backend: the backend judging this dimension (e.g. one adapter folder per dimension); ``None``: the
            judge's backend.
    """

    max_length: int | None = None
    tokenizer: Any | None = None
    adapter: str | None = None
    backend: Backend | None = None


@dataclass(frozen=True)
class JudgeRequest:
    """One (survey, dimension) to judge in :meth:`Judge.judge_many`.

    Attributes:
        survey: the survey text (markdown).
        dimension: the dimension, a parsed :data:`~surveyalign.constants.Dimension` (lower case).
        knowledge: knowledge-augmentation text put before the survey (``None``: none).
        title: the survey's title (``None``: none).
        unit_id: the id used in call keys (default: the hash of the prompt sent).
    """

    survey: str
    dimension: Dimension
    knowledge: str | None = None
    title: str | None = None
    unit_id: str | None = None


class Judge:
    """A survey judge: a backend, a prompt protocol and per-dimension options (SurveyReview §5-6, App. C, E).

    Args:
        backend: the backend answering every dimension without its own (``DimensionOptions.backend``).
        protocol: prompt/answer protocol (``"v1.0"`` or ``"v1.1"``).
        settings: generation settings; sample k uses seed ``settings.seed + k`` (default: greedy, 512 tokens).
        dimensions: per-dimension options, keyed by :data:`~surveyalign.constants.Dimension`.
        default: options of dimensions absent from ``dimensions``.
        vote: the vote step over the K parsed samples of one unit (default: majority with log-prob tie-break).
        cache: a :class:`surveyalign.calls.CallCache`; calls found in it are not made again, new answers are
            appended (resumable). ``None``: nothing is kept between calls.
        concurrency: requests in flight for async backends (default: the backend's own).
        batch_size: prompts per ``generate`` for the other backends (default: the backend's own).
        context_length: model context in tokens (default: the local backend's; unknown for API backends).
        layout: prompt layout, ``"app_c"`` (SurveyReview App. C, default) or ``"shared"`` (the survey first, so a
            survey's dimensions share a cached prefix; :func:`surveyalign.prompts.build_judge_prompt`).

    The judge does not own its backends: close them yourself (``with load_backend(...) as backend:``).
    """

    def __init__(self, backend: Backend, *, protocol: str = DEFAULT_PROTOCOL,
                 settings: GenerationSettings | None = None,
                 dimensions: Mapping[Dimension, DimensionOptions] | None = None,
                 default: DimensionOptions | None = None, vote: VoteFn = vote_samples,
                 cache: CallCache | None = None, concurrency: int | None = None, batch_size: int | None = None,
                 context_length: int | None = None, layout: str = "app_c") -> None:
        self.backend = backend
        self.layout = layout
        self.protocol = protocol
        self.settings = settings if settings is not None else GenerationSettings()
        self.dimensions = dict(dimensions or {})
        self.default = default if default is not None else DimensionOptions()
        self.vote = vote
        self.cache = cache
        self.concurrency = concurrency
        self.batch_size = batch_size
        self.context_length = context_length
        #: dimension -> model context (tokens) taking precedence over the backend's (``evaluate --plan`` offline)
        self.contexts: dict[str, int] = {}
        #: ask an API server for its context (``/v1/models``) when no option gives it; off for ``evaluate --plan``
        self.probe_context = True
        self._tokenizers: dict[str, Any] = {}
        self._identities: dict[int, dict[str, Any]] = {}
        #: messages hash -> the untrusted texts of that prompt (survey, title, knowledge), for :meth:`unusable`
        self._untrusted: dict[str, tuple[str, ...]] = {}

    # ------------------------------------------------------------------------------------------ per dimension

    def options(self, dimension: Dimension) -> DimensionOptions:
        """The options of ``dimension`` (``default`` when it has none of its own)."""
        return self.dimensions.get(dimension, self.default)

    def backend_for(self, dimension: Dimension) -> Backend:
        """The backend judging ``dimension``."""
        return self.options(dimension).backend or self.backend

    def identity(self, dimension: Dimension) -> dict[str, Any]:
        """The backend identity of ``dimension`` in call keys (:func:`backend_identity`, computed once per backend)."""
        backend = self.backend_for(dimension)
        if id(backend) not in self._identities:
            self._identities[id(backend)] = backend_identity(backend)
        return self._identities[id(backend)]

    def tokenizer_for(self, dimension: Dimension) -> Any | None:
        """The tokenizer counting prompt tokens of ``dimension`` (loaded once per name), or ``None``.

        Raises:
            ValueError: a tokenizer folder / id that cannot be loaded.
        """
        tok = self.options(dimension).tokenizer
        if isinstance(tok, str):
            if tok not in self._tokenizers:
                from transformers import (
                    AutoTokenizer,  # heavy (loads torch): only when a tokenizer is named
                )

                try:
                    self._tokenizers[tok] = from_hub(AutoTokenizer.from_pretrained, tok, "tokenizer")
                except (OSError, ValueError) as err:
                    raise ValueError(f"tokenizer {tok!r} cannot be loaded: {err}") from None
            return self._tokenizers[tok]
        return tok if tok is not None else getattr(self.backend_for(dimension), "tokenizer", None)

    def context_for(self, dimension: Dimension) -> int | None:
        """The model context (tokens) of ``dimension``'s backend, ``None`` when unknown (:attr:`contexts` first;
        the server is asked only when :attr:`probe_context` is on)."""
        return (self.context_length or self.contexts.get(dimension)
                or model_context(self.backend_for(dimension), probe=self.probe_context))

    def settings_for(self, sample: int) -> GenerationSettings:
        """The settings of sample ``sample``: ``settings`` with seed ``settings.seed + sample``."""
        return self.settings.model_copy(update={"seed": self.settings.seed + sample})

    # ------------------------------------------------------------------------------------------ prompts

    def prepare(self, survey: str, dimension: Dimension, *, knowledge: str | None = None, title: str | None = None
                ) -> PreparedPrompt:
        """Build the prompt and apply the length rule (SurveyReview App. C; SurveyAlign App. D).

        The end of the survey body is cut at a token boundary until prompt + ``max_new_tokens`` fit
        ``max_length``; the instruction and the knowledge block are never cut. Tokens are counted on the prompt
        rendered with the chat template (``enable_thinking`` of ``settings``).

        Args:
            survey: the survey text (markdown); blank: status ``missing_text``.
            dimension: the dimension, a parsed :data:`~surveyalign.constants.Dimension` (lower case).
            knowledge: knowledge-augmentation text (``None`` / blank: none).
            title: the survey's title (``None`` / blank: none).

        Returns:
            The :class:`PreparedPrompt`; status ``prompt_too_long`` when the prompt cannot fit ``max_length`` or
            the model context even with the survey body shortened.

        Raises:
            ValueError: unknown dimension or protocol; a tokenizer that cannot be loaded.
        """
        dim = dimension  # a parsed Dimension; build_judge_prompt names a wrong one
        knowledge = knowledge or None
        title = title or None

        def build(text: str) -> list[dict[str, str]]:
            return build_judge_prompt(dim, text, protocol=self.protocol, knowledge=knowledge,
                                      title=title, layout=self.layout).messages()

        template = build_judge_prompt(dim, survey or "", protocol=self.protocol, knowledge=knowledge, title=title,
                                      layout=self.layout)
        common = {"dimension": dim, "template_hash": template.template_hash, "has_knowledge": template.has_knowledge,
                  "survey_chars": len(survey or ""), "neutralised": template.neutralised,
                  "untrusted": tuple(t for t in (survey, title, knowledge) if t)}
        if not (survey or "").strip():
            return PreparedPrompt(**common, messages=None, messages_hash=None, status=MISSING_TEXT,
                                  reason="empty survey text: no call made")
        messages = build(survey)
        tok = self.tokenizer_for(dim)
        if tok is None:
            # no tokenizer (API judges): the survey is never sent whole past a known model context (the backend
            # option max_model_len or the server's /v1/models entry); a characters / 4 estimate decides, and the
            # refusal names the numbers. max_length (the training length rule) needs a tokenizer to cut.
            max_new = self.settings.max_new_tokens
            backend = self.backend_for(dim)
            context = self.context_for(dim) if getattr(backend, "answers_from_model", True) else None
            if context is None:
                return PreparedPrompt(**common, messages=messages, messages_hash=stable_hash(messages),
                                      read_chars=len(survey))
            chars = sum(len(m.get("content") or "") for m in messages)
            estimate = -(-chars // CHARS_PER_TOKEN)
            if estimate + max_new > context:
                return PreparedPrompt(
                    **common, messages=messages, messages_hash=stable_hash(messages), status=PROMPT_TOO_LONG,
                    counted="characters",
                    reason=(f"{TOO_LONG_TEXT}: the prompt has {chars} characters (about {estimate} tokens at "
                            f"{CHARS_PER_TOKEN} characters per token) + max_new_tokens={max_new} exceed the "
                            f"server's context (max_model_len) of {context} tokens; name the judge's tokenizer to "
                            f"cut the survey by the length rule (score: --tokenizer DIR or `tokenizer: DIR` in the "
                            f"judge config; evaluate: `tokenizer: DIR`, CLI --tokenizer) with max_length (CLI: "
                            f"--max-length) at most {context}, or shorten it (no call made)"))
            return PreparedPrompt(**common, messages=messages, messages_hash=stable_hash(messages),
                                  read_chars=len(survey), counted="characters")
        budget, max_new = self.options(dim).max_length, self.settings.max_new_tokens

        def count(text: str) -> int:
            return count_chat_tokens(tok, build(text), enable_thinking=self.settings.enable_thinking,
                                     add_generation_prompt=True)

        def too_long(why: str, **extra: Any) -> PreparedPrompt:
            return PreparedPrompt(**common, messages=messages, messages_hash=stable_hash(messages),
                                  status=PROMPT_TOO_LONG, reason=f"{TOO_LONG_TEXT}: {why} (no call made)", **extra)

        limit = None if budget is None else budget - max_new
        if limit is not None and limit <= 0:
            return too_long(f"max_length={budget} leaves no room for a prompt with max_new_tokens={max_new}")
        common["counted"] = "tokens"
        try:
            text, n_tokens, removed = fit_survey_text(survey, count, limit, tok)
        except ValueError:
            return too_long(f"the prompt needs {count('')} tokens with an empty survey body, more than "
                            f"max_length={budget} - max_new_tokens={max_new}")
        if removed:
            messages = build(text)
        context = self.context_for(dim)
        if context is not None and n_tokens + max_new > context:
            cut = (f" after cutting {removed} survey tokens to max_length={budget}" if removed
                   else f"; set max_length (CLI: --max-length) to at most {context} to shorten the survey body")
            return too_long(f"{n_tokens} prompt tokens + max_new_tokens={max_new} exceed the context of "
                            f"{context}{cut}", prompt_tokens=n_tokens, shortened_tokens=removed)
        try:  # the whole body's tokens, for "tokens read of total" in the reports
            survey_tokens = len(tok(survey, add_special_tokens=False)["input_ids"])
        except Exception:  # noqa: BLE001 - a counting stand-in without the tokenizer call: characters only
            survey_tokens = None
        return PreparedPrompt(**common, messages=messages, messages_hash=stable_hash(messages),
                              prompt_tokens=n_tokens, shortened_tokens=removed, read_chars=len(text),
                              survey_tokens=survey_tokens)

    def call_key(self, prepared: PreparedPrompt, sample: int, *, unit_id: str | None = None,
                 stage: str = "judge") -> str:
        """The call-cache key of sample ``sample`` of ``prepared`` (:func:`surveyalign.calls.call_key`; the
        dimension judged is the key's namespace)."""
        return call_key(stage=stage, unit_id=unit_id or prepared.messages_hash or "", namespace=prepared.dimension,
                        sample=sample, messages_hash=prepared.messages_hash or "",
                        backend=self.identity(prepared.dimension), settings=self.settings.model_dump())

    def calls_for(self, prepared: PreparedPrompt, samples: int, *, unit_id: str | None = None) -> list[Call]:
        """The K calls of one prepared prompt (none when it is not sendable)."""
        if not prepared.sendable:
            return []
        if prepared.messages_hash:
            self._untrusted[prepared.messages_hash] = tuple(prepared.untrusted)
        return [Call(key=self.call_key(prepared, k, unit_id=unit_id), stage="judge",
                     unit_id=unit_id or prepared.messages_hash, namespace=prepared.dimension, sample=k,
                     messages=prepared.messages, messages_hash=prepared.messages_hash,
                     settings=self.settings_for(k), backend=self.backend_for(prepared.dimension))
                for k in range(samples)]

    def decide(self, prepared: PreparedPrompt, generations: Sequence[Generation]) -> Judgement:
        """Parse the K answers of ``prepared`` (sample order) and vote (:func:`surveyalign.judge.decide`)."""
        records = [read_sample(g, protocol=self.protocol, sample=k, seed=self.settings.seed + k,
                               untrusted=prepared.untrusted) for k, g in enumerate(generations)]
        return decide(prepared, records, vote=self.vote)

    # ------------------------------------------------------------------------------------------ judging

    def judge(self, survey: str, dimension: Dimension, *, knowledge: str | None = None, title: str | None = None,
              samples: int = 1) -> Judgement:
        """Judge one survey on one dimension with ``samples`` sampled answers (SurveyReview App. E).

        Args:
            survey: the survey text (markdown).
            dimension: the dimension, a parsed :data:`~surveyalign.constants.Dimension` (lower case).
            knowledge: knowledge-augmentation text put before the survey (``None``: none).
            title: the survey's title (``None``: none).
            samples: K >= 1 answers; sample k uses seed ``settings.seed + k``.

        Returns:
            The :class:`Judgement` (status ``scored``, ``parse_failed``, ``api_error``, ``prompt_too_long`` or
            ``missing_text``; never raises for a failing call).

        Raises:
            ValueError: unknown dimension or protocol, ``samples < 1``.
        """
        return self.judge_many([JudgeRequest(survey, dimension, knowledge, title)], samples=samples)[0]

    async def ajudge(self, survey: str, dimension: Dimension, *, knowledge: str | None = None, title: str | None = None,
                     samples: int = 1) -> Judgement:
        """Async :meth:`judge` (same arguments and result)."""
        return (await self.ajudge_many([JudgeRequest(survey, dimension, knowledge, title)], samples=samples))[0]

    def _plan(self, requests: Sequence[JudgeRequest], samples: int
              ) -> tuple[list[PreparedPrompt], list[list[Call]], list[Call]]:
        if not isinstance(samples, int) or samples < 1:
            raise ValueError(f"samples must be a positive integer, got {samples!r}")
        prepared = [self.prepare(r.survey, r.dimension, knowledge=r.knowledge, title=r.title) for r in requests]
        per_request = [self.calls_for(p, samples, unit_id=r.unit_id) for p, r in zip(prepared, requests)]
        return prepared, per_request, [c for calls in per_request for c in calls]

    def unusable(self, call: Call, generation: Generation) -> str | None:
        """The call layer's reader (:data:`surveyalign.calls.Check`): why a cached answer gives no score (parse
        failure, truncation, refusal), so it is asked again on a re-run; ``None`` when it gives one.

        What the answer quotes from the call's input (the survey, title and knowledge of the prompt the call was
        made from by :meth:`calls_for`) never decides, as in :meth:`decide`: an answer whose only score marker is
        a quote gives no score and is asked again.

        Args:
            call: the call (its ``messages_hash`` names the prompt whose untrusted texts the answer is read with;
                a call not made by :meth:`calls_for` is read without them).
            generation: its cached answer.

        Returns:
            The parse error, or ``None``.
        """
        untrusted = self._untrusted.get(call.messages_hash, ())
        return read_sample(generation, protocol=self.protocol, untrusted=untrusted).parse_error

    def _decide_all(self, prepared: list[PreparedPrompt], per_request: list[list[Call]], flat: list[Call],
                    got: list[CachedAnswer]) -> list[Judgement]:
        answers = {c.key: a.generation for c, a in zip(flat, got)}
        return [self.decide(p, [answers[c.key] for c in calls]) for p, calls in zip(prepared, per_request)]

    def judge_many(self, requests: Sequence[JudgeRequest], *, samples: int = 1, progress: bool = False
                   ) -> list[Judgement]:
        """Judge many (survey, dimension) requests; calls run concurrently / in batches (App. E).

        Args:
            requests: the requests.
            samples: K >= 1 answers per request.
            progress: show a progress bar.

        Returns:
            One :class:`Judgement` per request, in request order.

        Raises:
            ValueError: unknown dimension or protocol, ``samples < 1``.
        """
        prepared, per_request, flat = self._plan(requests, samples)
        got = cached_generate(flat, self.cache, concurrency=self.concurrency, batch_size=self.batch_size,
                              progress=progress, desc="judge", check=self.unusable)
        return self._decide_all(prepared, per_request, flat, got)

    async def ajudge_many(self, requests: Sequence[JudgeRequest], *, samples: int = 1, progress: bool = False
                          ) -> list[Judgement]:
        """Async :meth:`judge_many` (same arguments and result), for callers running an event loop."""
        prepared, per_request, flat = self._plan(requests, samples)
        got = await acached_generate(flat, self.cache, concurrency=self.concurrency, batch_size=self.batch_size,
                                     progress=progress, desc="judge", check=self.unusable)
        return self._decide_all(prepared, per_request, flat, got)
