#!/usr/bin/env bash
# The normalisation study's table from a rebuilt default run (`make study-normalisation`):
# RESULTS is its results/ folder; default_run.csv goes beside the workflow's tables.
set -euo pipefail
results=$1
python "$(dirname "$0")/compare.py" "$results" > "$results/figures/default_run.csv"
