"""The model cache: models that `ips prepare-model` builds (a converted GGUF, a random-weight
model) each live in `<cache>/<name>/`, a transformers directory with a manifest
(`ips-model.json`) of the source it was built from.

A directory is built once, in a temporary sibling, and renamed into place when complete, so an
interrupted or concurrent build never leaves a partial directory; it is reused while its
manifest's source matches the entry, and rebuilt when the entry changed.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ips.errors import ModelError
from ips.outputs import check_output

log = logging.getLogger(__name__)

MANIFEST = "ips-model.json"


def built(final: Path, source: dict[str, Any]) -> bool:
    """Whether `final` holds a finished build of `source`."""
    try:
        return json.loads((final / MANIFEST).read_text())["source"] == source
    except (OSError, ValueError, KeyError, TypeError):
        return False


def build_once(name: str, cache_dir: Path, source: dict[str, Any],
               build: Callable[[Path, Path], dict[str, Any]]) -> Path:
    """`cache_dir/<name>/`, built by `build(out, work)` unless it already holds `source`.

    `build` writes the model into the new folder `out` (using `work` for scratch files) and
    returns what the manifest records beside the source and the time.
    """
    final = cache_dir / name
    if built(final, source):
        return final
    if final.exists() and not (final / MANIFEST).is_file():
        raise ModelError(
            f"model {name}: {final} exists but has no {MANIFEST}, so it was not written by "
            "ips; move it away or use another cache directory"
        )
    if final.exists():
        log.warning("%s: %s was built from another source; building again", name, final)
    check_output(final, directory=True, option="--cache-dir")  # before minutes of work
    cache_dir.mkdir(parents=True, exist_ok=True)
    work = cache_dir / f".{name}.{uuid.uuid4().hex}.tmp"
    work.mkdir()
    try:
        out = work / "model"
        extra = build(out, work)
        manifest = {"name": name, "source": source, **extra,
                    "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")}
        (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        for f in out.iterdir():
            if f.is_file():
                f.chmod(0o644)  # safetensors writes 0600; the cache may be shared between users
        _install(out, final, work, source)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def _install(out: Path, final: Path, work: Path, source: dict[str, Any]) -> None:
    """Move the finished build into place, unless a concurrent run got there first."""
    if built(final, source):
        return  # keep theirs: it may be in use already
    with contextlib.suppress(FileNotFoundError):
        os.replace(final, work / "stale")  # a stale build; deleted with `work`
    try:
        os.replace(out, final)
    except OSError:
        if not built(final, source):
            raise
