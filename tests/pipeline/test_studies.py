"""Every committed study with an archive rebuilds its tables from it, as a user does (`make
study-NAME`: no model, equal to the committed tables to the last digit), and every study
without one says so (studies/README.md)."""

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
def test_a_study_rebuilds_from_its_archive_alone(study):
    archive = ROOT / "studies" / study / "archive"
    assert len(verify(archive)) > 1
    out = ROOT / f"results-study-{study}"
    shutil.rmtree(out, ignore_errors=True)  # a rebuild from nothing
    r = subprocess.run(["make", "-s", f"study-{study}"], cwd=ROOT, capture_output=True,
                       text=True, timeout=1800)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert f"tables of studies/{study} equal (tolerance 0)" in r.stdout
    assert not (out / "resources").exists()  # no model prepared
    assert not any((out / "results").glob("**/score*")), "a scoring rule ran"
