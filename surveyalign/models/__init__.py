"""surveyalign.models: which model is loaded, how, and what training recorded about it (services layer).

One room for what the backends, training, evaluation and ``score`` must agree on about a model:

- :mod:`~surveyalign.models.paths`: model / adapter / tokenizer locations (a local-looking path is never sent to
  the Hub), offline by default;
- :mod:`~surveyalign.models.identity`: the base model's identity (name, revision, content fingerprint), the check
  that an adapter loads on the base it was trained on and that every adapter tensor attaches;
- :mod:`~surveyalign.models.quantization`: the bitsandbytes setting of a (QLoRA) base, as recorded and as loaded;
- :mod:`~surveyalign.models.record`: the adapter's training record ``surveyalign_training.json`` (one writer, one
  reader) and the one origin rule of a judge's token budget, :func:`resolve_max_length` (config, else record);
- :mod:`~surveyalign.models.length`: the one floor of ``max_length`` (:data:`MIN_MAX_LENGTH`) and its checks for
  pydantic fields, argparse flags and Python arguments.

Imports only core modules (constants, paths, argtypes, ...); torch, transformers, PEFT and bitsandbytes are
imported inside the functions that load tensors. The tiny random test model lives in :mod:`surveyalign.testing`.
"""

import lazy_loader

# Loaded on first use (lazy_loader): ``surveyalign CMD --help`` calls :func:`default_offline` from
# :mod:`~surveyalign.models.paths` and must not pay for identity / record / length (they import the backends'
# pydantic models); ``from surveyalign.models import X`` loads the name's submodule.
__getattr__ = lazy_loader.attach(
    __name__,
    submodules=["identity", "length", "paths", "quantization", "record"],
    submod_attrs={
        "identity": ["BaseMismatchError", "base_identity", "base_record", "check_adapter_attached", "compare_base",
                     "resolve_base", "resolve_bases"],
        "length": ["MIN_MAX_LENGTH", "MaxLength", "check_max_length", "max_length_arg", "max_length_problem"],
        "paths": ["NotCachedError", "default_offline", "from_hub", "hub_folder", "looks_local",
                  "not_cached_message", "resolve_model_path"],
        "quantization": ["QUANTIZATION_CHOICES", "bnb_config", "describe_quantization", "quantization_label",
                         "quantization_record", "resolve_quantization"],
        "record": ["RECORD_KEYS", "TRAINING_RECORD", "read_training_record", "resolve_max_length",
                   "write_training_record"],
    })[0]

__all__ = [
    "MIN_MAX_LENGTH",
    "QUANTIZATION_CHOICES",
    "RECORD_KEYS",
    "TRAINING_RECORD",
    "BaseMismatchError",
    "MaxLength",
    "NotCachedError",
    "base_identity",
    "base_record",
    "bnb_config",
    "check_adapter_attached",
    "check_max_length",
    "compare_base",
    "default_offline",
    "describe_quantization",
    "from_hub",
    "hub_folder",
    "looks_local",
    "max_length_arg",
    "max_length_problem",
    "not_cached_message",
    "quantization_label",
    "quantization_record",
    "read_training_record",
    "resolve_base",
    "resolve_bases",
    "resolve_max_length",
    "resolve_model_path",
    "resolve_quantization",
    "write_training_record",
]
