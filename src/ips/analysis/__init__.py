"""What `ips metrics` computes for one (model, dataset) (step 5): IPS and its bands,
interaction types, diagnostics, nulls, bootstrap intervals and tests, the case study: analyses
of stored games (`ips explain`'s live run is `ips.explain`).

Modules:

* ``layout``             the arrays the metrics take, their checks
* ``metrics``            IPS, salient sets and order bands (Sections 3.2, 3.3)
* ``sparse_metrics``     the same definitions on sparse estimates
* ``interaction_types``  interaction types over U (Fig. 3b)
* ``diagnostics``        output consistency and the other diagnostics beside IPS
* ``uncertainty``        bootstrap intervals and sign-flip tests
* ``item_draw_test``     a number against K control draws, with every model's item noise
* ``nulls``              null IPS: Gaussian, matched-size, precision and baseline nulls
* ``null_fits``          the nulls' perturbed games and their fits, made once for every τ
* ``peers``              what other prompt-sensitivity tools report
* ``summary``            the metrics of one (model, dataset) from its merged shards
* ``case_study``         one sample under a template pair (Section 3.3)
* ``labelled``           a run's interactions and values as tidy tables of words (`ips export`)
"""
