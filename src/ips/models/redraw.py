"""Re-drawn weights (`source: {redraw: M, seed: s}`): a configured model M with the weights
its class's initialiser draws.

The entry is M's architecture class with M's config, tokenizer and mask token, scored on M's
prompts (the same samples and conditions), with the weights its class's own initialiser draws
(`AutoModelForCausalLM.from_config` after `torch.manual_seed(s)`). It is not trained at all,
nor M with noise added, nor a smaller model: its numbers measure what the metric and the
templates give without training. A control adds such entries (`ips.controls`), as may a
user's model entry.

It is built from M's prepared directory (`ips.models.loading.prepare_model`), never
downloaded, by `ips prepare-model` given M's entry too, once into the model cache
(`ips.models.cache`); loading it afterwards needs only its own entry. The same seed and
versions of torch and transformers give the same weights, bit for bit.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from importlib.metadata import version
from pathlib import Path
from typing import Any

from ips.errors import ModelError
from ips.models.cache import MANIFEST, build_once
from ips.models.entries import ModelSpec

#: files of a prepared directory that hold weights (or, for the manifest, another build's
#: record): everything else (config, tokenizer, generation config, remote code) is copied
_WEIGHTS = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".ckpt", ".h5", ".msgpack")


def copied_files(original_dir: Path) -> list[Path]:
    """The files of `original_dir` a re-drawn model takes as they are: all but weights (and their
    index files) and the cache's manifest, in name order."""
    return sorted(f for f in Path(original_dir).iterdir()
                  if f.is_file() and f.name != MANIFEST
                  and not f.name.removesuffix(".index.json").endswith(_WEIGHTS))


def build_redrawn(original_dir: str | Path, seed: int, out: str | Path, *,
               trust_remote_code: bool = False) -> Path:
    """Save in the new folder `out` the model of `original_dir`'s config with the weights
    its class's initialiser draws after `torch.manual_seed(seed)` (float32 safetensors),
    beside the original's config, tokenizer and other non-weight files, copied byte for
    byte; return `out`."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    original_dir, out = Path(original_dir), Path(out)
    remote = {"trust_remote_code": True} if trust_remote_code else {}
    config = AutoConfig.from_pretrained(original_dir, local_files_only=True, **remote)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32, **remote)
    model.save_pretrained(out)
    del model  # the weights' memory, before the copies
    for f in copied_files(original_dir):  # after saving, which writes a config of its own
        shutil.copyfile(f, out / f.name)
    return out


def _identity(original_dir: Path) -> dict[str, str]:
    """SHA-256 of each file the build copies (the original's config and tokenizer): it is
    built again when they change."""
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest()
            for f in copied_files(original_dir)}


def _key(spec: ModelSpec) -> dict[str, Any]:
    """What a re-drawn model's build depends on besides its original's files: its source, and the
    versions of torch and transformers, whose initialisers draw the weights."""
    return {**spec.source.to_dict(),
            "versions": {p: version(p) for p in ("torch", "transformers")}}


def prepare_redrawn(spec: ModelSpec, original_dir: str | Path, cache_dir: str | Path) -> Path:
    """`cache_dir/<spec.name>/`: the re-drawn model `spec` of the model prepared in `original_dir`,
    built on the first call and returned at once afterwards; built again when the source,
    the original's config or tokenizer files, or the versions of torch and transformers
    change."""
    original_dir = Path(original_dir)

    def build(out: Path, work: Path) -> dict[str, Any]:
        build_redrawn(original_dir, spec.source.seed, out, trust_remote_code=spec.trust_remote_code)
        return {"original_dir": str(original_dir)}

    key = {**_key(spec), "original": _identity(original_dir)}
    return build_once(spec.name, Path(cache_dir), key, build)


def built_redrawn(spec: ModelSpec, cache_dir: str | Path) -> Path:
    """The re-drawn model's directory in `cache_dir` as `prepare_redrawn` built it for this source and
    these versions of torch and transformers; a `ModelError` saying how to build it when
    there is none (building needs the original's entry, which its own does not hold)."""
    final = Path(cache_dir) / spec.name
    try:
        recorded = json.loads((final / MANIFEST).read_text())["source"]
        ready = {k: v for k, v in recorded.items() if k != "original"} == _key(spec)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        ready = False
    if not ready:
        raise ModelError(
            f"model {spec.name}: {spec.source.redraw!r} re-drawn (seed {spec.source.seed}) is "
            f"not built in {Path(cache_dir)}; run `ips prepare-model --model {spec.name}` "
            f"with --config (or --entry and --original-entry) first")
    return final
