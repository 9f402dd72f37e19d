"""Across models (step 6): the factor comparisons (`compare`, pairs in `factors`), the
low-band test (`low_band`), tau robustness (`robustness`), verdicts and agreement across
baselines (`baselines`) and the paper's claims."""
