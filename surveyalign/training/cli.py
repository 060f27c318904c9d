"""``surveyalign train ...``: DPO pair making and thin launchers of the SFT/DPO recipes (SurveyAlign §5, App. D)."""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

from surveyalign.argtypes import (
    bool_value,
    dimension_value,
    int_at_least,
    non_negative_float,
    positive_int,
    probability,
)

_REPO_ROOT = Path(__file__).resolve().parents[2]

_LAUNCH_EPILOG = """\
Everything after the recipe YAML that the launcher does not know is passed to the recipe, e.g.
  surveyalign train sft --config configs/sft/tiny-readability.yaml --dry-run -- \\
      --model_name_or_path DIR --dataset_path DIR --output_dir DIR
prints (and without --dry-run runs)
  python -m accelerate.commands.launch --num_processes 1 ... recipes/sft.py --config ... --model_name_or_path DIR ...
With --nproc N > 1 and no accelerate config the command uses torchrun (CPU multi-process needs it)."""


def launch_command(recipe: str, config: str, *, accelerate_config: str | None = None, nproc: int = 1,
                   extra: list[str] | None = None) -> list[str]:
    """Build the command line that runs a recipe under accelerate (or torchrun for N CPU processes).

    Args:
        recipe: ``"sft"`` or ``"dpo"`` (``recipes/<recipe>.py`` of this repository).
        config: the recipe YAML.
        accelerate_config: an accelerate config file (e.g. ``configs/accelerate/zero3.yaml``); None runs
            ``nproc`` local processes.
        nproc: processes when no accelerate config is given; > 1 uses ``torch.distributed.run``.
        extra: flags appended for the recipe (overrides of YAML fields).

    Returns:
        The argv list, starting with the current Python interpreter. accelerate runs with ``--quiet``: a recipe's
        one-line error is then the last thing printed (no ``CalledProcessError`` traceback after it).
    """
    script = str(_REPO_ROOT / "recipes" / f"{recipe}.py")
    if accelerate_config:
        head = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", accelerate_config, "--quiet"]
    elif nproc > 1:
        head = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc)]
    else:
        head = [sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "1", "--num_machines", "1",
                "--mixed_precision", "no", "--dynamo_backend", "no", "--quiet"]
    return [*head, script, "--config", config, *(extra or [])]


def _cmd_launch(args: argparse.Namespace) -> int:
    from pathlib import Path

    for label, path in (("--config", args.config), ("--accelerate-config", args.accelerate_config)):
        if path and not Path(path).is_file():
            raise FileNotFoundError(f"{label} {path}: no such file")
    extra = [a for a in args.recipe_args if a != "--"]
    cmd = launch_command(args.recipe, args.config, accelerate_config=args.accelerate_config, nproc=args.nproc,
                         extra=extra)
    print(shlex.join(cmd), flush=True)
    if args.dry_run:
        return 0
    return subprocess.call(cmd)


def _cmd_dpo_pairs(args: argparse.Namespace) -> int:
    from surveyalign.training.pairs import make_dpo_pairs

    summary = make_dpo_pairs(
        args.dataset, args.adapter, args.out, k=args.k, dimension=args.dimension, split=args.split,
        model=args.model, protocol=args.protocol, enable_thinking=args.enable_thinking,
        use_knowledge=False if args.no_knowledge else None,
        allow_missing_knowledge=args.allow_missing_knowledge, temperature=args.temperature, top_p=args.top_p,
        max_new_tokens=args.max_new_tokens, max_length=args.max_length, seed=args.seed,
        fallback_model=args.fallback_model, fallback_k=args.fallback_k, limit=args.limit,
        batch_size=args.batch_size, device=args.device,
    )
    print(json.dumps(summary.to_dict(), indent=2))
    print(summary.describe(), flush=True)
    if not summary.n_paired_in_file:  # a stage with no usable result exits 3
        print(f"surveyalign train dpo-pairs: no unit got a pair ({summary.n_no_pair_in_file} recorded without one, "
              f"each with its reason, in {summary.out}; exit 3)", file=sys.stderr)
        return 3
    return 0


def _cmd_plan(args: argparse.Namespace) -> int:
    from surveyalign.console import make_console, stdout_to_stderr

    with stdout_to_stderr():  # --json: a library printing at import never gets into the JSON
        from surveyalign.training.plan import (
            GIB,
            GPU_MEMORY_GIB,
            HEADROOM_GIB,
            gpu_fit,
            plan_from_config,
        )

    for label, path in (("--config", args.config), ("--accelerate-config", args.accelerate_config)):
        if path and not Path(path).is_file():
            raise FileNotFoundError(f"{label} {path}: no such file")
    world_size = args.num_processes
    if args.nodes is not None or args.gpus_per_node is not None:
        if world_size is not None:
            raise ValueError("give either --num-processes or --nodes / --gpus-per-node, not both")
        world_size = (args.nodes or 1) * (args.gpus_per_node or 8)
    with stdout_to_stderr():
        plan = plan_from_config(args.config, accelerate_config=args.accelerate_config, world_size=world_size,
                                model=args.model, max_length=args.max_length)
    nodes = args.nodes or 1
    need, fits, small = gpu_fit(plan.total_bytes)
    if args.json:
        print(json.dumps({**plan.to_dict(), "nodes": nodes, "gpus_per_node": plan.world_size // nodes,
                          "need_gib_per_gpu": round(need, 2), "fits": fits, "too_small": small}, indent=2))
        return 0
    from rich.table import Table

    table = Table(title=f"memory per GPU: {args.config} ({plan.n_params / 1e9:.2f}B parameters, quantization "
                        f"{plan.quantization}, {plan.world_size} process(es), ZeRO-{plan.zero_stage})")
    table.add_column("part")
    table.add_column("GiB", justify="right")
    table.add_column("from")
    lora_from = f"{plan.n_lora / 1e6:.1f}M LoRA parameters, {plan.optimizer}"
    checkpointing = "on" if plan.gradient_checkpointing else "off"
    activations_from = f"{plan.max_length} tokens x batch {plan.batch_size}, checkpointing {checkpointing}"
    weights_from = (f"{plan.n_quantized / 1e9:.2f}B quantised of {plan.n_params / 1e9:.2f}B" if plan.n_quantized
                    else f"{plan.n_params / 1e9:.2f}B in 16 bits, none quantised")
    rows = [("weights", plan.weights_bytes, weights_from),
            ("LoRA weights + gradients + optimizer", plan.lora_bytes, lora_from),
            ("activations", plan.activation_bytes, activations_from),
            ("logits", plan.logits_bytes, "16-bit logits + fp32 copy in the loss")]
    for part, value, source in rows:
        table.add_row(part, f"{value / GIB:.2f}", source)
    table.add_row("total", f"{plan.total_bytes / GIB:.2f}", "without CUDA context and allocator overhead",
                  style="bold")
    console = make_console()
    console.print(table)
    layout = f"{nodes} node(s) x {plan.world_size // nodes}" if args.nodes else "one node"
    console.print(f"needs {plan.world_size} GPU(s) ({layout}) with at least {need:.1f} GiB each (total + "
                  f"{HEADROOM_GIB:g} GiB for CUDA context, allocator and communication buffers); fits: "
                  f"{', '.join(fits) or 'none of ' + ', '.join(GPU_MEMORY_GIB)}"
                  + (f"; too small: {', '.join(small)}" if small else ""), markup=False)
    return 0


def _cmd_slurm(args: argparse.Namespace) -> int:
    import shutil

    from surveyalign.training.slurm import dry_run, sbatch_command

    config, accelerate_config = getattr(args, "config", None), getattr(args, "accelerate_config", None)
    for label, path in (("--config", config), ("--accelerate-config", accelerate_config)):
        if path and not Path(path).is_file():
            raise FileNotFoundError(f"{label} {path}: no such file")
    extra = args.extra[1:] if args.extra[:1] == ["--"] else list(args.extra)
    kwargs = {"nodes": args.nodes, "gpus_per_node": args.gpus_per_node, "config": config,
              "accelerate_config": accelerate_config, "extra": extra}
    cmd = sbatch_command(args.launcher, **kwargs)
    print(shlex.join(cmd), flush=True)
    if args.dry_run:
        print(dry_run(args.launcher, **kwargs), end="", flush=True)
        return 0
    if shutil.which("sbatch") is None:
        raise RuntimeError("sbatch not found: run this on a SLURM login node, or add --dry-run")
    return subprocess.call(cmd, cwd=_REPO_ROOT)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``surveyalign train {sft,dpo,dpo-pairs}`` to the top-level parser."""
    train = subparsers.add_parser(
        "train", help="train SurveyAlign judges: SFT / DPO recipe launchers, DPO pair making, memory plans",
        description="Train the per-dimension SurveyAlign LoRA judges (SurveyAlign §5, App. D). The recipes are "
                    "recipes/sft.py and recipes/dpo.py; these subcommands launch them and make DPO pairs.",
    )
    sub = train.add_subparsers(dest="train_command", metavar="STEP")
    train.set_defaults(handler=lambda a: (train.print_help(), 0)[1])

    for recipe, what in (("sft", "supervised fine-tuning of one dimension's LoRA adapter"),
                         ("dpo", "DPO of an SFT adapter on pairs from `train dpo-pairs`")):
        p = sub.add_parser(recipe, help=f"launch recipes/{recipe}.py: {what}",
                           description=f"Launch recipes/{recipe}.py ({what}) with accelerate.",
                           epilog=_LAUNCH_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
        p.add_argument("--config", required=True, help=f"recipe YAML (configs/{recipe}/*.yaml)")
        p.add_argument("--accelerate-config", default=None,
                       help="accelerate config (configs/accelerate/zero3.yaml, ddp.yaml, zero3-cpu.yaml); "
                            "default: one local process")
        p.add_argument("--nproc", type=positive_int, default=1,
                       help="processes without an accelerate config (>1 uses torchrun; default 1)")
        p.add_argument("--dry-run", action="store_true", help="print the command without running it")
        p.add_argument("recipe_args", nargs=argparse.REMAINDER, help="flags passed on to the recipe (after --)")
        p.set_defaults(handler=_cmd_launch, recipe=recipe)

    p = sub.add_parser(
        "plan", help="expected memory per GPU of a recipe config (weights, LoRA state, activations, logits)",
        description="Print the expected memory per GPU of a recipe YAML: base weights (quantised or not, sharded "
                    "under ZeRO-3), LoRA weights + gradients + optimizer states, activations (gradient "
                    "checkpointing) and logits. The model is sized from its config.json on the meta device with "
                    "accelerate's estimator; the formula is in surveyalign/training/plan.py.",
    )
    p.add_argument("--config", required=True, help="recipe YAML (configs/sft/*.yaml, configs/dpo/*.yaml)")
    p.add_argument("--accelerate-config", default=None,
                   help="accelerate config of the run (its ZeRO stage and num_processes), e.g. "
                        "configs/accelerate/zero3.yaml; default: one process, no DeepSpeed")
    p.add_argument("--num-processes", type=positive_int, default=None,
                   help="processes (GPUs); default: num_processes of --accelerate-config, else 1")
    p.add_argument("--nodes", type=positive_int, default=None,
                   help="nodes of a multi-node run; processes = nodes x --gpus-per-node (default 8 per node)")
    p.add_argument("--gpus-per-node", type=positive_int, default=None, help="GPUs per node (with --nodes)")
    p.add_argument("--model", default=None, metavar="DIR",
                   help="folder with the model's config.json (default: the YAML's model_name_or_path)")
    p.add_argument("--max-length", type=positive_int, default=None, metavar="TOKENS",
                   help="tokens per sequence (default: the YAML's max_length)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(handler=_cmd_plan)

    p = sub.add_parser(
        "slurm", help="SLURM launchers: multi-node SFT / DPO (accelerate + ZeRO-3), a Ray cluster for judging",
        description="Queue (sbatch) or dry-run a launcher of slurm/: train.slurm runs recipes/{sft,dpo}.py on N "
                    "nodes x G GPUs with accelerate + DeepSpeed ZeRO-3 (machine rank, main address and port from "
                    "the SLURM variables); ray_cluster.slurm starts a Ray head and workers on the job's nodes and "
                    "runs the driver command given after -- with RAY_ADDRESS set. --dry-run prints the command "
                    "each node runs without SLURM.",
        epilog="examples:\n  surveyalign train slurm sft --config configs/sft/criticalness.yaml --nodes 2 "
               "--gpus-per-node 8 --dry-run -- --dataset_path data/surveyreview-ka\n"
               "  surveyalign train slurm ray-cluster --nodes 2 --gpus-per-node 8 --dry-run -- "
               "surveyalign evaluate --config configs/eval/qwen3-32b-vllm.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    launchers = p.add_subparsers(dest="launcher", metavar="LAUNCHER", required=True)
    for launcher, what in (("sft", "recipes/sft.py on N nodes x G GPUs (slurm/train.slurm)"),
                           ("dpo", "recipes/dpo.py on N nodes x G GPUs (slurm/train.slurm)"),
                           ("ray-cluster", "a Ray cluster on N nodes, then the driver command (slurm/ray_cluster.slurm)")):
        q = launchers.add_parser(launcher, help=what, description=what)
        if launcher != "ray-cluster":
            q.add_argument("--config", required=True, help=f"recipe YAML (configs/{launcher}/*.yaml)")
            q.add_argument("--accelerate-config", default=None,
                           help="accelerate config (default in the script: configs/accelerate/zero3.yaml)")
        q.add_argument("--nodes", type=positive_int, default=2, help="nodes (default 2)")
        q.add_argument("--gpus-per-node", type=positive_int, default=8, help="GPUs per node (default 8)")
        q.add_argument("--dry-run", action="store_true", help="print the commands each node runs; queue nothing")
        q.add_argument("extra", nargs=argparse.REMAINDER,
                       help="after --: recipe flags (sft / dpo) or the driver command (ray-cluster)")
        q.set_defaults(handler=_cmd_slurm)

    p = sub.add_parser(
        "dpo-pairs", help="sample K answers per training unit from an SFT adapter and write DPO pairs",
        description="For each unit of a split: chosen = the human rationale + gold score (the SFT target); "
                    "rejected = the first of K answers sampled from the SFT adapter whose parsed score differs "
                    "from gold (fallback: a zero-shot judge's answer). Units without such an answer are recorded "
                    "with status no_pair. Appends to --out and skips units already there (resumable). "
                    "Pair construction is our choice (the paper is silent). Exit status 3 when the file holds no "
                    "pair at all.",
    )
    p.add_argument("--adapter", required=True, help="SFT adapter folder (its surveyalign_training.json gives "
                                                    "the base model, dimension, protocol and enable_thinking)")
    p.add_argument("--dataset", default="data/surveyreview-ka",
                   help="SurveyReview dataset folder; default data/surveyreview-ka, the KA dataset that "
                        "`surveyalign ka build --out` writes and the KA-trained SFT configs read")
    p.add_argument("--out", required=True, help="JSONL file of pairs (appended; <out>.summary.json written)")
    p.add_argument("--k", type=positive_int, default=4, help="answers sampled per unit (default 4)")
    p.add_argument("--dimension", type=dimension_value, default=None, help="dimension (default: the adapter's)")
    p.add_argument("--split", default="train", help="split to pair (default train)")
    p.add_argument("--model", default=None, help="base model (default: the adapter's base model)")
    p.add_argument("--protocol", default=None, help="answer protocol (default: the adapter's)")
    p.add_argument("--enable-thinking", type=bool_value, default=None, metavar="{true,false}",
                   help="chat-template thinking switch (default: the adapter's)")
    p.add_argument("--no-knowledge", action="store_true",
                   help="leave the KA block out of the prompts (default: as the adapter was trained)")
    p.add_argument("--allow-missing-knowledge", action="store_true",
                   help="make pairs with knowledge on even when no row of the split has a `knowledge` text "
                        "(recorded in each pair); without it such a run is refused")
    p.add_argument("--temperature", type=non_negative_float, default=1.0, help="sampling temperature (default 1.0)")
    p.add_argument("--top-p", type=probability, default=1.0, help="nucleus mass (default 1.0)")
    p.add_argument("--max-new-tokens", type=positive_int, default=512, help="tokens per sampled answer (default 512)")
    p.add_argument("--max-length", type=positive_int, default=16384,
                   help="token budget of prompt + answer, = the DPO max_length (default 16384)")
    p.add_argument("--seed", type=int_at_least(0), default=0, help="sampling seed; sample i uses seed + i (default 0)")
    p.add_argument("--fallback-model", default=None,
                   help="zero-shot judge model (no adapter) sampled when no SFT answer differs from gold")
    p.add_argument("--fallback-k", type=positive_int, default=None, help="samples from the fallback judge (default --k)")
    p.add_argument("--limit", type=positive_int, default=None, help="only the first N units of the split")
    p.add_argument("--batch-size", type=positive_int, default=4, help="prompts per generation batch (default 4)")
    p.add_argument("--device", default="auto", help="device of the transformers backend (default auto)")
    p.set_defaults(handler=_cmd_dpo_pairs)
