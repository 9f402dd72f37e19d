"""A study's archive (ips.formats.archive) and the comparison of its tables
(ips.formats.tables): byte-exact round trips, one-line errors for a damaged archive, cells
compared as numbers and as text."""

import lzma
import subprocess
import sys

import pytest

from ips.errors import InputError
from ips.formats.archive import MANIFEST, manifest, pack, raw_files, read, restore, verify
from ips.formats.tables import compare_table, compare_tables


@pytest.fixture
def results(tmp_path):
    """A run's results/ folder: samples, values of two trees and a variant, and files that
    are not raw scores (interactions, metrics, figures)."""
    root = tmp_path / "results"
    files = {
        "samples/arc.json": b'{"samples": []}',
        "values/m/arc/0.h5": bytes(range(256)) * 40,
        "values/m/arc/1.h5": b"\x00" * 5000,
        "baselines/delete/values/m/arc/0.h5": b"another baseline",
        "nulls/precision/bfloat16/values/m/arc.h5": b"a variant",
        "interactions/m/arc/0.h5": b"fitted",
        "metrics/m/arc.nc": b"metrics",
        "figures/ips_table.csv": b"a,b\n1,2\n",
    }
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (tmp_path / "config.yaml").write_text("tau: 0.1\n")
    return root


def test_pack_keeps_the_raw_files_byte_for_byte(results, tmp_path):
    archive = tmp_path / "archive"
    entries = pack(results, tmp_path / "config.yaml", archive)
    assert [e.path for e in entries] == [
        "baselines/delete/values/m/arc/0.h5", "nulls/precision/bfloat16/values/m/arc.h5",
        "samples/arc.json", "values/m/arc/0.h5", "values/m/arc/1.h5"]
    assert [p.relative_to(results).as_posix() for p in raw_files(results)] == \
        sorted(e.path for e in entries)
    assert (archive / "config.yaml").read_text() == "tau: 0.1\n"
    for e in verify(archive):
        assert read(archive, e.path) == (results / e.path).read_bytes()
    # compressed: 5000 zero bytes take far less
    assert (archive / "results/values/m/arc/1.h5.xz").stat().st_size < 200
    out = tmp_path / "restored.h5"
    restore(archive, "values/m/arc/0.h5", out)
    assert out.read_bytes() == (results / "values/m/arc/0.h5").read_bytes()


def test_a_second_pack_replaces_the_archive_whole(results, tmp_path):
    archive = tmp_path / "archive"
    pack(results, tmp_path / "config.yaml", archive)
    (results / "values/m/arc/1.h5").unlink()
    pack(results, tmp_path / "config.yaml", archive)
    assert "values/m/arc/1.h5" not in manifest(archive)
    assert not (archive / "results/values/m/arc/1.h5.xz").exists()


def test_a_damaged_archive_is_named_in_one_line(results, tmp_path):
    archive = tmp_path / "archive"
    pack(results, tmp_path / "config.yaml", archive)
    packed = archive / "results/values/m/arc/0.h5.xz"
    packed.write_bytes(lzma.compress(b"other numbers"))
    with pytest.raises(InputError, match=r"0\.h5\.xz: its content differs from MANIFEST"):
        verify(archive)
    packed.write_bytes(b"not xz")
    with pytest.raises(InputError, match=r"0\.h5\.xz: cannot be read"):
        read(archive, "values/m/arc/0.h5")
    with pytest.raises(InputError, match="values/m/dolly/0.h5 is not in its MANIFEST"):
        read(archive, "values/m/dolly/0.h5")
    (archive / MANIFEST).write_text("something else\n")
    with pytest.raises(InputError, match="not an archive manifest"):
        manifest(archive)
    with pytest.raises(InputError, match="no samples"):
        pack(results / "values", tmp_path / "config.yaml", tmp_path / "other")


def test_the_command_restores_and_refuses_in_one_line(results, tmp_path):
    archive = tmp_path / "archive"
    pack(results, tmp_path / "config.yaml", archive)
    run = [sys.executable, "-m", "ips", "archive"]
    r = subprocess.run([*run, "restore", "--archive", archive, "samples/arc.json", "--out",
                        tmp_path / "s.json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "s.json").read_bytes() == b'{"samples": []}'
    r = subprocess.run([*run, "restore", "--archive", archive, "samples/mmlu.json", "--out",
                        tmp_path / "m.json"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "samples/mmlu.json is not in its MANIFEST.tsv" in r.stderr


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_tables_are_compared_cell_by_cell(tmp_path):
    a = write(tmp_path / "a/t.csv", "model,ips,note\nx,0.5,nan\ny,0.25,ok\n")
    assert compare_table(a, write(tmp_path / "b/t.csv", a.read_text())).equal
    b = write(tmp_path / "c/t.csv", "model,ips,note\nx,0.50001,nan\ny,0.25,no\n")
    d = compare_table(a, b)
    assert (d.cells, d.examples[0]) == (2, (1, "ips", "0.5", "0.50001"))
    assert d.max_abs == pytest.approx(1e-5)
    d = compare_table(a, b, tolerance=1e-4)  # the number within it; the text still differs
    assert (d.cells, d.examples) == (1, [(2, "note", "ok", "no")])
    assert "1 cells differ" in d.line() and "row 2, column note" in d.line()
    assert compare_table(a, write(tmp_path / "d/t.csv", "model,IPS,note\n")).problem == \
        "other columns"
    assert compare_table(a, write(tmp_path / "e/t.csv", "model,ips,note\nx,0.5,nan\n")
                         ).problem == "1 rows made again, 2 committed"
    missing = compare_tables(tmp_path / "a", tmp_path / "nowhere")
    assert [d.problem.split(" (")[0] for d in missing] == ["not made again"]
    with pytest.raises(InputError, match="no CSV tables"):
        compare_tables(tmp_path / "nowhere", tmp_path / "a")
