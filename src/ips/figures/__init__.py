"""Figures, tidy tables and a README of the results (`ips figures`).

`make_figures` (in `ips.figures.draw`) writes them all into one directory; what each file
shows is its caption in `ips.figures.captions`. The names below are imported on first use,
so that `ips.figures.captions`, which every Snakemake start reads for the report, does not
load matplotlib and SciPy.
"""
