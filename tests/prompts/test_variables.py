"""ips.prompts.variables: word rules, phrase merging, strategies, skips, stop-word loading."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ips.prompts.items import InstructionItem, MCQItem
from ips.prompts.variables import (
    NLTK_DATA_DIR,
    Reduction,
    Skip,
    Variable,
    is_stopword,
    select,
    select_units,
    select_variables,
    stopwords,
    unit_spans,
    word_spans,
)

XFILES = (
    "Identify from the following list characters from The X-Files who are bald or balding: "
    "Walter Skinner, John Fitzgerald Byers, Dana Scully, Melvin Frohike, Darius Michaud, "
    "Peter Watts, Conrad Strughold, Queequeg"
)


def instruction(text: str, context: str = "") -> InstructionItem:
    return InstructionItem("i", text, context, "", "")


def texts(variables: list[Variable]) -> list[str]:
    return [v.text for v in variables]


def words(text: str) -> list[str]:
    return [text[s:e] for s, e in word_spans(text)]


def test_paper_k2_example():
    # The paper (App. K.2) lists 13 units; the rules give 14: the paper merged "following list"
    # by hand, which no rule here does (neither word is capitalised and there is no "or").
    # "The" is a stop word, so it neither joins "X-Files" nor survives `content`.
    got = select_variables(instruction(XFILES), n_max=20)
    assert texts(got) == [
        "Identify", "following", "list", "characters", "X-Files", "bald or balding",
        "Walter Skinner", "John Fitzgerald Byers", "Dana Scully", "Melvin Frohike",
        "Darius Michaud", "Peter Watts", "Conrad Strughold", "Queequeg",
    ]
    start = XFILES.index("bald or balding")
    assert got[5] == Variable("bald or balding", "instruction", start, start + 15)
    with pytest.raises(Skip) as e:
        select_variables(instruction(XFILES), reduce="skip")  # default n_max=10
    assert (e.value.code, e.value.reason, e.value.n_units) == (
        "too_many", "more than 10 variables (14)", 14,
    )


def test_mcq_fields_in_order():
    item = MCQItem(
        "m",
        "Which of the following is a renewable resource?",
        ("coal", "natural gas", "wind", "oil"),
        2,
    )
    got = select_variables(item)
    assert [(v.field, v.text) for v in got] == [
        ("question", "following"), ("question", "renewable"), ("question", "resource"),
        ("choice_0", "coal"), ("choice_1", "natural"), ("choice_1", "gas"),
        ("choice_2", "wind"), ("choice_3", "oil"),
    ]
    assert texts(select_variables(item, "all", n_max=20))[:8] == [
        "Which", "of", "the", "following", "is", "a", "renewable", "resource",
    ]
    only_choices = select_variables(item, fields=["choice_3", "choice_0"])
    assert [(v.field, v.text) for v in only_choices] == [("choice_0", "coal"), ("choice_3", "oil")]


def test_mcq_names_numbers_contractions():
    item = MCQItem(
        "m",
        "Why doesn't the Earth's Moon fall, if its mass is 7.35e22 kg or 1,000 tons?",
        ("Isaac Newton", "Albert Einstein or Niels Bohr", "well-known -5 %", "None"),
        0,
    )
    got = select_variables(item, n_max=20)
    assert texts(got) == [
        "Earth's Moon", "fall", "mass", "7.35e22", "kg or 1,000", "tons",
        "Isaac Newton", "Albert Einstein or Niels Bohr", "well-known", "5", "None",
    ]
    # "doesn't" and "its" are NLTK stop words; "None" is not.
    first = texts(select_variables(item, "all", n_max=40))[:4]
    assert first == ["Why", "doesn't", "the", "Earth's Moon"]


def test_capitalised_runs():
    # A stop word neither starts nor joins a run; position in the sentence does not matter.
    assert _units("Which Type of Rock") == ["Which", "Type", "of", "Rock"]
    assert _units("Describe Paris briefly") == ["Describe Paris", "briefly"]
    assert _units("In New York. London calls") == ["In", "New York", "London", "calls"]
    # Only inline gaps join: punctuation or a line break separates.
    assert _units("Dana Scully, Fox Mulder") == ["Dana Scully", "Fox Mulder"]
    assert _units("Dana\nScully") == ["Dana", "Scully"]
    assert _units("Dana \t Scully") == ["Dana \t Scully"]
    assert _units("NASA Mars Rover") == ["NASA Mars Rover"]
    assert _units("I Love Lucy") == ["I", "Love Lucy"]


def test_or_phrases():
    assert _units("red or green or blue") == ["red or green or blue"]
    assert _units("bald OR balding") == ["bald OR balding"]
    assert _units("Coke Or Pepsi") == ["Coke Or Pepsi"]
    # Stop-word operands, punctuation, or a missing operand leave "or" alone.
    assert _units("this or that") == ["this", "or", "that"]
    assert _units("more or less") == ["more", "or", "less"]
    assert _units("bald, or balding") == ["bald", "or", "balding"]
    assert _units("or balding") == ["or", "balding"]
    assert _units("bald or") == ["bald", "or"]
    assert _units("bald or balding", merge_phrases=False) == ["bald", "or", "balding"]


def _units(text: str, merge_phrases: bool = True) -> list[str]:
    return [text[s:e] for s, e in unit_spans(text, merge_phrases)]


def test_word_rules():
    assert words("X-Files well-known don't Earth’s snake_case") == [
        "X-Files", "well-known", "don't", "Earth’s", "snake_case",
    ]
    assert words("3.5 1,000 -5 50% v1.2 e.g. 1990–2000") == [
        "3.5", "1,000", "5", "50", "v1.2", "e", "g", "1990", "2000",
    ]
    assert words("students' 'quoted' a--b end-") == ["students", "quoted", "a", "b", "end"]
    assert words("cafe\u0301 naïve 東京 ...!?") == ["cafe\u0301", "naïve", "東京"]


def test_all_vs_content_and_stopwords():
    item = instruction("Don’t stop the music", "It is what it is.")
    assert texts(select_variables(item, "all")) == [
        "Don’t", "stop", "the", "music", "It", "is", "what", "it", "is",
    ]
    assert texts(select_variables(item)) == ["stop", "music"]
    assert is_stopword("THE") and is_stopword("Don’t") and not is_stopword("music")


def test_skip_reasons_and_errors():
    with pytest.raises(Skip) as e:
        select_variables(instruction("It is what it is.", "   ...  "))
    assert (e.value.code, e.value.reason, e.value.n_units) == ("none", "no variables", 0)
    with pytest.raises(Skip, match=r"^more than 2 variables \(3\)$") as e:
        select_variables(instruction("alpha beta gamma"), n_max=2, reduce="skip")
    assert (e.value.code, e.value.n_units) == ("too_many", 3)
    assert len(select_variables(instruction("alpha beta gamma"), n_max=3)) == 3
    with pytest.raises(ValueError, match="all, content"):
        select_variables(instruction("alpha"), "occlusion")
    with pytest.raises(ValueError, match="question"):
        select_variables(instruction("alpha"), fields=["question"])
    with pytest.raises(ValueError):
        select_variables(instruction("alpha"), n_max=0)
    with pytest.raises(ValueError, match="longest, skip, occlusion"):
        select_variables(instruction("alpha"), reduce="shortest")
    with pytest.raises(ValueError, match="occlusion scores"):  # the rule needs a ranker
        select(instruction("alpha beta gamma"), n_max=2, reduce="occlusion")


def test_shipped_stopword_file():
    lines = (NLTK_DATA_DIR / "corpora" / "stopwords" / "english").read_text().split()
    assert len(lines) == 179 and {"the", "don't", "or", "i"} <= set(lines)


def _run(code: str, nltk_data: str, tmp_path) -> dict:
    env = os.environ | {"NLTK_DATA": nltk_data, "HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env, capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout)


def test_stopwords_load_from_shipped_data_alone(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    got = _run(
        """
        import json, nltk
        # Keep only NLTK_DATA (an empty folder): no system-wide nltk_data can interfere.
        nltk.data.path[:] = nltk.data.path[:1]
        from ips.prompts.variables import stopwords
        words = sorted(stopwords())
        print(json.dumps({"path": nltk.data.path, "words": words,
                          "found": str(nltk.data.find("corpora/stopwords/english"))}))
        """,
        str(empty),
        tmp_path,
    )
    shipped = NLTK_DATA_DIR / "corpora" / "stopwords" / "english"
    assert got["path"] == [str(empty), str(NLTK_DATA_DIR)]  # appended, after NLTK_DATA
    assert got["found"] == str(shipped)
    assert got["words"] == sorted(shipped.read_text().split()) == sorted(stopwords())


def test_installed_nltk_data_wins(tmp_path):
    corpus = tmp_path / "mine" / "corpora" / "stopwords"
    corpus.mkdir(parents=True)
    (corpus / "english").write_text("alpha\n")
    got = _run(
        """
        import json
        from ips.prompts.items import InstructionItem
        from ips.prompts.variables import select_variables, stopwords
        item = InstructionItem("i", "alpha beta the", "", "", "")
        print(json.dumps({"words": sorted(stopwords()),
                          "vars": [v.text for v in select_variables(item)]}))
        """,
        str(tmp_path / "mine"),
        tmp_path,
    )
    assert got == {"words": ["alpha"], "vars": ["beta", "the"]}


def test_deterministic_across_processes():
    item = instruction(XFILES, "Dana Scully or Fox Mulder")
    code = f"""
        import json
        from ips.prompts.items import InstructionItem
        from ips.prompts.variables import select_variables
        item = InstructionItem(*{[item.id, item.instruction, item.context, "", ""]!r})
        print(json.dumps([list(v.__dict__.values()) for v in select_variables(item, n_max=50)]))
        """
    other = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=os.environ | {"PYTHONHASHSEED": "12345"},
        capture_output=True, text=True, check=True,
    ).stdout
    here = select_variables(item, n_max=50)
    assert here == select_variables(item, n_max=50)
    assert json.loads(other) == [list(v.__dict__.values()) for v in here]
    assert (here[-1].field, here[-1].text) == ("context", "Dana Scully or Fox Mulder")


_PIECES = st.sampled_from(
    [" ", "  ", "\t", "\n", "-", "--", "'", "’", ".", ",", "_", "or", " or ", "OR", "The", "the",
     "X", "Files", "don't", "3", "3.5", "é", "\u0301", "東", "ß", "İ", "!?", "%", "(", ")"]
)
_TEXT = st.lists(_PIECES | st.text(max_size=4), max_size=25).map("".join)


@settings(max_examples=300, deadline=None)
@given(question=_TEXT, choices=st.lists(_TEXT, min_size=1, max_size=4), merge=st.booleans())
def test_spans_are_exact(question, choices, merge):
    item = MCQItem("h", question, tuple(choices), 0)
    fields = item.fields()
    units = {}
    for strategy in ("all", "content"):
        try:
            units[strategy] = select_variables(item, strategy, n_max=10**6, merge_phrases=merge)
        except Skip as e:
            assert e.code == "none"
            units[strategy] = []
    for v in units["all"]:
        assert fields[v.field][v.start : v.end] == v.text
        assert v.text[0].isalnum()
    # content = all minus stop words (merging does not depend on the strategy)
    assert units["content"] == [v for v in units["all"] if not is_stopword(v.text)]
    rank = {name: k for k, name in enumerate(fields)}
    for name, text in fields.items():
        spans = [(v.start, v.end) for v in units["all"] if v.field == name]
        assert all(e0 < s1 for (_, e0), (s1, _) in zip(spans, spans[1:]))  # ordered, disjoint
        covered = {i for s, e in spans for i in range(s, e)}
        # every letter or digit is inside some variable; only punctuation etc. is background
        assert all(i in covered for i, c in enumerate(text) if c.isalnum())
    ranks = [rank[v.field] for v in units["all"]]
    assert ranks == sorted(ranks)


# ---------------------------------------------------------------- reduction to n_max


def test_longest_keeps_longest_units_in_order():
    # characters per unit (a merged phrase counts its whole span): Identify 8, following 9,
    # list 4, characters 10, X-Files 7, bald or balding 15, Walter Skinner 14, John Fitzgerald
    # Byers 21, Dana Scully 11, Melvin Frohike 14, Darius Michaud 14, Peter Watts 11,
    # Conrad Strughold 16, Queequeg 8. The 10 longest drop Identify, list, X-Files, Queequeg.
    got, red = select(instruction(XFILES))  # defaults: n_max=10, reduce="longest"
    assert texts(got) == [
        "following", "characters", "bald or balding", "Walter Skinner", "John Fitzgerald Byers",
        "Dana Scully", "Melvin Frohike", "Darius Michaud", "Peter Watts", "Conrad Strughold",
    ]
    assert got == select_variables(instruction(XFILES))
    assert red == Reduction("longest", 14, True, tuple(select_units(instruction(XFILES))))
    # the 11th place is a tie of Identify and Queequeg (8 characters): the earlier one wins
    assert texts(select_variables(instruction(XFILES), n_max=11))[0] == "Identify"
    assert "Queequeg" not in texts(select_variables(instruction(XFILES), n_max=11))
    # without phrase merging the words compete one by one: characters and Fitzgerald (10),
    # then following and Strughold (9) tie and the earlier, following, wins
    words_only = texts(select_variables(instruction(XFILES), n_max=3, merge_phrases=False))
    assert words_only == ["following", "characters", "Fitzgerald"]


def test_longest_ties_and_fields():
    # all units have 4 characters: the first n_max in field-then-position order are kept
    item = MCQItem("m", "abcd efgh", ("ijkl", "mnop", "qrst", "uvwx"), 0)
    assert texts(select_variables(item, n_max=3)) == ["abcd", "efgh", "ijkl"]
    # a longer option unit beats question units; the kept ones stay in field order
    item = MCQItem("m", "abcd efgh", ("ijkl", "mnop", "quartz", "uvwx"), 0)
    got = select_variables(item, n_max=3)
    assert [(v.field, v.text) for v in got] == [
        ("question", "abcd"), ("question", "efgh"), ("choice_2", "quartz")]


def test_at_most_n_max_units_are_unchanged():
    item = instruction("alpha beta gamma")
    for rule in ("longest", "skip", "occlusion"):
        got, red = select(item, n_max=3, reduce=rule, occlusion=_never)
        assert texts(got) == ["alpha", "beta", "gamma"]
        assert red == Reduction(rule, 3, False)
    with pytest.raises(Skip, match="no variables"):
        select(instruction("it is"), reduce="longest")


def test_occlusion_keeps_highest_scores():
    item = instruction("alpha beta gamma delta")
    seen = []

    def scores(units):
        seen.append(texts(units))
        return [0.5, 2.0, 0.5, 1.0]

    got, red = select(item, n_max=3, reduce="occlusion", occlusion=scores)
    assert seen == [["alpha", "beta", "gamma", "delta"]]  # ranked over every unit, once
    assert texts(got) == ["alpha", "beta", "delta"]  # 0.5 tie: alpha (earlier) over gamma
    assert red.rule == "occlusion" and red.n_units == 4 and red.reduced
    assert red.scores == (0.5, 2.0, 0.5, 1.0) and texts(list(red.units)) == seen[0]


def _never(units):
    raise AssertionError("occlusion scores asked for an item within n_max")


@given(
    st.lists(st.text("abcdefgh", min_size=1, max_size=6), min_size=1, max_size=12),
    st.integers(1, 12),
)
@settings(max_examples=60, deadline=None)
def test_longest_is_a_stable_top_k(tokens, n_max):
    # brute force: the rule is "sort by (−length, position), take n_max, restore order"
    item = instruction(" ".join(tokens))
    units = select_units(item, "all", merge_phrases=False)
    got = select_variables(item, "all", n_max=n_max, merge_phrases=False)
    ranked = sorted(range(len(units)), key=lambda i: (-len(units[i].text), i))
    assert got == [units[i] for i in sorted(ranked[:n_max])]
    assert len(got) == min(n_max, len(units))
    # no dropped unit is longer than a kept one
    dropped = [u for u in units if u not in got]
    assert all(len(d.text) <= min(len(k.text) for k in got) for d in dropped)
