# ips: interaction-based prompt sensitivity of LLMs.
#   samples -> score -> fit -> metrics -> factors -> figures
# Every rule calls an `ips` command; config values reach rules through `params:`, so editing
# one (e.g. tau) reruns only the jobs that depend on it.

from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/prepare.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/analysis.smk"


rule all:
    default_target: True
    input:
        "results/figures",
