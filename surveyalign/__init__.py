"""surveyalign: train and evaluate LLM judges of survey papers against human reviewers.

Sub-packages by layer, bottom to top (a package imports only lower layers; ``tests/test_package_map.py`` holds
the map, README "Architecture" prints it):

- core (modules): ``constants`` (dimensions, statuses, the typed ``Dimension``), ``paths`` (shipped files, safe
  output names from inputs, paths confined to a folder), ``argtypes`` (flag types), ``console``, ``yamlconfig``
  (the YAML reader and the config type ``DimensionName``), ``redact`` (secrets removed from error texts).
- services: ``models`` (base identity, quantisation, the training record, the ``max_length`` rule),
  ``documents`` (markdown / LaTeX / PDF / JATS read into one Document, leakage guard, reference readers, the
  bibliographic ``Paper``, the heading splitter and the token fitter), ``backends`` (API, transformers, vLLM
  judges, the OpenAI-compatible server, the ``ModelRole`` config, one ``RetryPolicy``), ``calls`` (the call
  layer: cached resumable LLM calls keyed by content + namespace, request fusion, polite HTTP, cost).
- domains: ``prompts`` (protocol and parser), ``data`` (SurveyReview builder and loader), ``knowledge``
  (Comp-KA / Crit-KA), ``judge`` (the K-sample judge), ``training`` (SFT/DPO recipe support), ``scoring``
  (MSE/MAE, RQS, HAS, baselines, reports).
- users: ``evaluation`` (resumable harness), ``inference`` (``surveyalign score``), ``autoraters``
  (PaperOrchestra autoraters), ``prism`` (PRISM review pipeline), ``annotation``
  (extend SurveyReview: find surveys, collect reviews, LLM pre-annotation, Label Studio round trip, agreement,
  release), ``systems`` (rank survey writers on shared topics: ``surveyalign systems``), ``rewards``
  (SurveyAlign as a training reward for TRL GRPO / OpenRLHF / verl, reward-hacking checks, the reward log report).
- top: ``cli``, ``demo``, ``paper`` (the paper end to end: ``surveyalign paper``), ``testing`` (tiny test model,
  stand-in servers, offline RQS / Crit-KA stand-ins).
"""

import os as _os

__version__ = "0.1.0"

# pyarrow's bundled mimalloc commits its arenas eagerly by default; on a VM with transparent huge pages on
# "madvise" that triples the kernel (page-fault) time of writing the dataset's parquet files (2.1 s vs 0.7 s of
# system CPU). Read by mimalloc when pyarrow loads, so set before; a value already set wins.
_os.environ.setdefault("MIMALLOC_ARENA_EAGER_COMMIT", "0")
