"""`ips <command>`: `main` builds the parser; one module per command registers its options
(`add_parser`) and its handler (`run`), which parses and calls the library. Commands that
take settings accept them from a config file (`--config`, for people) or as JSON
(`--settings` / `--entry`, for workflow rules, which pass exactly the values they depend on
through `params:`).

Modules:

* ``main``           the parser and the dispatch to each command
* ``arguments``      argument types shared by the commands
* ``samples``        `ips samples`
* ``prepare_model``  `ips prepare-model`
* ``score``          `ips score`
* ``fit``            `ips fit`
* ``null_fits``      `ips null-fits`
* ``metrics``        `ips metrics`
* ``export``         `ips export`
* ``factors``        `ips factors`
* ``baselines``      `ips baselines`
* ``figures``        `ips figures`
* ``explain``        `ips explain`
* ``archive``        `ips archive` (a study's raw scores; its tables against a rebuild's)
* ``docs``           `ips docs` (documents whose numbers are read from tables)
* ``run``            `ips run` (the workflow on a study in a folder of its own)
"""
