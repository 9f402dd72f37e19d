"""`ips explain`: the pipeline run end to end for one item under one template pair, a case
study (paper Section 3.3, Fig. 1).

For one item x and two templates T, T̂ the command scores v(x_S) on every mask under both
templates, fits the sparsest AND-OR interactions, normalises them, and reports

* the prediction under each template (and the gold answer),
* ips(x, T, T̂) of Eq. 3 at τ,
* the salient interactions U (|Ĩ| > τ under T or T̂) ranked by how much they changed,
  |Ĩ_T − Ĩ_T̂|, with their words, kind (AND/OR), both normalised values and type,

and draws the case-study figure (`ips.figures.plots.case_study`); U, the types and ips come
from `ips.analysis.case_study`. Every step is the workflow's own code:
`ips.prompts.variables.select_variables`, `ips.prompts.templates.render`,
`ips.scoring.engine.score_sample` (the same masked scoring, target and prediction as `ips
score`), `ips.interactions.and_or` (as `ips fit`) and `ips.analysis.metrics` (as `ips
metrics`), so the numbers agree with a workflow run of the same item, model, scorer and
solver. The command line is `ips.cli.explain`.

Modules:

* ``inputs``  the item, the model entry, the templates and variables, checked before a model loads
* ``run``     `explain` (from a loaded model and an item) and the table (`format_case`)
"""
