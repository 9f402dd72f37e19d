"""How long each study's tables take to rebuild from its archive (`make study-NAME`), from
nothing: the restore of its raw scores, every fit, null fit, metric, factor and figure.

Run:  .venv/bin/python benchmarks/bench_study_rebuild.py [NAME ...]   (default: every study
      with an archive)

Each study is rebuilt into results-study-NAME/ (removed first) on all cores, as a user's
`make study-NAME` does; one line per study: its wall time, the raw files and their size, and
whether the tables equal the committed ones.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import time
from pathlib import Path

from ips.formats.archive import MANIFEST, manifest, size

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("studies", nargs="*",
                   default=sorted(m.parent.parent.name for m in ROOT.glob(f"studies/*/archive/{MANIFEST}")))
    args = p.parse_args()
    for study in args.studies:
        archive = ROOT / "studies" / study / "archive"
        shutil.rmtree(ROOT / f"results-study-{study}", ignore_errors=True)
        t0 = time.perf_counter()
        r = subprocess.run(["make", "-s", f"study-{study}"], cwd=ROOT, capture_output=True,
                           text=True)
        seconds = time.perf_counter() - t0
        verdict = (r.stdout.strip().splitlines() or ["(no output)"])[-1]
        print(f"{study}: {seconds:.0f} s ({seconds / 60:.1f} min), {len(manifest(archive))} raw "
              f"files, archive {size(archive) / 1e6:.1f} MB; {verdict}"
              + ("" if r.returncode == 0 else f"; FAILED: {r.stderr[-300:]}"))


if __name__ == "__main__":
    main()
