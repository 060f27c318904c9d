"""surveyalign.testing: stand-ins for tests, benchmarks and ``make demo`` (top layer; nothing below imports it).

- :mod:`~surveyalign.testing.tiny`: :func:`build_tiny_model`, a tiny random Qwen3 causal LM with a locally trained
  tokenizer (nothing downloaded), and its :class:`TinyModelSpec`;
- :mod:`~surveyalign.testing.chat_server`: :class:`FakeChatServer`, a scriptable OpenAI-compatible chat server on
  127.0.0.1 (delays, 429 / 500 failures, request log); ``python -m surveyalign.testing.chat_server`` runs one;
- :mod:`~surveyalign.testing.scholar_server`: :class:`FakeScholarServer`, a Semantic Scholar + OpenAlex server on
  127.0.0.1 answering in the real APIs' shapes, and its :class:`RequestLog`;
- :mod:`~surveyalign.testing.batch_server`: :class:`FakeBatchServer`, OpenAI Files + Batch and Anthropic Message
  Batches on 127.0.0.1 in their documented shapes (files, batches, results, cancel, expiry), for the official SDKs
  (shapes and limits in :mod:`~surveyalign.testing.batch_shapes`);
- :mod:`~surveyalign.testing.prompt_cache`: :class:`StandInPromptCache`, the providers' prompt caches (Anthropic
  breakpoints, OpenAI automatic prefixes) for both servers;
- :mod:`~surveyalign.testing.standins`: offline stand-ins for an RQS judge and a Crit-KA summariser (not models).
"""

import lazy_loader

# Loaded on first use, so ``python -m surveyalign.testing.chat_server`` does not import itself twice and the demo's
# tiny model does not pull in the servers.
__getattr__ = lazy_loader.attach(
    __name__,
    submod_attrs={"batch_server": ["FakeBatchServer"], "batch_shapes": ["BatchCall"], "chat_server": ["FakeChatServer"],
                  "prompt_cache": ["StandInPromptCache"],
                  "scholar_server": ["FakeScholarServer", "RequestLog"],
                  "standins": ["LEXICAL_RQS_NAME", "extractive_summary_reply", "lexical_rqs_reply"],
                  "stress_judges": ["gullible_reply", "robust_reply"],
                  "tiny": ["CHAT_TEMPLATE", "TinyModelSpec", "build_tiny_model"]})[0]

__all__ = ["CHAT_TEMPLATE", "LEXICAL_RQS_NAME", "BatchCall", "FakeBatchServer", "FakeChatServer", "FakeScholarServer", "RequestLog",
           "StandInPromptCache", "TinyModelSpec", "build_tiny_model", "extractive_summary_reply", "gullible_reply",
           "lexical_rqs_reply", "robust_reply"]
