"""Documents whose numbers are read from committed tables: Jinja2 templates rendered into
Markdown (`ips docs`; the repository's own docs by `make docs`).

A template ``<templates>/<path>.j2`` renders to ``<root>/<path>``: ``docs/templates/README.md.j2``
to ``README.md``; one whose name starts with ``_`` is a part that others import, not rendered. A number that a document quotes from a table is written as an expression
that reads it, so a changed table changes the prose, and a rendered file that differs from
its template's output is stale (`stale`, ``ips docs --check``)::

    {% set h2 = table("studies/confirm/claims.csv").row(claim="factor_few_shot",
                                                        scope="mmlu / qwen... / 1shot vs 0shot") %}
    one shot lowers IPS by {{ h2.estimate | pct }} (p = {{ h2.p_value | p }})

`table(path)` reads a CSV (path relative to the root) once, `config(path)` a YAML file; `.row(**where)` is its one row
whose columns equal ``where`` (a list or tuple: any of its values; an error naming the
template and the filter when none or several match), `.rows(**where)` all of them,
`.at(*key)` the one row whose first columns hold ``key`` (``claims.at(claim, scope)``),
`.count(**where)` their number, `.values(column, **where)` that column of them,
`.distinct(columns, **where)` how many different combinations of ``columns`` (a
space-separated list) they hold, and `.where(**where)` the table of those rows alone (a
study's trained models: ``.where(weights="trained")``); a row's columns are attributes,
numbers where the cell is one (`.get(column)`: "" where the table lacks the column). The
filters print numbers as the docs do: `num(d)` d decimals, `pct(d)` a ΔIPS as a signed percentage, `percent(d)` a share or a
spread as one, `p` a p-value with two significant digits, `signed(d)` with its sign, `count`
with thousands separators; a minus is the typographic one. `each(fmt, *args)` prints a list
of numbers that one number stands for ("n = 10 each") with filter ``fmt``, an error where
they do not all print alike; `match(pattern)` the number a note's text gives. `require(condition, why)` stops
the rendering with ``why`` where a sentence's wording (a "never", a verdict word) no longer
holds for its table. An undefined name is an error, never an empty string.
"""

from __future__ import annotations

import csv
import math
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from ips.errors import InputError

SUFFIX = ".j2"
MINUS = "−"


def _text(x: float, digits: int) -> str:
    text = f"{x:.{digits}f}"
    if float(text) == 0:  # −0.004 prints 0.00, not −0.00
        text = text.lstrip("-")
    return text.replace("-", MINUS)


def num(x, digits: int = 3) -> str:
    return _text(float(x), digits)


def signed(x, digits: int = 3) -> str:
    x = float(x)
    return ("+" if x >= 0 else "") + _text(x, digits)


def pct(x, digits: int = 1) -> str:
    """A relative change (−0.184) as a signed percentage (−18.4 %)."""
    return signed(100 * float(x), digits) + " %"


def percent(x, digits: int = 1) -> str:
    """A share or a spread (0.065) as a percentage (6.5 %)."""
    return _text(100 * float(x), digits) + " %"


def p(x) -> str:
    """A p-value with two significant digits, a half rounded up (0.025, 0.0020, 0.00045, 0.063
    for 2/32, 0.70); an exact 1 or 0.5 stays short."""
    x = float(x)
    if x == 0:
        return "0"
    digits = 1 - math.floor(math.log10(x))
    text = f"{Decimal(repr(x)).quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP):f}"
    short = text.rstrip("0").rstrip(".")
    return short if float(short) == x else text


def count(x) -> str:
    return f"{int(float(x)):,}"


def match(text: str, pattern: str) -> float:
    """The number that ``pattern``'s one group finds in a table's text cell (a note)."""
    found = re.search(pattern, str(text))
    if not found:
        raise InputError(f"{pattern!r} is not in {text!r}")
    return float(found.group(1))


FORMATS = {"num": num, "signed": signed, "pct": pct, "percent": percent, "p": p, "count": count}


def each(values, fmt: str, *args) -> str:
    """Numbers that one printed number stands for, printed by ``FORMATS[fmt]``."""
    printed = {FORMATS[fmt](v, *args) for v in values}
    if len(printed) != 1:
        raise InputError(f"one number stands for {len(values)} that print as "
                         f"{sorted(printed)}: the sentence needs its range")
    return printed.pop()


class Row:
    """One row of a table: its columns as attributes, a number where the cell is one."""

    def __init__(self, cells: dict[str, str], where: str):
        self._cells, self._where = cells, where

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            value = self._cells[name]
        except KeyError:
            raise InputError(f"{self._where}: no column {name!r}") from None
        try:
            return float(value)
        except ValueError:
            return value

    def __getitem__(self, name: str):
        return getattr(self, name)

    def get(self, name: str, default=""):
        """A column that a table may lack (an older table's): ``default`` where it does."""
        return getattr(self, name) if name in self._cells else default


def _matches(cell: str | None, wanted) -> bool:
    if isinstance(wanted, (list, tuple)):
        return cell in {str(w) for w in wanted}
    return cell == str(wanted)


class Table:
    """A CSV table's rows (`row`, `rows`, `count`, `values`, `distinct`, `where`), read once."""

    def __init__(self, rows: list[dict[str, str]], columns: list[str], name: str):
        self._rows, self.columns, self.name = rows, columns, name

    @classmethod
    def read(cls, path: Path, name: str) -> Table:
        try:
            with open(path, newline="", encoding="utf-8") as f:
                reader = csv.DictReader(f)
                return cls(list(reader), list(reader.fieldnames or []), name)
        except OSError as e:
            raise InputError(f"{name}: cannot be read ({e.strerror})") from None

    def _select(self, where: dict) -> list[dict[str, str]]:
        return [r for r in self._rows if all(_matches(r.get(k), v) for k, v in where.items())]

    def rows(self, **where) -> list[Row]:
        return [Row(r, self.name) for r in self._select(where)]

    def where(self, **where) -> Table:
        return Table(self._select(where), self.columns, f"{self.name} where {where}")

    def at(self, *key) -> Row:
        """The one row whose first columns hold ``key``: ``claims.at(claim, scope)``."""
        return self.row(**dict(zip(self.columns, key)))

    def values(self, column: str, **where) -> list:
        found = self.rows(**where)
        if not found:
            raise InputError(f"{self.name}: no rows where {where}")
        return [r[column] for r in found]

    def distinct(self, columns: str, **where) -> int:
        return len({tuple(r[c] for c in columns.split()) for r in self._select(where)})

    def row(self, **where) -> Row:
        found = self.rows(**where)
        if len(found) != 1:
            raise InputError(f"{self.name}: {len(found)} rows where {where} (one expected)")
        return found[0]

    def count(self, **where) -> int:
        return len(self.rows(**where))


def _environment(root: Path, templates: Path):
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(templates), autoescape=False,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    tables: dict[str, Table] = {}

    def table(name: str) -> Table:
        if name not in tables:
            tables[name] = Table.read(root / name, name)
        return tables[name]

    def config(name: str):
        from ips import yaml_text

        return yaml_text.load((root / name).read_text(encoding="utf-8"))

    def require(condition, why: str) -> str:
        if not condition:
            raise InputError(f"no longer true of its table: {why}")
        return ""

    env.globals.update(table=table, config=config, require=require)
    env.filters.update(FORMATS, each=each, match=match)
    return env


def render(root: Path, templates: Path) -> dict[Path, str]:
    """Every template under ``templates`` rendered: output path under ``root`` → text."""
    import jinja2

    root, templates = Path(root), Path(templates)
    env = _environment(root, templates)
    out = {}
    for t in sorted(t for t in templates.rglob(f"*{SUFFIX}") if not t.name.startswith("_")):
        name = t.relative_to(templates).as_posix()
        try:
            out[root / name[: -len(SUFFIX)]] = env.get_template(name).render()
        except Exception as e:  # a template's expression can fail in any way: one line
            line = f", line {e.lineno}" if getattr(e, "lineno", None) else ""
            what = str(e) if isinstance(e, (jinja2.TemplateError, InputError)) else \
                f"{type(e).__name__}: {e}"
            raise InputError(f"{t}{line}: {what}") from None
    if not out:
        raise InputError(f"{templates}: no templates (*{SUFFIX})")
    return out


def stale(rendered: dict[Path, str]) -> list[Path]:
    """The outputs whose file differs from what their template renders."""
    return [path for path, text in rendered.items()
            if not path.is_file() or path.read_text(encoding="utf-8") != text]
