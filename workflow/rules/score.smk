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
        shard_size=config["shard_size"],
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
        "--samples {input.samples} --shard {wildcards.shard} --shard-size {params.shard_size} "
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


# The precision null (docs/method.md#precision): the chosen conditions of the first shards
# scored again in a second precision (`precision_null`) and fitted alike.


use rule score as score_precision with:
    output:
        "results/precision/{dtype}/values/{model}/{dataset}/{shard}.h5",
    params:
        rescore=precision_flags,
    log:
        "logs/precision/{dtype}/score/{model}/{dataset}/{shard}.log",
    benchmark:
        "results/benchmarks/precision/{dtype}/score/{model}/{dataset}/{shard}.tsv"


use rule fit as fit_precision with:
    input:
        "results/precision/{dtype}/values/{model}/{dataset}/{shard}.h5",
    output:
        "results/precision/{dtype}/interactions/{model}/{dataset}/{shard}.h5",
    log:
        "logs/precision/{dtype}/fit/{model}/{dataset}/{shard}.log",
    benchmark:
        "results/benchmarks/precision/{dtype}/fit/{model}/{dataset}/{shard}.tsv"


# The mask null (docs/method.md#mask-null): the chosen conditions of the first shards scored
# again with another mask token (`mask_null`) and fitted alike. Each other mask is checked
# against the model's tokenizer first (high priority: a mask the tokenizer lacks stops the
# run before the main scoring, not after it).


rule check_mask:
    input:
        f"{MODEL_DIR}/{{model}}.path",
    output:
        "results/masks/{mask}/{model}.token",
    params:
        entry=model_entry,
        cache=lambda wildcards, input: Path(input[0]).parent,
        mask=lambda wildcards: wildcards.mask.replace("-", ":", 1),
    log:
        "logs/masks/{mask}/check/{model}.log",
    priority: 50
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips prepare-model --model {wildcards.model} --entry {params.entry:q} "
        "--cache-dir {params.cache} --mask {params.mask} > {output} 2> {log}"


use rule score as score_mask with:
    input:
        samples="results/samples/{dataset}.json",
        model=f"{MODEL_DIR}/{{model}}.path",
        checked="results/masks/{mask}/{model}.token",
    output:
        "results/masks/{mask}/values/{model}/{dataset}/{shard}.h5",
    params:
        rescore=mask_flags,
    log:
        "logs/masks/{mask}/score/{model}/{dataset}/{shard}.log",
    benchmark:
        "results/benchmarks/masks/{mask}/score/{model}/{dataset}/{shard}.tsv"


use rule fit as fit_mask with:
    input:
        "results/masks/{mask}/values/{model}/{dataset}/{shard}.h5",
    output:
        "results/masks/{mask}/interactions/{model}/{dataset}/{shard}.h5",
    log:
        "logs/masks/{mask}/fit/{model}/{dataset}/{shard}.log",
    benchmark:
        "results/benchmarks/masks/{mask}/fit/{model}/{dataset}/{shard}.tsv"
