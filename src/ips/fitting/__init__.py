"""AND-OR interactions of a values file (step 4, `ips fit`): every (sample, condition) game
of the scored cube fitted by `ips.interactions` (exhaustive sampling) or estimated from its
design of masks (sparse sampling), into the interactions file (`ips.formats.interactions`).

Modules:

* ``cube``  the fits of a whole values cube and of a values file (`fit_values`, `fit_sparse`, `fit_file`)
"""
