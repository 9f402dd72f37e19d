"""ips: interaction-based prompt sensitivity (IPS) of large language models.

Decomposes an LLM's output score on masked prompts into sparse AND-OR interactions
(`ips.interactions`) and measures how they change between prompt templates
(`ips.metrics`). `python -m ips --help` lists the command-line tools.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ips")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.1.0+unknown"

__all__ = ["__version__"]
