"""SLURM launchers: multi-node SFT / DPO (accelerate + DeepSpeed ZeRO-3) and a Ray cluster for batch judging.

The scripts live in ``slurm/`` at the repository root (``slurm/train.slurm``, ``slurm/ray_cluster.slurm``) and
are submitted with ``sbatch`` as they are; this module builds the ``sbatch`` command line and runs a script in
dry-run mode (``SURVEYALIGN_DRY_RUN=1``) with the SLURM variables a job of N nodes x G GPUs would see, so the
commands every node runs can be read before a job is queued (``surveyalign train slurm ... --dry-run``).

How the scripts wire a multi-node run (alignment-handbook ``recipes/launch.slurm`` style):

* one SLURM task per node; each runs ``accelerate launch`` with ``--machine_rank $SLURM_PROCID`` (0..N-1),
  ``--num_machines $SLURM_NNODES``, ``--num_processes N*G`` and ``--main_process_ip`` = the job's first host
  (``scontrol show hostnames $SLURM_JOB_NODELIST``), ``--main_process_port`` = 20000 + job id mod 10000;
  DeepSpeed's ``standard`` multinode launcher starts G processes per node;
* the Ray cluster: ``ray start --head`` on the first host, ``ray start --address=HEAD:6379`` on the others, then
  the driver command with ``RAY_ADDRESS`` set.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

__all__ = ["SLURM_DIR", "SLURM_SCRIPTS", "dry_run", "sbatch_command"]

SLURM_DIR = Path(__file__).resolve().parents[2] / "slurm"
#: launcher name -> script in :data:`SLURM_DIR`.
SLURM_SCRIPTS = {"sft": "train.slurm", "dpo": "train.slurm", "ray-cluster": "ray_cluster.slurm"}


def _script_args(kind: str, config: str | None, accelerate_config: str | None, extra: list[str]) -> list[str]:
    if kind == "ray-cluster":
        if not extra:
            raise ValueError("ray-cluster needs the driver command after --, e.g. -- surveyalign evaluate --config X")
        return list(extra)
    if not config:
        raise ValueError(f"{kind} needs --config (a recipe YAML, configs/{kind}/*.yaml)")
    args = [kind, config]
    if accelerate_config:
        args.append(accelerate_config)
    return [*args, *(["--", *extra] if extra else [])]


def sbatch_command(kind: str, *, nodes: int, gpus_per_node: int, config: str | None = None,
                   accelerate_config: str | None = None, extra: list[str] | None = None) -> list[str]:
    """The ``sbatch`` command line that queues a launcher for ``nodes`` x ``gpus_per_node`` GPUs.

    Args:
        kind: ``"sft"``, ``"dpo"`` or ``"ray-cluster"``.
        nodes: nodes N >= 1; gpus_per_node: GPUs G >= 1 per node.
        config: the recipe YAML (sft / dpo).
        accelerate_config: accelerate config (default in the script: ``configs/accelerate/zero3.yaml``).
        extra: recipe flags (sft / dpo) or the driver command (ray-cluster).

    Returns:
        argv: ``sbatch --nodes N --gres gpu:G --export ALL,GPUS_PER_NODE=G slurm/<script> ...``.

    Raises:
        ValueError: an unknown kind, N or G < 1, no config for sft / dpo, no driver command for ray-cluster.
    """
    if kind not in SLURM_SCRIPTS:
        raise ValueError(f"launcher must be one of {sorted(SLURM_SCRIPTS)}, got {kind!r}")
    if nodes < 1 or gpus_per_node < 1:
        raise ValueError(f"nodes and gpus_per_node must be >= 1, got {nodes} and {gpus_per_node}")
    script = os.path.relpath(SLURM_DIR / SLURM_SCRIPTS[kind])
    return ["sbatch", f"--nodes={nodes}", f"--gres=gpu:{gpus_per_node}", f"--export=ALL,GPUS_PER_NODE={gpus_per_node}",
            script, *_script_args(kind, config, accelerate_config, list(extra or []))]


def dry_run(kind: str, *, nodes: int, gpus_per_node: int, config: str | None = None,
            accelerate_config: str | None = None, extra: list[str] | None = None,
            hosts: list[str] | None = None, job_id: int = 0, cpus_per_task: int = 64) -> str:
    """Run the launcher script under bash in dry-run mode and return what it prints (the per-node commands).

    The script sees the variables of a job of ``nodes`` x ``gpus_per_node`` GPUs: ``SLURM_NNODES``,
    ``SLURM_JOB_NODELIST`` (``hosts``, default ``node1..nodeN``), ``SLURM_JOB_ID``, ``SLURM_CPUS_PER_TASK``,
    ``GPUS_PER_NODE``; with ``SURVEYALIGN_DRY_RUN=1`` it calls neither ``scontrol`` nor ``srun``.

    Args:
        kind, nodes, gpus_per_node, config, accelerate_config, extra: as for :func:`sbatch_command`.
        hosts: host names of the N nodes.
        job_id: ``SLURM_JOB_ID`` (the main port is 20000 + job_id mod 10000).
        cpus_per_task: ``SLURM_CPUS_PER_TASK``.

    Returns:
        The script's standard output: a header line, one line per node (``node R (HOST): COMMAND``) and the
        ``srun`` line (train), or the ``ray start`` lines and the driver line (ray-cluster).

    Raises:
        ValueError: as :func:`sbatch_command`, or ``hosts`` of another length than ``nodes``.
        RuntimeError: the script exits non-zero (its standard error in the message).
    """
    argv = sbatch_command(kind, nodes=nodes, gpus_per_node=gpus_per_node, config=config,
                          accelerate_config=accelerate_config, extra=extra)
    hosts = hosts or [f"node{i + 1}" for i in range(nodes)]
    if len(hosts) != nodes:
        raise ValueError(f"{len(hosts)} host names for {nodes} nodes")
    env = {**os.environ, "SURVEYALIGN_DRY_RUN": "1", "SLURM_NNODES": str(nodes), "SLURM_JOB_ID": str(job_id),
           "SLURM_JOB_NODELIST": ",".join(hosts), "SLURM_CPUS_PER_TASK": str(cpus_per_task),
           "GPUS_PER_NODE": str(gpus_per_node)}
    for name in ("MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    script_at = argv.index(next(a for a in argv if a.endswith(".slurm")))
    proc = subprocess.run(["bash", *argv[script_at:]], env=env, capture_output=True, text=True,
                          cwd=SLURM_DIR.parent, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv[script_at:])} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout
