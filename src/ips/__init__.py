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

Modules:

* ``prompts``       step 1: datasets, items, variables, templates, the samples file
* ``models``        step 2: model entries, sources, the cache, loading
* ``scoring``       step 3: v(x_S) on every masked prompt, plain and trie scorers
* ``fitting``       step 4: AND-OR interactions of a whole values cube
* ``interactions``  the AND-OR decomposition of one game (Eq. 12) and its solvers
* ``analysis``      step 5: IPS, its bands, nulls and intervals of one (model, dataset)
* ``comparisons``   step 6: factors, τ robustness, baselines and claims across models
* ``figures``       step 7: figures, tables and the README of the results
* ``explain``       `ips explain`: the pipeline end to end for one item
* ``formats``       the files between the steps
* ``cli``           the `ips` command line, one module per command
* ``config``        the configuration, validated against its schema
* ``baselines``     what an absent word becomes: one module per kind, plug-ins too
* ``nulls``         the nulls' settings: one module per kind, the variants (scored again) among them
* ``controls``      controls scored beside the models: untrained twins, plug-ins too
* ``plugins``       a user's own baselines and controls, from a module or a file
* ``cluster``       whether every Slurm job fits a node, before submitting
* ``outputs``       atomic writes and safe reads of the package's files
* ``errors``        the one-line errors of the command line
* ``yaml_text``     YAML text read into plain data (libyaml where PyYAML has it)
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
    "fit_values": "ips.fitting.cube",
    "normalize": "ips.analysis.metrics",
    "salient": "ips.analysis.metrics",
    "ips": "ips.analysis.metrics",
    "interaction_types": "ips.analysis.interaction_types",
    "summarize": "ips.analysis.summary",
    "read_metrics": "ips.formats.metrics",
    "compare": "ips.comparisons.compare",
    "read_factors": "ips.formats.factors",
    "make_figures": "ips.figures.make",
    "LabelledInteractions": "ips.analysis.labelled",
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
