# ips: interaction-based prompt sensitivity of LLMs.
#   samples -> score -> fit -> metrics -> factors -> figures
# Every rule calls an `ips` command; config values reach rules through `params:`, so editing
# one (e.g. tau) reruns only the jobs that depend on it.

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version

from ips.config import ConfigError, validate

min_version("9.0")


configfile: "config.yaml"


# the schema (workflow/schemas/config.schema.yaml) fills in defaults and names a bad field
try:
    validate(config, "config")
except ConfigError as e:
    raise WorkflowError(str(e)) from None


include: "workflow/rules/common.smk"
include: "workflow/rules/prepare.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/analysis.smk"


rule all:
    default_target: True
    input:
        "results/figures",


# Scores and interactions only, no metrics (`snakemake interactions`), e.g. to fit a long
# sparse run (workflow/configs/sparse.yaml) before looking at its numbers.
rule interactions:
    input:
        all_interactions,
