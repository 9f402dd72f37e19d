# Model-independent samples, and models resolved to fast-loading directories.


# a re-drawn model (a redraw source, as the controls add) is built from its original's prepared directory, after it
rule prepare_model:
    input:
        original_input,
    output:
        protected(f"{MODEL_DIR}/{{model}}.path"),
    params:
        entry=model_entry,
        original=original_flag,
        cache=lambda wildcards, output: Path(output[0]).parent,
    log:
        "logs/prepare_model/{model}.log",
    benchmark:
        "results/benchmarks/prepare_model/{model}.tsv"
    resources:
        mem_mb=prepare_mem_mb,
        runtime=60,
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips prepare-model --model {wildcards.model} --entry {params.entry:q} "
        "{params.original} --cache-dir {params.cache} > {output} 2> {log}"


# with `variables.reduce: occlusion` the reference model ranks the units of long items
checkpoint prepare_samples:
    input:
        reference_input,
    output:
        "results/samples/{dataset}.json",
    params:
        settings=lambda wildcards: as_json(dataset_settings(config, wildcards.dataset)),
        reference=reference_flags,
    log:
        "logs/prepare_samples/{dataset}.log",
    resources:
        mem_mb=reference_mem_mb,
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips samples --settings {params.settings:q} {params.reference} "
        "--out {output} 2> {log}"
