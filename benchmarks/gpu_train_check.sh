#!/usr/bin/env bash
# GPU check of the SFT recipe at the paper's sequence length (SurveyAlign App. D): 20 optimizer steps of a
# small model with Qwen3's real architecture (random weights, built locally: no download), LoRA r=8 on the seven
# projections, gradient checkpointing, DeepSpeed ZeRO-3, 16,384-token examples, once in bf16 and once in fp16
# (the paper's precision). Every survey of the sample release is repeated until its rendered example is longer
# than MAX_LENGTH (the number of copies is computed with the tokenizer and checked), so the recipe shortens every
# example to just under MAX_LENGTH; the check fails unless the longest trained example (training record,
# length.train.longest) is >= 0.95 x MAX_LENGTH. Prints that length, tokens/s and peak GPU memory per run.
# QLoRA cases (issue 16): "qlora" trains configs/sft/qlora-readability.yaml on ONE process (4-bit NF4 base with
# double quantisation, bf16 compute, paged 8-bit AdamW, no DeepSpeed); "qlora-zero3" trains
# configs/sft/qlora-zero3-readability.yaml under ZeRO-3 on NPROC processes (4-bit weights stored in bf16 so
# DeepSpeed shards them). Every case prints the measured peak memory beside `surveyalign train plan`'s estimate
# for the same config, model, length and process count, and a QLoRA case fails unless its training record carries
# the 4-bit quantisation.
#
# Usage (from the repository root, on a machine with CUDA):
#   bash benchmarks/gpu_train_check.sh                 # Qwen3-0.6B architecture, 1 GPU, 20 steps
#   ARCH=1.7b NPROC=2 STEPS=20 bash benchmarks/gpu_train_check.sh
#   PRECISIONS="qlora" ARCH=4b bash benchmarks/gpu_train_check.sh          # QLoRA on one GPU
#   PRECISIONS="qlora-zero3" NPROC=2 bash benchmarks/gpu_train_check.sh    # QLoRA under ZeRO-3
# Environment knobs: PYTHON (default .venv/bin/python), ARCH (0.6b | 1.7b | 4b), NPROC (GPUs, default 1),
# STEPS (default 20), MAX_LENGTH (default 16384), PRECISIONS (default "bf16 fp16 qlora qlora-zero3"), WORK (default
# runs/gpu_train_check). Exit status is non-zero when a run fails, saves an empty adapter or trains on examples
# shorter than 0.95 x MAX_LENGTH.
# Script check without a GPU (tiny architecture, ZeRO-3 on one CPU process; figures meaningless):
#   ALLOW_CPU=1 ARCH=tiny STEPS=2 MAX_LENGTH=2048 PRECISIONS="fp32 qlora" bash benchmarks/gpu_train_check.sh
set -euo pipefail

PYTHON=${PYTHON:-.venv/bin/python}
ARCH=${ARCH:-0.6b}
NPROC=${NPROC:-1}
STEPS=${STEPS:-20}
MAX_LENGTH=${MAX_LENGTH:-16384}
PRECISIONS=${PRECISIONS:-"bf16 fp16 qlora qlora-zero3"}
WORK=${WORK:-runs/gpu_train_check}
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 HF_EVALUATE_OFFLINE=1 WANDB_MODE=disabled TOKENIZERS_PARALLELISM=false

ACCEL_CONFIG=configs/accelerate/zero3.yaml
CPU_FLAGS=()
if [ "${ALLOW_CPU:-0}" = 1 ]; then
    ACCEL_CONFIG=configs/accelerate/zero3-cpu.yaml; CPU_FLAGS=(--use_cpu true --activation_checkpointing false)
elif ! "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "gpu_train_check: no CUDA device visible to $PYTHON; this check needs a GPU" >&2
    exit 2
fi
mkdir -p "$WORK"
"$PYTHON" - "$WORK" "$ARCH" "$MAX_LENGTH" <<'PY'
"""Build the random real-architecture model and a SurveyReview folder whose every example exceeds MAX_LENGTH."""
import json, math, sys
from pathlib import Path

import torch
from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

from surveyalign.data import build_dataset, load_surveyreview, sample_release_dir
from surveyalign.prompts import build_sft_example, count_chat_tokens
from surveyalign.testing import build_tiny_model

work, arch, max_length = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
sizes = {  # Qwen3 dense configurations (hidden, layers, heads, kv heads, intermediate, head_dim, vocab)
    "0.6b": (1024, 28, 16, 8, 3072, 128, 151936), "1.7b": (2048, 28, 16, 8, 6144, 128, 151936),
    "4b": (2560, 36, 32, 8, 9728, 128, 151936), "tiny": (64, 2, 4, 2, 128, 16, 2048),
}[arch]
model_dir = work / f"qwen3-{arch}-random"
tokenizer = AutoTokenizer.from_pretrained(build_tiny_model(work / "tiny"))  # tokenizer + Qwen3-like chat template
config_path = model_dir / "config.json"
if not config_path.exists() or json.loads(config_path.read_text())["vocab_size"] < len(tokenizer):
    hidden, layers, heads, kv, inter, head_dim, vocab = sizes
    config = Qwen3Config(vocab_size=max(vocab, len(tokenizer)), hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv, intermediate_size=inter,
                         head_dim=head_dim, max_position_embeddings=40960, tie_word_embeddings=True,
                         dtype="bfloat16", eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    print(f"model: {sum(p.numel() for p in model.parameters()) / 1e9:.2f}B parameters -> {model_dir}")

data_dir = work / f"surveyreview-long-{max_length}"  # one folder per MAX_LENGTH: the repeats depend on it
if not (data_dir / "README.md").exists():
    base = work / "surveyreview"
    if not (base / "build_report.json").exists():
        build_dataset(sample_release_dir(), base)
    train = load_surveyreview(base, "readability", split="train")

    def n_tokens(row, text):  # the rendered example exactly as recipes/sft.py builds it (before fitting)
        ex = build_sft_example("readability", text, row["rationales"], int(row["score"]), title=row["title"] or None)
        return count_chat_tokens(tokenizer, ex["prompt"] + ex["completion"], enable_thinking=False)

    def lengthen(row):
        """Repeat the survey body until the example is longer than max_length (computed, then checked)."""
        once, empty = n_tokens(row, row["text"]), n_tokens(row, "")
        copies = max(2, math.ceil((max_length - empty) / max(1, once - empty)) + 1)
        text = "\n\n".join([row["text"]] * copies)
        while (total := n_tokens(row, text)) <= max_length:
            copies += 1
            text = "\n\n".join([row["text"]] * copies)
        return {"text": text, "copies": copies, "tokens_before_fit": total}

    long = train.map(lengthen)
    shortest = min(long["tokens_before_fit"])
    assert shortest > max_length, f"an example has {shortest} <= {max_length} tokens"
    print(f"data: {len(long)} readability units, {min(long['copies'])}-{max(long['copies'])} copies of the survey, "
          f"{shortest}-{max(long['tokens_before_fit'])} tokens before fitting to max_length={max_length} -> "
          f"{data_dir}")
    long = long.remove_columns(["copies", "tokens_before_fit"])
    (data_dir / "data" / "readability").mkdir(parents=True, exist_ok=True)
    long.to_parquet(str(data_dir / "data" / "readability" / "train.parquet"))
    (data_dir / "README.md").write_text(
        "---\nconfigs:\n- config_name: readability\n  data_files:\n  - split: train\n"
        "    path: data/readability/train.parquet\n---\nLong-survey copy of the sample release for the GPU check.\n")
PY

ATTN=sdpa
if "$PYTHON" -c "import flash_attn" 2>/dev/null; then ATTN=flash_attention_2; fi
STATUS=0
SUMMARY=()
for PREC in $PRECISIONS; do
    CONFIG=configs/sft/readability.yaml
    LAUNCH=(--config_file "$ACCEL_CONFIG" --num_processes "$NPROC")
    PLAN=(--accelerate-config "$ACCEL_CONFIG" --num-processes "$NPROC")
    case "$PREC" in
        fp16) FLAGS=(--fp16 true --bf16 false --dtype float16) ;;
        bf16) FLAGS=(--fp16 false --bf16 true --dtype bfloat16) ;;
        qlora|qlora-zero3)
            if [ "$PREC" = qlora ]; then  # one process, no DeepSpeed: the one-GPU recipe
                CONFIG=configs/sft/qlora-readability.yaml
                LAUNCH=(--num_processes 1 --num_machines 1 --mixed_precision no --dynamo_backend no)
                PLAN=(--num-processes 1)
            else
                CONFIG=configs/sft/qlora-zero3-readability.yaml
            fi
            if [ "${ALLOW_CPU:-0}" = 1 ]; then  # 4-bit layers run on CPU in fp32 compute (no bf16 there)
                FLAGS=(--fp16 false --bf16 false --dtype float32 --optim adamw_torch)
            else
                FLAGS=(--fp16 false --bf16 true --dtype bfloat16)
            fi ;;
        *) FLAGS=(--fp16 false --bf16 false --dtype float32) ;;
    esac
    ESTIMATE=$("$PYTHON" -m surveyalign train plan --config "$CONFIG" --model "$WORK/qwen3-$ARCH-random" \
        --max-length "$MAX_LENGTH" "${PLAN[@]}" --json | "$PYTHON" -c \
        "import json, sys; p = json.load(sys.stdin); print(p['total_gib'], p['weights_gib'])") || ESTIMATE="nan nan"
    OUT="$WORK/adapter-$ARCH-$PREC"
    rm -rf "$OUT"
    START=$(date +%s)
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 > "$WORK/smi-$PREC.csv" 2>/dev/null &
    SMI=$!
    set +e
    "$PYTHON" -m accelerate.commands.launch "${LAUNCH[@]}" \
        recipes/sft.py --config "$CONFIG" \
        --model_name_or_path "$WORK/qwen3-$ARCH-random" --dataset_path "$WORK/surveyreview-long-$MAX_LENGTH" --output_dir "$OUT" \
        --max_steps "$STEPS" --max_length "$MAX_LENGTH" --gradient_accumulation_steps 1 --warmup_steps 2 \
        --eval_strategy no --save_strategy no --load_best_model_at_end false --logging_steps 1 --report_to none \
        --attn_implementation "$ATTN" "${FLAGS[@]}" ${CPU_FLAGS[@]+"${CPU_FLAGS[@]}"} > "$WORK/train-$PREC.log" 2>&1
    RC=$?
    set -e
    kill "$SMI" 2>/dev/null || true
    WALL=$(( $(date +%s) - START ))
    if [ $RC -ne 0 ]; then
        echo "== $PREC: FAILED (exit $RC); last lines of $WORK/train-$PREC.log:"; tail -30 "$WORK/train-$PREC.log"
        STATUS=1; continue
    fi
    LINE=$("$PYTHON" - "$OUT" "$WORK/smi-$PREC.csv" "$PREC" "$ATTN" "$NPROC" "$WALL" $ESTIMATE <<'PY'
import sys
from pathlib import Path
from surveyalign.models import read_training_record
from surveyalign.training import inspect_adapter
out, smi, prec, attn, nproc, wall, plan_total, plan_weights = sys.argv[1:]
rec = read_training_record(out)
m = rec["metrics"]
tokens, runtime = m.get("train_tokens") or 0, m.get("train_runtime") or float("nan")
try:
    smi_peak = max(int(x) for x in Path(smi).read_text().split() if x.strip().isdigit()) / 1024
except ValueError:
    smi_peak = float("nan")
rep = inspect_adapter(out)
ok = not rep.empty and rep.modules == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
train_len = rec["length"]["train"]  # LengthReport of the examples actually trained (after fitting)
longest, max_length = train_len["longest"], rec["max_length"]
long_ok = longest >= 0.95 * max_length and train_len["n_shortened"] == train_len["n_units"]
quant = rec.get("quantization")  # QLoRA cases must say their base was 4-bit
quant_ok = (not prec.startswith("qlora")) or bool(quant and quant.get("bits") == 4)
if not quant_ok:
    print(f"{prec}: the training record carries no 4-bit quantisation ({quant!r})", file=sys.stderr)
if not long_ok:
    print(f"{prec}: longest trained example has {longest} tokens < 0.95 x max_length={max_length} "
          f"({train_len['n_shortened']}/{train_len['n_units']} shortened): the check did not run at full length",
          file=sys.stderr)
print(f"{prec:5s} attn={attn} gpus={nproc} steps={rec['hyperparameters']['max_steps']} max_length={max_length} "
      f"longest_example_tokens={longest} ({longest / max_length:.3f} x) "
      f"tokens={tokens:.0f} train_s={runtime:.1f} tokens/s={tokens / runtime:.0f} "
      f"peak_alloc_GiB(rank0)={m.get('peak_gpu_memory_gib')} peak_nvidia-smi_GiB={smi_peak:.1f} "
      f"plan_total_GiB={plan_total} plan_weights_GiB={plan_weights} "
      f"quantization={str(quant['bits']) + '-bit' if quant else 'none'} "
      f"loss_last={rec['metrics'].get('train_loss', float('nan')):.3f} adapter_tensors={rep.n_tensors} "
      f"adapter_ok={ok} length_ok={long_ok} quant_ok={quant_ok} wall_s={wall}")
sys.exit(0 if ok and long_ok and quant_ok else 3)
PY
) || STATUS=1
    SUMMARY+=("$LINE")
    echo "== $LINE"
done
echo
echo "gpu_train_check summary ($ARCH architecture, random weights, LoRA r=8 x 7 modules, grad. checkpointing;"
echo "  bf16/fp16/qlora-zero3: ZeRO-3 on $NPROC process(es); qlora: one process, 4-bit base; plan_* = train plan):"
for L in "${SUMMARY[@]}"; do echo "  $L"; done
exit $STATUS
