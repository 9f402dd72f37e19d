"""Figures, tidy tables and a README of the results (`ips figures`).

`make_figures` (in `ips.figures.draw`) writes them all into one directory; what each file
shows is its caption in `ips.figures.captions`. The names below are imported on first use,
so that `ips.figures.captions`, which every Snakemake start reads for the report, does not
load matplotlib and SciPy.
"""

from importlib import import_module

_DRAW = "ips.figures.draw"
__all__ = ["FIGURES", "TABLES", "FILES", "CASE_STUDY", "MAIN_GROUP", "TABLE_COLUMNS",
           "NULL_COLUMNS", "FACTOR_COLUMNS", "TAU_COLUMNS", "TAU_PAIR_COLUMNS",
           "PERTURBATION_COLUMNS", "REPRESENTATION_COLUMNS", "MATCHED_COLUMNS", "DPI",
           "MIN_WIDTH", "make_figures", "draw_all", "figure_files", "case_study_name"]


def __getattr__(name: str):
    if name in __all__:
        value = getattr(import_module(_DRAW), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ips.figures' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
