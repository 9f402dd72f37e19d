# A study rebuilt from its archive (`archive:`; ips.formats.archive): the samples and every
# values file are restored from it, each checked against its manifest, in place of
# `prepare_samples` and the scoring rules, so that no dataset is read and no model prepared
# or loaded; the fits, metrics, factors and figures are made again as in any run.


localrules:
    restore_values,


checkpoint prepare_samples:
    input:
        f"{ARCHIVE}/results/samples/{{dataset}}.json.xz",
    output:
        "results/samples/{dataset}.json",
    params:
        archive=ARCHIVE,
    log:
        "logs/restore/samples/{dataset}.log",
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips archive restore --archive {params.archive:q} "
        "samples/{wildcards.dataset}.json --out {output} 2> {log}"


rule restore_values:
    input:
        f"{ARCHIVE}/results/{{path}}.xz",
    output:
        "results/{path}",
    params:
        archive=ARCHIVE,
    log:
        "logs/restore/{path}.log",
    wildcard_constraints:
        path=r"(.+/)?values/.+\.h5",
    conda:
        "../../envs/ips.yaml"
    shell:
        "python -m ips archive restore --archive {params.archive:q} {wildcards.path:q} "
        "--out {output} 2> {log}"
