"""A study's archive: the raw scores its tables were computed from, so that the tables can be
rebuilt without a model (docs/workflow.md#rebuilding-a-study).

Layout of an archive folder (``studies/<name>/archive``)::

    config.yaml            the config the study ran with, as it ran
    MANIFEST.tsv           path, sha256 and size of every raw file, one line each
    results/<path>.xz      each raw file of the run's results/, xz-compressed

The raw files are the samples files (``samples/<dataset>.json``) and every values file of
`ips score` (``values/…/*.h5`` of the main run, of other baselines and of the re-scored
nulls): everything the fits, metrics, factors and figures read that a model made. Each is
kept byte for byte (xz is lossless, the manifest's sha256 checks it on the way out), so that
a rebuild reads exactly the files the study read.
"""

from __future__ import annotations

import hashlib
import lzma
from dataclasses import dataclass
from pathlib import Path

from ips.errors import InputError
from ips.outputs import atomic_dir, write_bytes

MANIFEST = "MANIFEST.tsv"
CONFIG = "config.yaml"
_HEADER = "path\tsha256\tbytes"


@dataclass(frozen=True)
class Entry:
    """One raw file: its path relative to results/, the sha256 and size of its bytes."""

    path: str
    sha256: str
    size: int


def raw_files(results: Path) -> list[Path]:
    """The raw files of a run's results/ folder (sorted): its samples and values files."""
    results = Path(results)
    found = [*results.glob("samples/*.json"),
             *(p for p in results.rglob("*.h5") if "values" in p.relative_to(results).parts)]
    return sorted(found)


def pack(results: Path, config: Path, archive: Path) -> list[Entry]:
    """Archive the raw files of ``results`` and the ``config`` they ran with as ``archive``
    (a folder, replaced as a whole); the entries written."""
    results = Path(results)
    files = raw_files(results)
    if not any(f.parent.name == "samples" for f in files):
        raise InputError(f"{results}: no samples/*.json; point --results at a run's results/ "
                         "folder")
    entries = []
    with atomic_dir(archive) as tmp:
        for f in files:
            data = f.read_bytes()
            rel = f.relative_to(results).as_posix()
            packed = tmp / "results" / f"{rel}.xz"
            packed.parent.mkdir(parents=True, exist_ok=True)
            packed.write_bytes(lzma.compress(data))
            entries.append(Entry(rel, hashlib.sha256(data).hexdigest(), len(data)))
        (tmp / CONFIG).write_bytes(Path(config).read_bytes())
        lines = [_HEADER, *(f"{e.path}\t{e.sha256}\t{e.size}" for e in entries)]
        (tmp / MANIFEST).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return entries


def manifest(archive: Path) -> dict[str, Entry]:
    """The entries of an archive by path; `InputError` if it has no readable manifest."""
    where = Path(archive) / MANIFEST
    try:
        lines = where.read_text(encoding="utf-8").splitlines()
    except OSError:
        raise InputError(f"{where}: missing; an archive is made by `ips archive pack`") from None
    if not lines or lines[0] != _HEADER:
        raise InputError(f"{where}: not an archive manifest (first line {_HEADER!r} expected)")
    out = {}
    for k, line in enumerate(lines[1:], start=2):
        parts = line.split("\t")
        if len(parts) != 3 or not parts[2].isdigit():
            raise InputError(f"{where}: line {k} is not 'path<TAB>sha256<TAB>bytes'")
        out[parts[0]] = Entry(parts[0], parts[1], int(parts[2]))
    return out


def read(archive: Path, path: str, entries: dict[str, Entry] | None = None) -> bytes:
    """The bytes of the raw file ``path`` (relative to results/), checked against the
    manifest; `InputError` naming the file when it is not listed, missing or changed."""
    archive = Path(archive)
    entries = manifest(archive) if entries is None else entries
    entry = entries.get(path)
    if entry is None:
        raise InputError(f"{archive}: {path} is not in its {MANIFEST}; the study's archive "
                         "holds no such file (was it packed from this config's run?)")
    packed = archive / "results" / f"{path}.xz"
    try:
        data = lzma.decompress(packed.read_bytes())
    except (OSError, lzma.LZMAError) as e:
        raise InputError(f"{packed}: cannot be read ({e}); restore it from git") from None
    if len(data) != entry.size or hashlib.sha256(data).hexdigest() != entry.sha256:
        raise InputError(f"{packed}: its content differs from {MANIFEST}'s sha256; restore "
                         "it from git")
    return data


def restore(archive: Path, path: str, out: Path) -> None:
    """Write the raw file ``path`` of ``archive`` to ``out`` (atomically), checked."""
    write_bytes(out, read(archive, path))


def verify(archive: Path) -> list[Entry]:
    """Check every file of the manifest (`InputError` at the first bad one); the entries."""
    entries = manifest(archive)
    for path in entries:
        read(archive, path, entries)
    return list(entries.values())


def size(archive: Path) -> int:
    """Bytes the archive takes on disk (its files, compressed)."""
    return sum(f.stat().st_size for f in Path(archive).rglob("*") if f.is_file())
