"""SLURM launchers (slurm/train.slurm, slurm/ray_cluster.slurm): the dry run for 2 nodes x 8 GPUs prints the
command of each node with its machine rank and the shared main address / port (alignment-handbook launch.slurm
style), every command parses with accelerate's own launch parser; `train plan` sizes a run across nodes."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from surveyalign.cli import main
from surveyalign.training import slurm

REPO = Path(__file__).resolve().parents[1]


def _node_lines(out: str) -> dict[int, tuple[str, list[str]]]:
    lines = {}
    for line in out.splitlines():
        m = re.match(r"node (\d+) \((\S+)\): (.*)$", line)
        if m:
            lines[int(m.group(1))] = (m.group(2), shlex.split(m.group(3)))
    return lines


def test_train_dry_run_two_nodes_of_eight_gpus():
    from accelerate.commands.launch import launch_command_parser

    out = slurm.dry_run("sft", nodes=2, gpus_per_node=8, config="configs/sft/criticalness.yaml",
                        extra=["--dataset_path", "data/surveyreview"], hosts=["gpu-a", "gpu-b"], job_id=1234)
    assert "2 node(s) x 8 GPU(s) = 16 processes, main gpu-a:21234" in out
    nodes = _node_lines(out)
    assert sorted(nodes) == [0, 1] and [nodes[r][0] for r in (0, 1)] == ["gpu-a", "gpu-b"]
    parser = launch_command_parser()
    for rank, (_, argv) in nodes.items():
        assert argv[:3] == ["python", "-m", "accelerate.commands.launch"]
        args = parser.parse_args(argv[3:])  # accelerate's own parser accepts every flag
        assert (args.num_machines, args.num_processes, args.machine_rank) == (2, 16, rank)
        assert (args.main_process_ip, args.main_process_port) == ("gpu-a", 21234)
        assert args.config_file == "configs/accelerate/zero3.yaml"
        assert args.deepspeed_multinode_launcher == "standard"
        assert args.training_script == "recipes/sft.py"
        assert args.training_script_args == ["--config", "configs/sft/criticalness.yaml",
                                             "--dataset_path", "data/surveyreview"]
    srun = next(line for line in out.splitlines() if line.startswith("srun "))
    assert "--nodes=2 --ntasks-per-node=1" in srun and "--machine_rank $SLURM_PROCID" in srun


def test_train_script_refuses_an_unknown_recipe_and_a_missing_driver():
    import subprocess

    proc = subprocess.run(["bash", "slurm/train.slurm", "ppo", "x.yaml"], cwd=REPO, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "SURVEYALIGN_DRY_RUN": "1", "SLURM_NNODES": "1",
                               "SLURM_JOB_NODELIST": "n1"}, check=False)
    assert proc.returncode == 2 and "recipe must be sft or dpo, got 'ppo'" in proc.stderr
    with pytest.raises(ValueError, match="driver command"):
        slurm.dry_run("ray-cluster", nodes=2, gpus_per_node=8)


def test_ray_cluster_dry_run_two_nodes():
    out = slurm.dry_run("ray-cluster", nodes=2, gpus_per_node=8,
                        extra=["surveyalign", "evaluate", "--config", "configs/eval/qwen3-32b-vllm.yaml"])
    lines = out.splitlines()
    head = next(line for line in lines if "--head" in line)
    assert "-w node1" in head and "--port=6379" in head and "--num-gpus=8" in head and head.endswith("&")
    workers = [line for line in lines if "ray start --address=node1:6379" in line]
    assert len(workers) == 1 and "-w node2" in workers[0]
    assert lines[-1] == "env RAY_ADDRESS=node1:6379 surveyalign evaluate --config configs/eval/qwen3-32b-vllm.yaml"


def test_cli_dry_run_prints_sbatch_and_node_commands(capsys):
    assert main(["train", "slurm", "dpo", "--config", "configs/dpo/criticalness.yaml", "--nodes", "2",
                 "--gpus-per-node", "8", "--dry-run", "--", "--dataset_path", "d"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first == ("sbatch --nodes=2 --gres=gpu:8 --export=ALL,GPUS_PER_NODE=8 slurm/train.slurm dpo "
                     "configs/dpo/criticalness.yaml -- --dataset_path d")
    assert sorted(_node_lines(out)) == [0, 1] and "recipes/dpo.py" in out
    assert main(["train", "slurm", "sft", "--config", "nope.yaml", "--dry-run"]) == 2
    assert "--config nope.yaml: no such file" in capsys.readouterr().err


def _json(out: str) -> dict:
    return json.loads(out[out.index("{"):])  # after a "[INFO] Running in WANDB offline mode" line, if any


def test_train_plan_across_nodes(capsys, tmp_path):
    from transformers import Qwen3Config

    q32 = {"vocab_size": 151936, "hidden_size": 5120, "intermediate_size": 25600, "num_hidden_layers": 64,
           "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 128, "tie_word_embeddings": False}
    Qwen3Config(**q32, max_position_embeddings=40960).save_pretrained(tmp_path)
    argv = ["train", "plan", "--config", "configs/sft/readability.yaml", "--model", str(tmp_path),
            "--accelerate-config", "configs/accelerate/zero3.yaml"]
    assert main([*argv, "--json"]) == 0
    one = _json(capsys.readouterr().out)
    assert main([*argv, "--nodes", "2", "--gpus-per-node", "8", "--json"]) == 0
    two = _json(capsys.readouterr().out)
    assert (one["world_size"], two["world_size"], two["nodes"], two["gpus_per_node"]) == (8, 16, 2, 8)
    assert two["weights_bytes"] == pytest.approx(one["weights_bytes"] / 2)  # ZeRO-3 shards over 16 GPUs
    assert two["need_gib_per_gpu"] == pytest.approx(two["total_bytes"] / 2**30 + 4, abs=0.01)
    assert "H100 80GB" in two["fits"] and "A10G 24GB" in two["too_small"]
    assert main([*argv, "--nodes", "2", "--gpus-per-node", "8"]) == 0
    out = capsys.readouterr().out
    assert "needs 16 GPU(s) (2 node(s) x 8) with at least" in out and "fits: H200 141GB" in out
    assert main([*argv, "--nodes", "2", "--num-processes", "4"]) == 2


def test_ray_cluster_shares_one_auth_token_and_never_prints_it(monkeypatch):
    """Ray >= 2.5x heads ask for a token: the script exports RAY_AUTH_MODE=token and one RAY_AUTH_TOKEN for the
    head, the worker nodes and the driver (a given one is kept, else one is made); the dry run prints neither."""
    script = (REPO / "slurm" / "ray_cluster.slurm").read_text(encoding="utf-8")
    assert "export RAY_AUTH_MODE=${RAY_AUTH_MODE:-token}" in script and "export RAY_AUTH_TOKEN" in script
    monkeypatch.setenv("RAY_AUTH_TOKEN", "feedfacecafe0123")
    out = slurm.dry_run("ray-cluster", nodes=2, gpus_per_node=8, extra=["surveyalign", "evaluate"])
    assert "feedfacecafe0123" not in out and "RAY_AUTH" not in out
    monkeypatch.delenv("RAY_AUTH_TOKEN")
    lines = ('source <(sed -n "/^export RAY_AUTH_MODE/,/^export RAY_AUTH_TOKEN/p" slurm/ray_cluster.slurm); '
             'echo "$RAY_AUTH_MODE $RAY_AUTH_TOKEN"')
    proc = subprocess.run(["bash", "-c", lines], cwd=REPO,
                          capture_output=True, text=True, check=True, env={"PATH": os.environ["PATH"]})
    mode, token = proc.stdout.split()
    assert mode == "token" and len(token) == 64 and int(token, 16) >= 0  # 32 random bytes, hex
