# ips: interaction-based prompt sensitivity of LLMs.
# The workflow issue adds the DAG (score -> fit -> metrics -> factors -> figures)
# as workflow/rules/*.smk, included here.

from snakemake.utils import min_version, validate

min_version("9.0")


configfile: "config.yaml"


validate(config, "workflow/schemas/config.schema.yaml")


rule all:
    default_target: True
