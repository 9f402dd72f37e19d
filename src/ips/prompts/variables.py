"""Input-variable selection (paper Sections 4.1, 4.3; App. J, K.2): deterministic, and
model-independent unless the ``occlusion`` reduction is chosen.

The input variables of a sample are words or merged phrases of its fields (``item.fields()``:
question and options of an MCQ, instruction and context of an instruction item). Everything
that is not a selected variable stays as background in every masked input.

Rules
-----
* **Words** are maximal runs of Unicode letters and digits (``str.isalnum``; combining marks
  attached to them belong to the word), joined into one word across a single inner connector:
  a hyphen (``X-Files``, ``well-known``), an apostrophe ``'`` or ``’`` (``don't``,
  ``Earth's``), an underscore (``snake_case``), or ``.``/``,`` between two digits (``3.5``,
  ``1,000``). Numbers are words. Punctuation, symbols and connectors at a word's edge
  (``-5``, ``students'``, ``50%``) are background. Abbreviations split (``e.g.`` → ``e``, ``g``).
* **Stop words** are NLTK's English list, compared case-insensitively with ``’`` read as ``'``.
  The package ships NLTK's 179-word list; an ``nltk_data`` the user installed takes precedence
  (see :func:`stopwords`), and a different list changes the selection.
* **Phrase merging** (``merge_phrases=True``) works within one field, before stop-word removal,
  and only across *inline gaps* (whitespace without a line break; any other character between
  two words keeps them apart):

  1. adjacent capitalised words (first character upper-case) form one unit
     (``Walter Skinner``, ``John Fitzgerald Byers``). A stop word never joins or starts such a
     run, so ``The X-Files`` gives ``The`` and ``X-Files`` and a sentence-initial ``Which Type``
     gives ``Which`` and ``Type``. Otherwise a word's position in the sentence does not matter:
     a capitalised first word joins the next capitalised word (MCQ options and list items
     often start with a name), and one followed by a lower-case word stays alone
     (``Identify from`` → ``Identify``).
  2. then ``A or B`` (``or`` in any case, A and B units that are not stop words) forms one unit
     (``bald or balding``); chains ``A or B or C`` form one unit.

  A merged unit spans from its first word's start to its last word's end, so it includes the
  gaps and the ``or``. A merged unit is never a stop word.
* **Strategies**: ``all`` keeps every unit; ``content`` drops units that are stop words.
* **Order**: fields in ``item.fields()`` order, then by position; variable ``i`` is bit ``i`` of
  a mask.
* **Cap and reduction** (rule ``reduce``): a sample whose units number ``n_units > n_max`` is
  reduced to ``n_max`` variables and the other units become background (present in every
  masked input, never masked):

  - ``longest`` (the default): keep the ``n_max`` units with the most characters of text
    (``len(unit.text)``; a merged phrase is one unit and counts its whole span, gaps
    included). Ties go to the earlier unit in field-then-position order. The rule depends on
    the text alone, so it is deterministic and model-independent; long units are the
    content-bearing ones (names, technical terms, numbers with digits), short ones are
    mostly function-like words that ``content`` did not drop.
  - ``occlusion``: keep the ``n_max`` units with the largest occlusion score
    ``|v(x_N) − v(x_{N∖{i}})|`` of one named reference model (``ips.scoring.occlusion.Occlusion``:
    ``n_units + 1`` forward passes per sample), ties again to the earlier unit. Every model
    is then explained over the reference model's choice.
  - ``skip``: the sample is skipped (:class:`Skip`, code ``"too_many"``, reason
    ``"more than {n_max} variables ({n_units})"``).

  Kept units keep their field-then-position order, so variable ``i`` is still bit ``i``. A
  sample with ``n_units <= n_max`` is never changed. A sample without units is skipped
  (code ``"none"``, reason ``"no variables"``). :class:`Reduction` records what happened.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ips.prompts.items import Item

__all__ = [
    "STRATEGIES",
    "REDUCE_RULES",
    "Reduction",
    "NLTK_DATA_DIR",
    "Variable",
    "Skip",
    "stopwords",
    "is_stopword",
    "word_spans",
    "unit_spans",
    "select_units",
    "top_units",
    "select",
    "select_variables",
]

STRATEGIES = ("all", "content")

#: How a sample with more than ``n_max`` units is handled (see the module rules).
REDUCE_RULES = ("longest", "skip", "occlusion")

#: Shipped ``nltk_data`` folder holding ``corpora/stopwords/english``.
NLTK_DATA_DIR = Path(__file__).parents[1] / "data" / "nltk_data"

# Whitespace without any character that str.splitlines() breaks on.
_INLINE_GAP = re.compile(r"[^\S\n\r\v\f\x1c-\x1e\x85\u2028\u2029]+")


@dataclass(frozen=True)
class Variable:
    """One input variable: ``text == item.fields()[field][start:end]``."""

    text: str
    field: str
    start: int
    end: int


@dataclass(frozen=True)
class Reduction:
    """How a sample's variables came from its units under rule ``rule``.

    ``units`` (every unit, in order) and ``scores`` (the occlusion score of each of them, same
    order) are kept only for a reduced sample; ``reference_model`` names the model that
    scored them (rule ``occlusion``).
    """

    rule: str
    n_units: int
    reduced: bool
    units: tuple[Variable, ...] = ()
    scores: tuple[float, ...] = ()
    reference_model: str | None = None


class Skip(Exception):
    """The sample has no usable variable set; ``code`` is ``"too_many"`` or ``"none"``."""

    def __init__(self, code: str, reason: str, n_units: int) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.n_units = n_units


@cache
def stopwords() -> frozenset[str]:
    """NLTK's English stop words, lower-cased, read through ``nltk.corpus.stopwords``.

    The shipped folder is appended (not prepended) to ``nltk.data.path``, so an ``nltk_data``
    installed by the user wins.
    """
    import nltk  # here: it imports scipy (0.8 s), which the workflow's every job would pay

    if str(NLTK_DATA_DIR) not in nltk.data.path:
        nltk.data.path.append(str(NLTK_DATA_DIR))
    from nltk.corpus import stopwords as corpus

    return frozenset(w.lower() for w in corpus.words("english"))


def is_stopword(text: str) -> bool:
    """Whether ``text`` is an NLTK English stop word (case-insensitive, ``’`` read as ``'``)."""
    return text.lower().replace("’", "'") in stopwords()


@cache
def _word_re() -> re.Pattern[str]:
    # Python's re has no \p{M}; build the class of combining marks once from unicodedata.
    marks = [c for c in map(chr, range(sys.maxunicode + 1)) if unicodedata.category(c)[0] == "M"]
    ranges: list[list[str]] = []
    for c in marks:
        if ranges and ord(c) == ord(ranges[-1][1]) + 1:
            ranges[-1][1] = c
        else:
            ranges.append([c, c])
    mark = "[" + "".join(f"{a}-{b}" for a, b in ranges) + "]"
    run = rf"[^\W_](?:[^\W_]|{mark})*"
    connector = r"(?:[-'’_\u2010\u2011]|(?<=\d)[.,](?=\d))"
    return re.compile(rf"{run}(?:{connector}{run})*")


def word_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every word of ``text`` (see the module rules), in order."""
    return [m.span() for m in _word_re().finditer(text)]


def _inline(text: str, end: int, start: int) -> bool:
    return _INLINE_GAP.fullmatch(text, end, start) is not None


def unit_spans(text: str, merge_phrases: bool = True) -> list[tuple[int, int]]:
    """Spans of the units of one field: its words, merged into phrases if ``merge_phrases``."""
    words = word_spans(text)
    if not merge_phrases:
        return words

    runs: list[tuple[int, int]] = []
    prev_joins = False
    for s, e in words:
        joins = text[s].isupper() and not is_stopword(text[s:e])
        if prev_joins and joins and _inline(text, runs[-1][1], s):
            runs[-1] = (runs[-1][0], e)
        else:
            runs.append((s, e))
        prev_joins = joins

    units: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        s, e = runs[i]
        if (
            units
            and i + 1 < len(runs)
            and text[s:e].lower() == "or"
            and not is_stopword(text[slice(*units[-1])])
            and not is_stopword(text[slice(*runs[i + 1])])
            and _inline(text, units[-1][1], s)
            and _inline(text, e, runs[i + 1][0])
        ):
            units[-1] = (units[-1][0], runs[i + 1][1])
            i += 2
        else:
            units.append((s, e))
            i += 1
    return units


def select_units(
    item: Item,
    strategy: str = "content",
    merge_phrases: bool = True,
    fields: Sequence[str] | None = None,
) -> list[Variable]:
    """Every unit of ``item`` by the module rules (no cap), in field then position order.

    ``fields`` restricts the fields drawn from (default: all of ``item.fields()``; the order is
    always that of ``item.fields()``). ``ValueError`` for an unknown strategy or field.
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; allowed: {', '.join(STRATEGIES)}")
    texts = item.fields()
    if fields is not None:
        unknown = [f for f in fields if f not in texts]
        if unknown:
            raise ValueError(f"unknown fields {unknown}; item has {list(texts)}")
        texts = {k: v for k, v in texts.items() if k in fields}
    return [
        Variable(text[s:e], name, s, e)
        for name, text in texts.items()
        for s, e in unit_spans(text, merge_phrases)
        if strategy == "all" or not is_stopword(text[s:e])
    ]


def top_units(units: Sequence[Variable], n_max: int, scores: Sequence[float]) -> list[Variable]:
    """The ``n_max`` units of highest score (ties: the earlier unit), in their original order."""
    if len(scores) != len(units):
        raise ValueError(f"{len(scores)} scores for {len(units)} units")
    best = sorted(range(len(units)), key=lambda i: (-scores[i], i))[:n_max]
    return [units[i] for i in sorted(best)]


def select(
    item: Item,
    strategy: str = "content",
    n_max: int = 10,
    merge_phrases: bool = True,
    fields: Sequence[str] | None = None,
    reduce: str = "longest",
    occlusion: Callable[[list[Variable]], Sequence[float]] | None = None,
) -> tuple[list[Variable], Reduction]:
    """The input variables of ``item`` by the module rules, and how they were reduced.

    ``occlusion`` (rule ``occlusion`` only) maps every unit of the item to its occlusion
    score; it is called only when the item has more than ``n_max`` units. Raises
    :class:`Skip` (no units; more than ``n_max`` under ``skip``) and ``ValueError`` for an
    unknown strategy, field or rule, or ``n_max < 1``.
    """
    if reduce not in REDUCE_RULES:
        raise ValueError(f"unknown reduce rule {reduce!r}; allowed: {', '.join(REDUCE_RULES)}")
    if n_max < 1:
        raise ValueError(f"n_max must be at least 1, got {n_max}")
    units = select_units(item, strategy, merge_phrases, fields)
    n = len(units)
    if not units:
        raise Skip("none", "no variables", 0)
    if n <= n_max:
        return units, Reduction(reduce, n, False)
    if reduce == "skip":
        raise Skip("too_many", f"more than {n_max} variables ({n})", n)
    if reduce == "longest":
        return top_units(units, n_max, [len(u.text) for u in units]), Reduction(
            reduce, n, True, tuple(units))
    if occlusion is None:
        raise ValueError("reduce rule 'occlusion' needs the occlusion scores of a reference model")
    scores = tuple(float(x) for x in occlusion(units))
    return top_units(units, n_max, scores), Reduction(reduce, n, True, tuple(units), scores)


def select_variables(
    item: Item,
    strategy: str = "content",
    n_max: int = 10,
    merge_phrases: bool = True,
    fields: Sequence[str] | None = None,
    reduce: str = "longest",
) -> list[Variable]:
    """The variables of :func:`select` without its record (rules ``longest`` and ``skip``)."""
    return select(item, strategy, n_max, merge_phrases, fields, reduce)[0]
