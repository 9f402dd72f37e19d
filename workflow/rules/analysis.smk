# Tables per (model, dataset), comparisons across models, and the figures.
# `snakemake --report report.html` collects every figure and table of results/figures with
# its caption (workflow/report/).


report: "../report/workflow.rst"


rule metrics:
    input:
        values=shard_files("results/values/{model}/{dataset}/{shard}.h5"),
        fits=shard_files("results/interactions/{model}/{dataset}/{shard}.h5"),
    output:
        "results/metrics/{model}/{dataset}.nc",
    params:
        tau=config["tau"],
        tau_sweep=" ".join(map(str, config["tau_sweep"])),
        seed=config["seed"],
    log:
        "logs/metrics/{model}/{dataset}.log",
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips metrics --values {input.values} --fits {input.fits} --tau {params.tau} "
        "--tau-sweep {params.tau_sweep} --seed {params.seed} --out {output} 2> {log}"


rule factors:
    input:
        expand("results/metrics/{model}/{dataset}.nc", model=MODELS, dataset=DATASETS),
    output:
        "results/factors/factors.nc",
    params:
        seed=config["seed"],
    log:
        "logs/factors.log",
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips factors --metrics {input} --seed {params.seed} --out {output} 2> {log}"


# the report's sections: a file of results/figures named <key> or <key>_... goes to the
# category of key; tables (.csv) go to the last category
REPORT_CATEGORIES = {
    "sparsity": "1 Interactions",
    "universal_matching": "1 Interactions",
    "case_study": "1 Interactions",
    "interaction_types": "1 Interactions",
    "ips_ranking": "2 IPS of the models",
    "ips_vs_consistency": "2 IPS of the models",
    "ips_by_order": "2 IPS of the models",
    "factor": "3 Factors",
    "factors": "3 Factors",
    "tau_robustness": "4 Robustness and baselines",
    "perturbation_types": "4 Robustness and baselines",
    "representation_baseline": "4 Robustness and baselines",
}
TABLES_CATEGORY = "5 Tables"


def report_category(wildcards):
    if wildcards.ext != "csv":
        for key, category in REPORT_CATEGORIES.items():
            if wildcards.name == key or wildcards.name.startswith(f"{key}_"):
                return category
    return TABLES_CATEGORY


rule figures:
    input:
        metrics=expand("results/metrics/{model}/{dataset}.nc", model=MODELS, dataset=DATASETS),
        factors="results/factors/factors.nc",
    output:
        report(
            directory("results/figures"),
            patterns=["{name}.{ext,png|csv}"],
            caption="../report/figures.rst",
            category=report_category,
            labels={"file": "{name}.{ext}"},
        ),
    params:
        seed=config["seed"],
    log:
        "logs/figures.log",
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips figures --metrics {input.metrics} --factors {input.factors} "
        "--seed {params.seed} --out {output} 2> {log}"
