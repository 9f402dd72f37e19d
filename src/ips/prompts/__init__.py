"""From a configured dataset to the prompts that get scored (pipeline step 1):
items, their variables, templates and conditions, the samples file.

Modules:

* ``items``      multiple-choice and instruction items
* ``parsers``    one parser per dataset format
* ``datasets``   loading a dataset's items and few-shot examples
* ``draw``       the seeded draw of a dataset's items
* ``variables``  input-variable selection
* ``templates``  rendering an item to a prompt, variables' spans kept
* ``samples``    from a configured dataset to the samples file
"""
