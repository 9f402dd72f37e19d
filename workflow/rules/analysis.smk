# Tables per (model, dataset), comparisons across models, and the figures.
# `snakemake --report report.html` collects every figure and table of results/figures with
# its caption (workflow/report/).


report: "../report/workflow.rst"


# The nulls' perturbed games fitted once per tree of games (ips.analysis.null_fits): none
# of it reads τ, so another τ, τ sweep or figure τ scores these fits again and refits nothing.
for tree in TREES:

    rule:
        name:
            f"null_fits{tree.suffix}"
        input:
            values=shard_files(tree.path("values/{model}/{dataset}/{shard}.h5"), tree.first),
            interactions=shard_files(tree.path("interactions/{model}/{dataset}/{shard}.h5"),
                                     tree.first),
        output:
            tree.path("null_fits/{model}/{dataset}.h5"),
        params:
            seed=config["seed"],
            null_levels=" ".join(map(str, config["nulls"]["noise"]["levels"])),
            null_draws=config["nulls"]["noise"]["draws"],
            matched_null="" if config["nulls"]["noise"]["matched"] else "--no-matched-null",
        log:
            tree.log("null_fits/{model}/{dataset}.log"),
        benchmark:
            tree.path("benchmarks/null_fits/{model}/{dataset}.tsv")
        resources:
            mem_mb=2000,
            runtime=240,
        conda:
            "../../envs/ips.yaml"
        shell:
            "python -m ips null-fits --values {input.values} --interactions {input.interactions} "
            "--seed {params.seed} --null-levels {params.null_levels} "
            "--null-draws {params.null_draws} {params.matched_null} --out {output} 2> {log}"


# Each tree (`Tree`: each baseline's, each other τ's) gets its metrics, factors and figures;
# the variants are read beside the main games only.
for tree in ANALYSES:

    rule:
        name:
            f"metrics{tree.suffix}"
        input:
            values=shard_files(tree.game("values/{model}/{dataset}/{shard}.h5"), tree.first),
            interactions=shard_files(tree.game("interactions/{model}/{dataset}/{shard}.h5"),
                                     tree.first),
            null_fits=tree.game("null_fits/{model}/{dataset}.h5"),
            # each variant's runs (ips.nulls.variants): precision_values, … mask_interactions
            **{f"{null.kind}_{kind}": variant_files(null, kind) for null in variants()
               for kind in ("values", "interactions") if tree.main_games},
        output:
            tree.path("metrics/{model}/{dataset}.nc"),
        params:
            tau=(lambda wildcards: wildcards.tau) if tree is TAU_TREE else config["tau"],
            tau_sweep=" ".join(map(str, config["tau_sweep"])),
            seed=config["seed"],
            resamples=config["bootstrap"]["resamples"],
            level=config["bootstrap"]["level"],
            permutations=config["permutation"]["draws"],
            variants=variant_metrics_flags if tree.main_games else "",
            normalisation=config["normalisation"],
        log:
            tree.log("metrics/{model}/{dataset}.log"),
        benchmark:
            tree.path("benchmarks/metrics/{model}/{dataset}.tsv")
        conda:
            "../../envs/ips.yaml"
        shell:
            "python -m ips metrics --values {input.values} --interactions {input.interactions} "
            "--tau {params.tau} --tau-sweep {params.tau_sweep} --seed {params.seed} "
            "--resamples {params.resamples} --level {params.level} --permutations {params.permutations} "
            "--null-fits {input.null_fits} {params.variants} "
            "--normalisation {params.normalisation} --out {output} 2> {log}"

    rule:
        name:
            f"factors{tree.suffix}"
        input:
            run_files(tree.path("metrics/{model}/{dataset}.nc")),
        output:
            tree.path("factors/factors.nc"),
        params:
            seed=config["seed"],
            resamples=config["bootstrap"]["resamples"],
            level=config["bootstrap"]["level"],
            permutations=config["permutation"]["draws"],
        log:
            tree.log("factors.log"),
        conda:
            "../../envs/ips.yaml"
        shell:
            "python -m ips factors --metrics {input} --seed {params.seed} --resamples "
            "{params.resamples} --level {params.level} --permutations {params.permutations} "
            "--out {output} 2> {log}"


    # another baseline's or τ's figures and tables (its claims.csv among them)
    if tree is not MAIN:

        rule:
            name:
                f"figures{tree.suffix}"
            input:
                metrics=run_files(tree.path("metrics/{model}/{dataset}.nc")),
                factors=tree.path("factors/factors.nc"),
            output:
                directory(tree.path("figures")),
            params:
                plugins=CONTROL_PLUGINS,
                hypotheses=HYPOTHESES,
            log:
                tree.log("figures.log"),
            conda:
                "../../envs/ips.yaml"
            shell:
                "python -m ips {params.plugins}figures --metrics {input.metrics} "
                "--factors {input.factors} {params.hypotheses}--out {output} 2> {log}"


# The interactions and values of one model on one dataset as tidy tables of words (`ips
# export`), for a researcher's own pandas: `snakemake --cores all export` makes all of them.
rule export_run:
    input:
        values=shard_files(MAIN.game("values/{model}/{dataset}/{shard}.h5"), MAIN.first),
        interactions=shard_files(MAIN.game("interactions/{model}/{dataset}/{shard}.h5"),
                                 MAIN.first),
    output:
        directory("results/export/{model}/{dataset}"),
    params:
        tau=config["tau"],
        normalisation=config["normalisation"],
    log:
        "logs/export/{model}/{dataset}.log",
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips export --values {input.values} --interactions {input.interactions} "
        "--tau {params.tau} --normalisation {params.normalisation} --out {output} 2> {log}"


rule export:
    input:
        run_files("results/export/{model}/{dataset}"),


if BASELINES:

    # Which claims hold under every baseline, and how the baselines' games agree.
    rule baselines:
        input:
            figures=["results/figures", *expand(BASELINE_TREE.path("figures"),
                                                baseline=BASELINES)],
            values=lambda wildcards: sum(tree_files("values")(wildcards), []),
            interactions=lambda wildcards: sum(tree_files("interactions")(wildcards), []),
        output:
            directory(f"results/{BASELINE_FOLDER}/summary"),
        params:
            names=" ".join(["own", *config["baselines"]["others"]]),
            claims=lambda wildcards, input: " ".join(f"{d}/claims.csv" for d in input.figures),
            files=tree_flags,
            tau=config["tau"],
            seed=config["seed"],
            permutations=config["permutation"]["draws"],
        log:
            f"logs/{BASELINE_FOLDER}/summary.log",
        conda:
            "../../envs/ips.yaml"
        shell:
            "python -m ips baselines --names {params.names} --claims {params.claims} "
            "{params.files} --tau {params.tau} --seed {params.seed} "
            "--permutations {params.permutations} --out {output} 2> {log}"


rule figures:
    input:
        metrics=run_files("results/metrics/{model}/{dataset}.nc"),
        factors="results/factors/factors.nc",
        # the figure set of each other τ of `figure_taus` (Figs. 24–37), drawn in the same run
        tau_sets=expand(TAU_TREE.path("figures"), tau=TAU_SETS),
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
        plugins=CONTROL_PLUGINS,
        hypotheses=HYPOTHESES,
    log:
        "logs/figures.log",
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips {params.plugins}figures --metrics {input.metrics} "
        "--factors {input.factors} {params.hypotheses}--out {output} 2> {log}"
