"""A model entry of the config: where its weights come from (`ModelSource`) and what it
is (`ModelSpec`); a job's memory (`job_mem_mb`). Loads no torch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

from ips.config import RANDOM_SOURCES, ConfigError, validate_model
from ips.errors import ModelError

SourceKind = Literal["hub", "path", "gguf_package", "parts", "random", "redraw"]


@dataclass(frozen=True)
class ModelSource:
    """Where a model's weights come from: `hub`, `path`, a GGUF file in pip packages
    (`gguf_package`, and/or `parts`; kind "parts" when `parts` alone is set), `random`
    weights of an architecture class drawn from `seed` (`ips.models.random_weights`), or the
    configured model that `redraw` names with its weights re-drawn from `seed`
    (`ips.models.redraw`; what the controls add, `ips.controls`)."""

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
    random: str | None = None
    redraw: str | None = None
    seed: int | None = None

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
    family: str = "unknown"
    series: str = "unknown"
    type: Literal["base", "instruct", "unknown"] = "unknown"
    # None: read from the checkpoint when it is scored (`ips.models.attributes`)
    architecture: Literal["dense", "moe"] | None = None
    params: int | None = None
    active_params: int | None = None
    dtype: Literal["float32", "float16", "bfloat16"] = "float32"
    # GPUs of the scoring job, and how accelerate spreads the model over them (None: whole)
    gpus: int = 1
    device_map: Literal["auto", "balanced", "balanced_low_0", "sequential"] | None = None
    mask_token: str | int | None = None
    # another baseline than the mask token (`ips.baselines`); None: the mask token
    baseline: str | None = None
    # run the model code a hub repository ships (InternLM2, LLaMA-MoE): only when asked for
    trust_remote_code: bool = False
    # the transformers class that runs it instead of that code (`ips.models.native`)
    native: Literal["llama", "mixtral"] | None = None
    # {kind, of}: the control kind that added the entry and the model it controls
    control: dict[str, str] | None = None
    # trained or random weights; None: by the source (`random_weights`)
    weights: Literal["trained", "random"] | None = None

    @property
    def random_weights(self) -> bool:
        """Whether the weights are untrained: declared `random`, or a `random`/`redraw`
        source."""
        return self.weights == "random" or self.source.kind in RANDOM_SOURCES

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
        if e.get("native") and kind not in ("hub", "path"):
            raise ModelError(f"model {name}: native: converts a transformers directory (a hub "
                             f"or path source), not a {kind} source; remove `native`")
        source = ModelSource(kind=kind, **{k: v for k, v in src.items() if k != "parts"},
                             parts=tuple(src.get("parts", ())))
        return cls(name=name, **{**e, "source": source})


#: the size a job's memory is asked for where the entry gives no `params` (counted only when
#: the model is scored): 1B parameters, 8 GB to score in float32; give params for a larger one
UNKNOWN_PARAMS = 10**9

#: bytes a parameter takes at each dtype
_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def job_mem_mb(spec: ModelSpec, job: Literal["prepare", "score"],
               original: ModelSpec | None = None) -> int:
    """Host memory (MB) a workflow job that holds the model asks for (its `mem_mb`): 2 GB
    plus the weights 1.5 times, at the entry's dtype to `score` (and for the samples of an
    occlusion reference), in float32 to `prepare` a GGUF (dequantised); preparing any other
    source only locates or downloads files, 2 GB. A model with a `device_map` has its layers
    loaded straight onto the GPUs, one checkpoint shard (up to ~10 GB) at a time, so it
    scores in at most 12 GB. A `random` model is tiny whatever its `params` say (they are its
    namesake's): 2 GB. A re-drawn model (`spec.source.redraw`) is sized by its `original`'s
    spec: it scores as the original does, and preparing it draws float32 weights, as much as
    converting a GGUF of that size asks for (2 GB for a random original, which is tiny). An
    entry without `params` (counted only when scored) is sized as `UNKNOWN_PARAMS`.
    Measured peaks: docs/workflow.md#memory."""
    if spec.source.kind == "redraw":
        if original is None or original.name != spec.source.redraw:
            raise ValueError(f"model {spec.name}: a re-drawn model's memory is its original's: "
                             f"pass the spec of {spec.source.redraw!r}")
        if job == "score" or original.source.kind == "random":
            return job_mem_mb(original, job)
        return 2000 + int(1.5 * 4 * (original.params or UNKNOWN_PARAMS) / 1e6)
    if spec.source.kind == "random" or (
            job == "prepare" and spec.source.kind not in ("gguf_package", "parts")):
        return 2000
    params = spec.params or UNKNOWN_PARAMS
    weights = (4 if job == "prepare" else _BYTES[spec.dtype]) * params / 1e6
    need = 2000 + int(1.5 * weights)
    return min(need, 12000) if job == "score" and spec.device_map else need
