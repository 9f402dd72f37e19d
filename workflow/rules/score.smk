# v(x_S) for every mask of every sample, per shard, and its AND-OR interactions. What a scoring
# and a fitting job run and ask for is written once (SCORE, FIT) for the main rules, the other
# baselines' and the variants' rules below.

SCORE = dict(
    params=dict(
        entry=model_entry,
        cache=lambda wildcards, input: Path(input.model).parent,
        batch_tokens=config["batch_tokens"],
        scorer=config["scorer"],
        masking=config["masking"],
        sampling=sampling_flags(config["sampling"]),
    ),
    resources=dict(mem_mb=score_mem_mb, runtime=240, gpu=model_gpus),
    shell=(
        "python -m ips score --model {wildcards.model} --entry {params.entry:q} --cache-dir {params.cache} "
        "--samples {input.samples} --shard {params.shard} {params.shard_size} "
        "{params.target} --batch-tokens {params.batch_tokens} --scorer {params.scorer} "
        "--masking {params.masking} "
        "--threads {threads} {params.sampling} {params.setting} "
        "--out {output} 2> {log}"
    ),
)

FIT = dict(
    params=dict(
        solver=config["solver"],
        noise=config["noise"],
        sgd_learning_rate=config["sgd"]["learning_rate"],
        sgd_steps=config["sgd"]["steps"],
        n_max=config["n_max"],
        seed=fit_seed_flag(config),
    ),
    resources=dict(mem_mb=2000, runtime=120),
    shell=(
        "python -m ips fit {input} --out {output} --solver {params.solver} --noise {params.noise} "
        "--sgd-learning-rate {params.sgd_learning_rate} --sgd-steps {params.sgd_steps} "
        "--n-max {params.n_max} {params.seed} 2> {log}"
    ),
)


# Each baseline's tree (`Tree`: results/ with each model's own baseline, and
# results/baselines/{baseline}/ for each other of `baselines.others`, scored with
# `--baseline`).
for tree in TREES:

    if not ARCHIVE:  # restored from the archive instead (archive.smk)

        rule:
            name:
                f"score{tree.suffix}"
            input:
                samples="results/samples/{dataset}.json",
                model=f"{MODEL_DIR}/{{model}}.path",
            output:
                tree.path("values/{model}/{dataset}/{shard}.h5"),
            params:
                **SCORE["params"],
                shard=lambda wildcards: wildcards.shard,
                shard_size=f"--shard-size {config['shard_size']}",
                target=target_flag,
                setting=baseline_flag if tree.suffix else entry_plugin_flag,
            log:
                tree.log("score/{model}/{dataset}/{shard}.log"),
            benchmark:
                tree.path("benchmarks/score/{model}/{dataset}/{shard}.tsv")
            threads: 1
            resources:
                **SCORE["resources"],
            priority: BASELINE_PRIORITY if tree.suffix else 0
            conda:
                "../../envs/ips.yaml"
            shell:
                SCORE["shell"]

    rule:
        name:
            f"fit{tree.suffix}"
        input:
            tree.path("values/{model}/{dataset}/{shard}.h5"),
        output:
            tree.path("interactions/{model}/{dataset}/{shard}.h5"),
        params:
            **FIT["params"],
        log:
            tree.log("fit/{model}/{dataset}/{shard}.log"),
        benchmark:
            tree.path("benchmarks/fit/{model}/{dataset}/{shard}.tsv")
        resources:
            **FIT["resources"],
        conda:
            "../../envs/ips.yaml"
        shell:
            FIT["shell"]


# The variants (ips.nulls.variants; docs/method.md#precision, #baseline-null): the chosen
# conditions of the first shards scored again with one setting changed (rules score_{kind}_null,
# fit_{kind}_null), one job per model and setting for all the datasets it runs (one model load;
# `ips score` with several samples files), each dataset's file fitted alike. Their first shards
# are scored as one shard 0 of shards·shard_size samples, the same samples as the main run's.
# Models that run different datasets (a dataset's `models`) get a scoring rule per set of
# datasets, `score_{kind}_null_2`, … after the first.

for null in variants():
    run_dir = f"{null.folder()}/{{{null.setting}}}"

    for group, (datasets, members) in enumerate(
            variant_groups(null).items() if not ARCHIVE else (), start=1):

        rule:
            name:
                f"score_{null.kind}_null" + (f"_{group}" if group > 1 else "")
            input:
                samples=expand("results/samples/{dataset}.json", dataset=datasets),
                model=f"{MODEL_DIR}/{{model}}.path",
            output:
                [variant_path(null, "values", d) for d in datasets],
            params:
                **SCORE["params"],
                shard=0,
                shard_size=variant_shard_size(null),
                target="",  # each samples file's own
                setting=variant_flags(null, datasets),
            log:
                f"logs/{run_dir}/score/{{model}}.log",
            benchmark:
                f"results/benchmarks/{run_dir}/score/{{model}}.tsv"
            wildcard_constraints:
                model="|".join(map(re.escape, members)),
            threads: 1
            resources:
                **SCORE["resources"],
            priority: null.priority
            conda:
                "../../envs/ips.yaml"
            shell:
                SCORE["shell"]

    rule:
        name:
            f"fit_{null.kind}_null"
        input:
            variant_path(null, "values"),
        output:
            variant_path(null, "interactions"),
        params:
            **FIT["params"],
        log:
            f"logs/{run_dir}/fit/{{model}}/{{dataset}}.log",
        benchmark:
            f"results/benchmarks/{run_dir}/fit/{{model}}/{{dataset}}.tsv"
        resources:
            **FIT["resources"],
        conda:
            "../../envs/ips.yaml"
        shell:
            FIT["shell"]
