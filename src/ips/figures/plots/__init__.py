"""The figures of `ips figures`, one module a figure family (each draws with the look of
`ips.figures.style` from the values of `ips.figures.numbers`).

Modules:

* ``overview``           the method on one item (Fig. 1)
* ``ranking``            IPS per model and against output consistency (Fig. 4)
* ``sparsity``           sparsity and universal matching (Fig. 2)
* ``interaction_types``  interaction types by changed prediction (Fig. 3b)
* ``case_study``         one item under a template pair (Figs. 1, 3a)
* ``factors``            the four factors and their change by order (Figs. 5-8, 10)
* ``order``              IPS by order band (Figs. 9, 20)
* ``scale``              IPS and its order bands against model size (Figs. 6, 11, 22)
* ``shots``              IPS from 0 to k shots (Fig. 8), and by order band (Fig. 23)
* ``perturbation``       altering against adding pairs (App. G)
* ``representation``     hidden-state similarity against IPS (App. H)
* ``robustness``         IPS over the τ sweep (Tables 2/3)
* ``nulls``              IPS beside its nulls
"""
