"""The CSV tables of `ips figures`, one row per model, dataset, group and band, or per
model pair (the claims table's rows are computed by `ips.comparisons.claims`).

Modules:

* ``results``   IPS beside its nulls and ceiling, the nulls, factors, τ and peer tables
* ``appendix``  the appendix tables (Tables 4-7)
"""
