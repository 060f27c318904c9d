"""GRPO training of a survey writer against the SurveyAlign reward (TRL's GRPOTrainer; the reward is
`surveyalign.rewards.SurveyAlignReward`, async, with reward-hacking checks and a per-step reward log).

# Tiny CPU run (the tests' setting: a tiny writer, a scripted judge):
```bash
accelerate launch --num_processes 1 recipes/grpo.py --config configs/grpo/tiny.yaml \
    --model_name_or_path .cache/tiny-qwen3 --output_dir runs/grpo-tiny
```

# The paper-scale run (a Qwen3-8B writer on 4 GPUs; the SurveyAlign judge served by vLLM on 4 other GPUs):
```bash
accelerate launch --config_file configs/accelerate/zero3.yaml --num_processes 4 recipes/grpo.py \
    --config configs/grpo/qwen3-8b.yaml
```

The prompts file (`dataset_path`: JSONL / JSON / parquet) has a `prompt` column (text or chat messages) and
optionally `knowledge` (a KA text), `references` (the survey's reference list: BibTeX, a markdown list or titles,
from which the reward's `knowledge:` block builds Comp-KA / Crit-KA) and `title`. The reward YAML
(`reward_config`, configs/rewards/*.yaml) names the judge, the dimensions and weights, the signal and the checks;
the reward log goes to `reward_log` (default OUTPUT_DIR/rewards.jsonl): `surveyalign rewards report LOG`.
Any field of the YAML can be overridden on the command line (`--learning_rate 1e-6`).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

if __package__ in (None, ""):  # run as a script: make the repository importable without installing it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass
class GRPOScriptArguments:
    """What the recipe reads besides TRL's GRPOConfig and ModelConfig.

    Attributes:
        dataset_path: the prompts file (JSONL, JSON or parquet) with a ``prompt`` column.
        reward_config: the reward YAML (:class:`surveyalign.rewards.RewardConfig`).
        reward_log: the reward log (JSONL); default ``OUTPUT_DIR/rewards.jsonl``.
        sync_reward: use the synchronous reward (default: the async one, whose judge calls run concurrently).
    """

    dataset_path: str | None = field(default=None, metadata={"help": "prompts file (JSONL / JSON / parquet)"})
    reward_config: str | None = field(default=None, metadata={"help": "reward YAML (configs/rewards/*.yaml)"})
    reward_log: str | None = field(default=None, metadata={"help": "reward log; default OUTPUT_DIR/rewards.jsonl"})
    sync_reward: bool = field(default=False, metadata={"help": "use the synchronous reward callable"})


def load_prompts(path: str):
    """The prompts dataset of ``path`` (a ``datasets.Dataset`` with a ``prompt`` column).

    Raises:
        ValueError: no such file, another format, or no ``prompt`` column.
    """
    from datasets import load_dataset

    kinds = {".jsonl": "json", ".json": "json", ".parquet": "parquet"}
    kind = kinds.get(os.path.splitext(path)[1])
    if kind is None or not os.path.isfile(path):
        raise ValueError(f"--dataset_path {path!r}: expected a JSONL, JSON or parquet file of prompts")
    data = load_dataset(kind, data_files=path, split="train")
    if "prompt" not in data.column_names:
        raise ValueError(f"{path}: no 'prompt' column (columns: {', '.join(data.column_names)})")
    return data


def main(script_args, training_args, model_args) -> dict:
    """Train the writer with GRPO against the SurveyAlign reward and save it.

    Args:
        script_args: :class:`GRPOScriptArguments`.
        training_args: ``trl.GRPOConfig`` (generations per prompt, completion length, optimisation, vLLM).
        model_args: ``trl.ModelConfig`` (the writer, dtype, LoRA).

    Returns:
        ``{"log_history": the trainer's logs, "reward_counts": the reward's counts, "reward_log": its path}``.

    Raises:
        ValueError: a missing or bad ``dataset_path``, ``reward_config`` or ``model_name_or_path``.
    """
    from transformers import set_seed
    from trl import GRPOTrainer, get_peft_config

    from surveyalign.models import resolve_model_path
    from surveyalign.rewards import SurveyAlignReward

    for name in ("dataset_path", "reward_config"):
        if not getattr(script_args, name):
            raise ValueError(f"--{name} is required")
    if not model_args.model_name_or_path:
        raise ValueError("--model_name_or_path is required")
    model_args.model_name_or_path = resolve_model_path(model_args.model_name_or_path, "--model_name_or_path")
    set_seed(training_args.seed)
    prompts = load_prompts(script_args.dataset_path)
    log = script_args.reward_log or os.path.join(training_args.output_dir, "rewards.jsonl")
    with SurveyAlignReward.from_yaml(script_args.reward_config, log=log) as reward:
        trainer = GRPOTrainer(model=model_args.model_name_or_path, args=training_args, train_dataset=prompts,
                              reward_funcs=[reward.sync if script_args.sync_reward else reward],
                              peft_config=get_peft_config(model_args))
        trainer.train()
        trainer.save_model(training_args.output_dir)
        return {"log_history": trainer.state.log_history, "reward_counts": dict(reward.counts), "reward_log": log}


def make_parser():
    """The recipe's ``TrlParser`` over (GRPOScriptArguments, GRPOConfig, ModelConfig)."""
    import argparse

    from trl import GRPOConfig, ModelConfig, TrlParser

    parser = TrlParser((GRPOScriptArguments, GRPOConfig, ModelConfig), prog="recipes/grpo.py",
                       description=__doc__.replace("```bash\n", "").replace("```\n", ""),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", metavar="YAML", default=argparse.SUPPRESS,
                        help="recipe YAML (configs/grpo/*.yaml) whose keys are the options below")
    return parser


if __name__ == "__main__":
    from surveyalign.training import run_recipe

    raise SystemExit(run_recipe(main, make_parser, prog="recipes/grpo.py", doc=__doc__))
