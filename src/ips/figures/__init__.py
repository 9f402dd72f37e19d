"""Figures, tidy tables and a README of the results (`ips figures`).

`make_figures` (in `ips.figures.draw`) writes them all into one directory; what each file
shows is its caption in `ips.figures.captions`. The names below are imported on first use,
so that `ips.figures.captions`, which every Snakemake start reads for the report, does not
load matplotlib and SciPy.

Modules:

* ``style``              the shared look: colours, panels, saving
* ``numbers``            reading, ordering and labelling values off the metrics entries
* ``captions``           one caption per figure and table
* ``ranking``            IPS per model and against output consistency (Fig. 4)
* ``sparsity``           sparsity and universal matching (Fig. 2)
* ``interaction_types``  interaction types by changed prediction (Fig. 3b)
* ``case_study``         one item under a template pair (Figs. 1, 3a)
* ``factors``            the four factors and their change by order (Figs. 5-8, 10)
* ``order``              IPS by order band (Figs. 9, 20)
* ``scale``              order bands against model size (Figs. 11, 22)
* ``shots``              0-shot against k-shot by order band (Fig. 23)
* ``perturbation``       altering against adding pairs (App. G)
* ``representation``     hidden-state similarity against IPS (App. H)
* ``robustness``         IPS over the τ sweep (Tables 2/3)
* ``nulls``              IPS beside its nulls
* ``tables``             the tidy CSV tables
* ``appendix``           the appendix tables (Tables 4-7)
* ``readme``             the README of a figures directory
* ``draw``               every figure, table and the README, into one directory
"""
