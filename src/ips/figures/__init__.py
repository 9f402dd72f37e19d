"""Figures, tidy tables and a README of the results (`ips figures`).

`make_figures` (`ips.figures.make`) writes them all into one directory: the plots, one
module a figure family (`plots`), the CSV tables (`tables`) and the text, the README and
the caption of every file (`text`). `ips.figures.text.captions` is read by every Snakemake
start for the report, so it and the packages' `__init__` load neither matplotlib nor SciPy.

Modules:

* ``style``    the shared look and constants: colours, panels, legends, whiskers, saving
* ``numbers``  values read off the metrics entries, and their text
* ``plots``    the figures, one module a figure family
* ``tables``   the CSV tables
* ``text``     the README of a figures directory and the caption of every file
* ``make``     every figure, table and the README, into one directory (`make_figures`)
"""
