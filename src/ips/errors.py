"""The errors the command line reports in one line, with exit code 2.

They sit below every other module, so that configuration, templates and argument types raise
`InputError` without importing the HDF5 machinery of `ips.files`.
"""


class InputError(ValueError):
    """A file that does not have the expected content (the CLI exits with code 2)."""


class OutputError(InputError):
    """A destination that cannot be written (the CLI exits with code 2)."""


class ModelError(InputError):
    """A model entry, or the files it points to, cannot be used (the CLI exits with code 2)."""
