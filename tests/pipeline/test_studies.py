"""The committed studies' archives: every raw file a manifest lists is tracked and intact, and
the confirmatory study rebuilds its tables from its archive alone, as a user does (`make
study-confirm`: no model, equal to the committed tables to the last digit). Every other
archive's rebuild is timed and compared by benchmarks/bench_study_rebuild.py
(studies/rebuilds.csv, which studies/README.md quotes and which must say equal)."""

import csv
import shutil
import subprocess
from pathlib import Path

import pytest

from ips.formats.archive import MANIFEST, manifest, verify

ROOT = Path(__file__).resolve().parents[2]
STUDIES = sorted(p.parent.parent.name for p in ROOT.glob("studies/*/archive/" + MANIFEST))


def test_the_confirmatory_run_has_an_archive():
    assert "confirm" in STUDIES


@pytest.mark.parametrize("study", STUDIES)
def test_every_archived_file_is_in_git(study):
    """A clone holds what the manifest lists (an ignore pattern once kept the files out)."""
    archive = ROOT / "studies" / study / "archive"
    tracked = subprocess.run(["git", "ls-files", str(archive)], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    listed = {f"studies/{study}/archive/results/{path}.xz" for path in manifest(archive)}
    assert listed <= set(tracked), sorted(listed - set(tracked))[:5]


@pytest.mark.parametrize("study", STUDIES)
def test_every_archive_is_intact_and_its_rebuild_recorded(study):
    archive = ROOT / "studies" / study / "archive"
    assert len(verify(archive)) > 1
    with open(ROOT / "studies/rebuilds.csv", newline="", encoding="utf-8") as f:
        rows = {r["study"]: r for r in csv.DictReader(f)}
    assert rows[study]["tables_equal"] == "True"
    assert int(rows[study]["raw_files"]) == len(manifest(archive))


@pytest.mark.parametrize("study", ["confirm"])
def test_a_study_rebuilds_from_its_archive_alone(study):
    out = ROOT / f"results-study-{study}"
    shutil.rmtree(out, ignore_errors=True)  # a rebuild from nothing
    r = subprocess.run(["make", "-s", f"study-{study}"], cwd=ROOT, capture_output=True,
                       text=True, timeout=1800)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert f"tables of studies/{study} equal (tolerance 0)" in r.stdout
    assert not (out / "resources").exists()  # no model prepared
    assert not any((out / "results").glob("**/score*")), "a scoring rule ran"
