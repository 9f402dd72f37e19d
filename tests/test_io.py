"""ips.io: the atomic-write helper."""

import pytest

from ips.io import atomic_path


def test_atomic_path_replaces_on_success(tmp_path):
    target = tmp_path / "deep" / "out.txt"
    with atomic_path(target) as tmp:
        assert tmp.parent == target.parent and tmp != target
        tmp.write_text("new")
        assert not target.exists()  # nothing visible before the block ends
    assert target.read_text() == "new"
    assert [p.name for p in target.parent.iterdir()] == ["out.txt"]


def test_atomic_path_keeps_old_file_on_failure(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("writer failed")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
