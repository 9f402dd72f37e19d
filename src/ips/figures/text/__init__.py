"""The text of `ips figures`: what every file shows and the README that says it; and
documents whose numbers are read from tables (`ips docs`).

Modules:

* ``captions``  one caption per figure and table (light: every Snakemake start reads it)
* ``readme``     the README of a figures directory
* ``paper_map``  where each figure and table of the paper is, or why none is
* ``docs``       Markdown templates rendered with the numbers of CSV tables
"""
