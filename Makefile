# surveyalign: the two set-up commands are `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE ?= 1
export HF_DATASETS_OFFLINE ?= 1
export HF_EVALUATE_OFFLINE ?= 1
export WANDB_MODE ?= offline
export TOKENIZERS_PARALLELISM ?= false
export DISABLE_VERSION_CHECK ?= 1

# `make test` skips tests marked slow (DeepSpeed ZeRO-3 on CPU, multi-process) unless MARKERS says otherwise;
# CI runs it with MARKERS="not gpu" so those run too.
MARKERS ?= not slow and not gpu

.PHONY: install demo test test-all lint bench clean mutation

# Creates .venv when missing and installs the project into it. Without CUDA the CPU build of torch 2.13.0
# goes in first (an unpinned torch pulls a multi-GB CUDA build), then the rest under a constraint that keeps it.
$(STAMP): setup.cfg pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	@if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then \
		echo "CUDA found: installing the default torch build"; $(BIN)/pip install -q 'torch>=2.4,<3'; \
	else \
		echo "no CUDA: installing the CPU build torch==2.13.0"; $(BIN)/pip install -q torch==2.13.0; \
	fi
	@# numpy comes with the next step: torch's "Failed to initialize NumPy" warning here does not concern the user
	@$(BIN)/python -W "ignore:Failed to initialize NumPy:UserWarning" \
		-c "import torch; print('torch==' + torch.__version__.split('+')[0])" > $(VENV)/torch-constraint.txt
	$(BIN)/pip install -q -c $(VENV)/torch-constraint.txt -e '.[train,dev,ray]'
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/surveyalign paper --config configs/paper/tiny.yaml $(DEMO_ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest -m "$(MARKERS)" $(PYTEST_ARGS)

test-all: $(STAMP)
	$(BIN)/python -m pytest -m "not gpu" $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check surveyalign recipes metrics tests benchmarks

# Mutation check of one module (issue 27): killed / survived / score and the survivors, in a staging copy under
# .cache/mutation. TESTS defaults to the module's covering tests in benchmarks/mutation.py; MIN_SCORE fails below it.
MODULE ?= surveyalign/data/split.py
TESTS ?=
MIN_SCORE ?= 0
mutation: $(STAMP)
	$(BIN)/python benchmarks/mutation.py --module $(MODULE) --min-score $(MIN_SCORE) $(if $(TESTS),--tests $(TESTS))

# Every benchmark prints its figures (medians, with the load average and the ceiling measured in the same run);
# the last step prints one table of them all: figure, value, goal, met.
BENCH_LOGS ?= .cache/bench
bench: $(STAMP)
	@mkdir -p $(BENCH_LOGS); rm -f $(BENCH_LOGS)/*.log
	@for f in benchmarks/bench_*.py benchmarks/openai_backend_throughput.py; do \
		case $$f in */bench_table.py) continue;; esac; \
		echo "== $$f"; $(BIN)/python $$f 2>&1 | tee $(BENCH_LOGS)/$$(basename $$f .py).log; \
		test $${PIPESTATUS[0]} -eq 0 || exit 1; done
	@echo; echo "== summary"; $(BIN)/python benchmarks/bench_table.py $(BENCH_LOGS)/*.log

clean:
	rm -rf $(VENV) runs .cache build *.egg-info
