"""From a configured dataset to the prompts that get scored (pipeline step 1):
items, their variables, templates and conditions, the samples file."""
