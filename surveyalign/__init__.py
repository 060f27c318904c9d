"""surveyalign: train and evaluate LLM judges of survey papers against human reviewers.

Sub-packages: ``documents`` (markdown / LaTeX / PDF / JATS read into one Document, leakage guard, reference
readers, the bibliographic ``Paper``, the heading splitter and the token fitter), ``data`` (SurveyReview
builder), ``prompts`` (protocol and parser), ``backends`` (API, transformers, vLLM judges and the OpenAI-compatible
server), ``calls`` (the call layer: cached resumable LLM calls keyed by content + namespace, one retry policy, polite
HTTP), ``evaluation`` (resumable harness), ``scoring``
(MSE/MAE, RQS, HAS and baselines), ``training`` (SFT/DPO recipes support), ``models`` (base identity,
quantisation, the training record, the ``max_length`` rule), ``testing`` (tiny test model, stand-in servers).
"""

__version__ = "0.1.0"
