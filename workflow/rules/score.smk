# v(x_S) for every mask of every sample, per shard, and its AND-OR interactions.


rule score:
    input:
        samples="results/samples/{dataset}.json",
        model=f"{MODEL_DIR}/{{model}}.path",
    output:
        "results/values/{model}/{dataset}/{shard}.h5",
    params:
        entry=model_entry,
        cache=lambda wildcards, input: Path(input.model).parent,
        shard=lambda wildcards: wildcards.shard,
        shard_size=f"--shard-size {config['shard_size']}",
        batch_tokens=config["batch_tokens"],
        scorer=config["scorer"],
        target=target_flag,
        sampling=sampling_flags(config["sampling"]),
        rescore="",  # the flags of a re-scored null (precision, mask)
    log:
        "logs/score/{model}/{dataset}/{shard}.log",
    benchmark:
        "results/benchmarks/score/{model}/{dataset}/{shard}.tsv"
    threads: 1
    resources:
        mem_mb=score_mem_mb,
        runtime=240,
        gpu=model_gpus,
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips score --model {wildcards.model} --entry {params.entry:q} --cache-dir {params.cache} "
        "--samples {input.samples} --shard {params.shard} {params.shard_size} "
        "{params.target} --batch-tokens {params.batch_tokens} --scorer {params.scorer} "
        "--threads {threads} {params.sampling} {params.rescore} "
        "--out {output} 2> {log}"


rule fit:
    input:
        "results/values/{model}/{dataset}/{shard}.h5",
    output:
        "results/interactions/{model}/{dataset}/{shard}.h5",
    params:
        solver=config["solver"],
        noise=config["noise"],
        sgd_learning_rate=config["sgd"]["learning_rate"],
        sgd_steps=config["sgd"]["steps"],
        n_max=config["n_max"],
        seed=fit_seed_flag(config),
    log:
        "logs/fit/{model}/{dataset}/{shard}.log",
    benchmark:
        "results/benchmarks/fit/{model}/{dataset}/{shard}.tsv"
    resources:
        mem_mb=2000,
        runtime=120,
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips fit {input} --out {output} --solver {params.solver} --noise {params.noise} "
        "--sgd-learning-rate {params.sgd_learning_rate} --sgd-steps {params.sgd_steps} "
        "--n-max {params.n_max} {params.seed} 2> {log}"


# The re-scored nulls: the chosen conditions of the first shards scored again, one job per
# model and setting for all datasets (one model load; `ips score` with several samples files),
# each dataset's file fitted alike. Their first shards are scored as one shard 0 of
# shards·shard_size samples, the same samples as the main run's shards.

# The precision null (docs/method.md#precision): in a second precision (`precision_null`).


use rule score as score_precision with:
    input:
        samples=expand("results/samples/{dataset}.json",
                       dataset=rescored_datasets("precision_null")),
        model=f"{MODEL_DIR}/{{model}}.path",
    output:
        rescored_outputs("precision_null", "results/precision/{dtype}/values/{model}/{dataset}.h5"),
    params:
        shard=0,
        shard_size=rescored_shard_size("precision_null"),
        target="",  # each samples file's own
        rescore=precision_flags,
    log:
        "logs/precision/{dtype}/score/{model}.log",
    benchmark:
        "results/benchmarks/precision/{dtype}/score/{model}.tsv"


use rule fit as fit_precision with:
    input:
        "results/precision/{dtype}/values/{model}/{dataset}.h5",
    output:
        "results/precision/{dtype}/interactions/{model}/{dataset}.h5",
    log:
        "logs/precision/{dtype}/fit/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/precision/{dtype}/fit/{model}/{dataset}.tsv"


# The mask null (docs/method.md#mask-null): with another mask token (`mask_null`). At high
# priority: `ips score --mask` checks the mask against the tokenizer before the weights load,
# so a mask a model's tokenizer lacks stops the run before the main scoring, not after it.


use rule score as score_mask with:
    input:
        samples=expand("results/samples/{dataset}.json", dataset=rescored_datasets("mask_null")),
        model=f"{MODEL_DIR}/{{model}}.path",
    output:
        rescored_outputs("mask_null", "results/masks/{mask}/values/{model}/{dataset}.h5"),
    params:
        shard=0,
        shard_size=rescored_shard_size("mask_null"),
        target="",  # each samples file's own
        rescore=mask_flags,
    log:
        "logs/masks/{mask}/score/{model}.log",
    benchmark:
        "results/benchmarks/masks/{mask}/score/{model}.tsv"
    priority: 50


use rule fit as fit_mask with:
    input:
        "results/masks/{mask}/values/{model}/{dataset}.h5",
    output:
        "results/masks/{mask}/interactions/{model}/{dataset}.h5",
    log:
        "logs/masks/{mask}/fit/{model}/{dataset}.log",
    benchmark:
        "results/benchmarks/masks/{mask}/fit/{model}/{dataset}.tsv"
