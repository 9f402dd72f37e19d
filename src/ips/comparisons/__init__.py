"""Across models (step 6): the factor comparisons (`compare`, pairs in `factors`), the
low-band test (`low_band`), tau robustness (`robustness`), verdicts and agreement across
baselines (`baselines`) and the paper's claims.

Modules:

* ``factors``     the four factors and the model pairs of each
* ``per_sample``  a comparison's two sides sample by sample, and the sign-flip test of them
* ``beside_controls``  each comparison beside its models' controls, draw by draw
* ``compare``     factor comparisons and τ robustness across models (`ips factors`)
* ``low_band``    does the low band fall most?
* ``robustness``  rank and linear agreement of IPS across τ
* ``baselines``   verdicts and agreement across baselines (`ips baselines`)
* ``claims``      the paper's claims tested on the configured models
"""
