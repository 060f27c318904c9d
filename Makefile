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

.PHONY: install demo test test-all lint bench clean

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
	@$(BIN)/python -c "import torch; print('torch==' + torch.__version__.split('+')[0])" > $(VENV)/torch-constraint.txt
	$(BIN)/pip install -q -c $(VENV)/torch-constraint.txt -e '.[train,dev]'
	@touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/surveyalign demo $(DEMO_ARGS)

test: $(STAMP)
	$(BIN)/python -m pytest -m "$(MARKERS)" $(PYTEST_ARGS)

test-all: $(STAMP)
	$(BIN)/python -m pytest -m "not gpu" $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check surveyalign recipes metrics tests benchmarks

bench: $(STAMP)
	@for f in benchmarks/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) runs .cache build *.egg-info
