"""`python -m ips`: the command-line interface."""

import sys

from ips.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
