# Tables per (model, dataset), comparisons across models, and the figures.


rule metrics:
    input:
        values=shard_files("results/values/{model}/{dataset}/{shard}.h5"),
        fits=shard_files("results/interactions/{model}/{dataset}/{shard}.h5"),
    output:
        "results/metrics/{model}/{dataset}.nc",
    params:
        tau=config["tau"],
        tau_sweep=" ".join(map(str, config["tau_sweep"])),
    log:
        "logs/metrics/{model}/{dataset}.log",
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips metrics --values {input.values} --fits {input.fits} --tau {params.tau} "
        "--tau-sweep {params.tau_sweep} --out {output} 2> {log}"


rule factors:
    input:
        expand("results/metrics/{model}/{dataset}.nc", model=MODELS, dataset=DATASETS),
    output:
        "results/factors/factors.nc",
    log:
        "logs/factors.log",
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips factors --metrics {input} --out {output} 2> {log}"


rule figures:
    input:
        metrics=expand("results/metrics/{model}/{dataset}.nc", model=MODELS, dataset=DATASETS),
        factors="results/factors/factors.nc",
    output:
        directory("results/figures"),
    log:
        "logs/figures.log",
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips figures --metrics {input.metrics} --factors {input.factors} --out {output} 2> {log}"
