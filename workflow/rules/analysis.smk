# Tables per (model, dataset), comparisons across models, and the figures.
# `snakemake --report report.html` collects every figure and table of results/figures with
# its caption (workflow/report/).


report: "../report/workflow.rst"


rule metrics:
    input:
        values=shard_files("results/values/{model}/{dataset}/{shard}.h5"),
        interactions=shard_files("results/interactions/{model}/{dataset}/{shard}.h5"),
        # each re-scored null's runs (ips.variants.NULLS): precision_values, … mask_interactions
        **{f"{null.kind}_{kind}": rescored_files(null, kind) for null in NULLS
           for kind in ("values", "interactions")},
    output:
        "results/metrics/{model}/{dataset}.nc",
    params:
        tau=config["tau"],
        tau_sweep=" ".join(map(str, config["tau_sweep"])),
        seed=config["seed"],
        resamples=config["bootstrap"]["resamples"],
        level=config["bootstrap"]["level"],
        permutations=config["permutation"]["draws"],
        null_levels=" ".join(map(str, config["nulls"]["levels"])),
        null_draws=config["nulls"]["draws"],
        matched_null="" if config["nulls"]["matched"] else "--no-matched-null",
        rescored=rescored_metrics_flags,
    log:
        "logs/metrics/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/metrics/{model}/{dataset}.tsv"
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips metrics --values {input.values} --interactions {input.interactions} "
        "--tau {params.tau} --tau-sweep {params.tau_sweep} --seed {params.seed} "
        "--resamples {params.resamples} --level {params.level} --permutations {params.permutations} "
        "--null-levels {params.null_levels} --null-draws {params.null_draws} "
        "{params.matched_null} {params.rescored} --out {output} 2> {log}"


rule factors:
    input:
        expand("results/metrics/{model}/{dataset}.nc", model=MODELS, dataset=DATASETS),
    output:
        "results/factors/factors.nc",
    params:
        seed=config["seed"],
        resamples=config["bootstrap"]["resamples"],
        level=config["bootstrap"]["level"],
        permutations=config["permutation"]["draws"],
    log:
        "logs/factors.log",
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips factors --metrics {input} --seed {params.seed} --resamples "
        "{params.resamples} --level {params.level} --permutations {params.permutations} "
        "--out {output} 2> {log}"


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
            subcategory=report_subcategory,
            labels={"file": "{name}.{ext}"},
        ),
    params:
        # the report's caption of every file (workflow/report/figures.rst)
        captions=report_captions(MODELS, DATASETS),
    log:
        "logs/figures.log",
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips figures --metrics {input.metrics} --factors {input.factors} "
        "--out {output} 2> {log}"
