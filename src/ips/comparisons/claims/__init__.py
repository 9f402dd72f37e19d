"""The paper's claims tested on the configured models (`table.claims`).

Modules:

* ``verdicts``       a claim's row and verdict, thresholds and tests
* ``per_model``      claims on each model's own IPS
* ``across_models``  claims across models: consistency, τ, factors, perturbations
* ``nulls``          claims of IPS against its nulls
* ``controls``       every row beside what random weights earn
* ``saturation``     which rows rest on an IPS near its ceiling
* ``correction``     many tests in one table: q-values, Holm over the declared hypotheses
* ``table``          the claims table (`claims.csv`)
"""
