"""`ips docs`."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

log = logging.getLogger("ips")


def add_parser(sub, common) -> None:
    p = sub.add_parser(
        "docs",
        parents=[common],
        help="render Markdown templates whose numbers are read from CSV tables (`make docs`)",
        description="Render every TEMPLATES/<path>.j2 (Jinja2) to ROOT/<path>, the numbers "
        "read from the tables it names, so that a document quotes its tables and follows "
        "them; with --check, write nothing and exit 1 when a rendered file differs from its "
        "template's output. The template language is documented in `ips.figures.text.docs`.",
    )
    p.add_argument("--templates", type=Path, default=Path("docs/templates"), metavar="DIR",
                   help="the templates' folder (default: %(default)s)")
    p.add_argument("--root", type=Path, default=Path("."), metavar="DIR",
                   help="where the documents are written and the tables read "
                   "(default: %(default)s)")
    p.add_argument("--check", action="store_true",
                   help="only compare: exit 1 naming each stale document")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ips.figures.text.docs import render, stale
    from ips.outputs import write_bytes

    rendered = render(args.root, args.templates)
    old = stale(rendered)
    if args.check:
        for path in old:
            print(f"{path}: stale; run `make docs` (its template or a table it reads changed)")
        return 1 if old else 0
    for path in old:
        write_bytes(path, rendered[path].encode("utf-8"))
    log.info("%d documents rendered from %s, %d rewritten", len(rendered), args.templates,
             len(old))
    return 0
