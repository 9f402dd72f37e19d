# ips: interaction-based prompt sensitivity of LLMs.
#   samples -> score -> fit -> metrics -> factors -> figures
# Every rule calls an `ips` command; config values reach rules through `params:`, so editing
# one (e.g. tau) reruns only the jobs that depend on it.

from snakemake.utils import min_version


min_version("9.0")

# The study is config.yaml, or the config files the command line names instead
# (`--configfile X [Y ...]`, merged in order): never a merge of the two, so that X's models
# and datasets are the whole study. Snakemake hands every job the same --configfiles, so the
# jobs see the DAG this process sees (docs/workflow.md#running-it).
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"


# the config validated (workflow/schemas/config.schema.yaml fills in its defaults) and the
# helpers of every rule
include: "workflow/rules/common.smk"
if ARCHIVE:

    include: "workflow/rules/archive.smk"

else:

    include: "workflow/rules/prepare.smk"


include: "workflow/rules/score.smk"
include: "workflow/rules/analysis.smk"


rule all:
    default_target: True
    input:
        "results/figures",
        # each other baseline's (`baselines.others`), and what holds under all of them
        expand(BASELINE_TREE.path("figures"), baseline=BASELINES),
        f"results/{BASELINE_FOLDER}/summary" if BASELINES else [],


# The samples of every dataset (`snakemake samples`): drawn before a run that groups jobs.
rule samples:
    input:
        expand("results/samples/{dataset}.json", dataset=DATASETS),


# Scores and interactions only, no metrics (`snakemake interactions`), e.g. to fit a long
# sparse run (workflow/configs/sparse.yaml) before looking at its numbers.
rule interactions:
    input:
        all_interactions,


# Before the first job: a run that would stop half-way, or (on Slurm) a job that no node can
# take, stops the run in one line naming what to do, instead of failing after hours or
# waiting in the queue for ever.
onstart:
    why = grouped_before_samples() or (workflow.executor_plugin.name == "slurm"
                                       and slurm_misfit())
    if why:
        print(f"ips: {why}", file=sys.stderr)
        sys.exit(1)


onerror:
    print("ips: jobs failed (see above); run the same command again: finished outputs are kept "
          "and a score job resumes from its last finished sample "
          "(docs/workflow.md#when-something-goes-wrong)", file=sys.stderr)
