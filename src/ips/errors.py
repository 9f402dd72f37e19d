"""The errors the command line reports in one line, with exit code 2.

They sit below every other module, so that configuration, templates and argument types raise
`InputError` without importing the HDF5 machinery of `ips.outputs`.
"""


class InputError(ValueError):
    """A file that does not have the expected content (the CLI exits with code 2)."""


class OutputError(InputError):
    """A destination that cannot be written (the CLI exits with code 2)."""


class ConfigError(InputError):
    """A config value the schema or a check rejects; the message names the field and what is
    allowed (`ips.config`)."""


class ModelError(InputError):
    """A model entry, or the files it points to, cannot be used (the CLI exits with code 2)."""


class ScoringError(InputError):
    """A prompt, target, model or baseline that cannot be scored (the reason is named in the
    message)."""


def reason(e: BaseException) -> str:
    """The cause of `e` in one line (HDF5 messages span lines; OSError has strerror)."""
    if isinstance(e, OSError) and e.strerror:
        text = e.strerror
        text = text[:1].lower() + text[1:]
    else:
        text = str(e.args[0]) if e.args else type(e).__name__
    return " ".join(text.split())
