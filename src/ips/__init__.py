"""ips: interaction-based prompt sensitivity (IPS) of large language models.

Decomposes an LLM's output score on masked prompts into sparse AND-OR interactions
(`ips.interactions`) and measures how they change between prompt templates
(`ips.analysis.metrics`). `python -m ips --help` lists the command-line tools.

The names below are what a user calls, one per step of the workflow (docs/api.md):

    config = ips.load_config("config.yaml")
    samples = ips.prepare_samples(ips.dataset_settings(config, "arc-easy"))
    model = ips.load_model(ips.ModelSpec.from_config(name, config["models"][name]))
    values = ips.score_shard(model, samples, "v.h5", shard=0, shard_size=2)
    fit = ips.and_or(v)                                # Eq. 12
    result = ips.ips(ips.normalize(fit.and_, fit.or_), tau=0.1)

Each is imported on first use, so `import ips` stays light (no torch until a model is
loaded).
"""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ips")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.1.0+unknown"

# name -> the module that defines it
_EXPORTS = {
    "load_config": "ips.config",
    "dataset_settings": "ips.config",
    "prepare_samples": "ips.prompts.samples",
    "load_samples": "ips.prompts.samples",
    "ModelSpec": "ips.models.entries",
    "load_model": "ips.models.loading",
    "score_shard": "ips.scoring.shard",
    "harsanyi": "ips.interactions",
    "and_or": "ips.interactions",
    "fit_values": "ips.fit",
    "normalize": "ips.analysis.metrics",
    "salient": "ips.analysis.metrics",
    "ips": "ips.analysis.metrics",
    "interaction_types": "ips.analysis.interaction_types",
    "summarize": "ips.analysis.summary",
    "read_metrics": "ips.formats.metrics",
    "compare": "ips.comparisons.compare",
    "read_factors": "ips.formats.factors",
    "make_figures": "ips.figures.draw",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ips' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
