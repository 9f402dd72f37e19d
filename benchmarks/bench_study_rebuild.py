"""How long each study's tables take to rebuild from its archive (`make study-NAME`), from
nothing: the restore of its raw scores, every fit, null fit, metric, factor and figure.

Run:  .venv/bin/python benchmarks/bench_study_rebuild.py [NAME ...]   (default: every study
      with an archive)

Each study is rebuilt into results-study-NAME/ (removed first) on all cores, as a user's
`make study-NAME` does; one line per study: its wall time, the raw files and their size, and
whether the tables equal the committed ones. The same go to studies/rebuilds.csv (one row a
study, a rerun replaces its row), from which `make docs` renders studies/README.md; with the
machine's cores and its load average when the rebuild began (other work's share of them;
each rebuild first waits up to 3 min for the load of the one before to fade).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import shutil
import subprocess
import time
from pathlib import Path

from ips.formats.archive import MANIFEST, manifest, size

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "studies/rebuilds.csv"
COLUMNS = ("study", "seconds", "raw_files", "archive_bytes", "tables_equal", "cores",
           "load_at_start", "date", "commit")


def record(row: dict) -> None:
    """Replace the study's row of TABLE (kept sorted by study)."""
    rows = {}
    if TABLE.exists():
        with open(TABLE, newline="", encoding="utf-8") as f:
            rows = {r["study"]: r for r in csv.DictReader(f)}
    rows[row["study"]] = row
    with open(TABLE, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows[k] for k in sorted(rows))


def settle(quiet: float = 0.5, at_most: float = 180) -> None:
    """Wait (up to ``at_most`` s) for the 1-minute load average to fall below ``quiet``, so
    that one rebuild's load does not count as the next one's."""
    t0 = time.perf_counter()
    while os.getloadavg()[0] >= quiet and time.perf_counter() - t0 < at_most:
        time.sleep(5)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("studies", nargs="*",
                   default=sorted(m.parent.parent.name for m in ROOT.glob(f"studies/*/archive/{MANIFEST}")))
    args = p.parse_args()
    for study in args.studies:
        archive = ROOT / "studies" / study / "archive"
        shutil.rmtree(ROOT / f"results-study-{study}", ignore_errors=True)
        settle()
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        r = subprocess.run(["make", "-s", f"study-{study}"], cwd=ROOT, capture_output=True,
                           text=True)
        seconds = time.perf_counter() - t0
        verdict = (r.stdout.strip().splitlines() or ["(no output)"])[-1]
        print(f"{study}: {seconds:.0f} s ({seconds / 60:.1f} min), {len(manifest(archive))} raw "
              f"files, archive {size(archive) / 1e6:.1f} MB; {verdict}"
              + ("" if r.returncode == 0 else f"; FAILED: {r.stderr[-300:]}"))
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip()
        record({"study": study, "seconds": round(seconds), "raw_files": len(manifest(archive)),
                "archive_bytes": size(archive), "tables_equal": r.returncode == 0,
                "cores": os.cpu_count(), "load_at_start": round(load, 2),
                "date": datetime.date.today().isoformat(), "commit": commit})


if __name__ == "__main__":
    main()
