"""ips.prompts.samples: reduction of long items to n_max (longest, skip, occlusion), its record in
the samples file, the log counts, and `ips samples` with a reference model."""

import json
import logging
from pathlib import Path

import numpy as np
import pytest
import yaml
from transformers import AutoTokenizer

from ips.cli.main import main
from ips.config import ConfigError, dataset_settings, validate
from ips.errors import InputError
from ips.models.testing import TINY_ATTRS
from ips.prompts.samples import load_samples, prepare_samples, save_samples
from ips.prompts.templates import load_templates, render
from ips.prompts.variables import Reduction, select_units
from ips.scoring.engine import Engine, letter_tokens
from ips.scoring.log_odds import token_owners
from ips.scoring.occlusion import Occlusion

# content units (question, then options): 4, 5, 7, 4, 8 and none
RECORDS = [
    {"id": "a", "question": "Which?", "choices": ["sky", "grass", "snow", "blood"], "gold": 3},
    {"id": "b", "question": "Which is red?", "choices": ["sky", "grass", "snow", "blood"],
     "gold": 3},
    {"id": "c", "question": "Which animal lays eggs?",
     "choices": ["chickens", "dogs", "frogs", "turtles"], "gold": 0},
    {"id": "d", "question": "Which is it?", "choices": ["one", "two", "three", "four"], "gold": 1},
    {"id": "e", "question": "What do plants need to make food?",
     "choices": ["water", "sunlight", "soil", "air"], "gold": 1},
    {"id": "f", "question": "Which?", "choices": ["it", "is", "the", "a"], "gold": 0},
]
N_UNITS = {"a": 4, "b": 5, "c": 7, "d": 4, "e": 8}


def settings_for(tmp_path, **variables):
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    config = validate({
        "n_max": 4,
        "n_items": 10,  # more than there are: every item is considered
        "templates": {"mcq": ["T1", "T2"]},
        "few_shot": {"templates": [], "shots": []},
        "variables": {"merge_phrases": False, **variables},
        "models": {"tiny": {"source": {"path": "unused"}, **TINY_ATTRS}},
        "datasets": {"mine": {"format": "mcq", "source": str(data)}},
    })
    return dataset_settings(config, "mine")


def test_longest_draws_items_that_skip_leaves_out(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="ips.prompts.samples")
    skip = prepare_samples(settings_for(tmp_path, reduce="skip"))
    assert sorted(s.item.id for s in skip.samples) == ["a", "d"]
    assert skip.skipped == {"more than 4 variables": 3, "no variables": 1}
    assert "2 kept all their units, 0 reduced to n_max = 4 (skip); skipped: " in caplog.text

    caplog.clear()
    settings = settings_for(tmp_path)  # the default rule
    assert settings["variables"]["reduce"] == "longest"
    assert "reference_model" not in settings["variables"]  # only occlusion depends on it
    ss = prepare_samples(settings)
    assert sorted(s.item.id for s in ss.samples) == ["a", "b", "c", "d", "e"]
    assert ss.skipped == {"no variables": 1} and ss.n_considered == 6
    assert ("mine: 5 items drawn of 6 considered: 2 kept all their units, 3 reduced to "
            "n_max = 4 (longest); skipped: no variables: 1; 2 conditions") in caplog.text
    for s in ss.samples:
        units = select_units(s.item, "content", merge_phrases=False)
        assert s.reduction.n_units == len(units) == N_UNITS[s.item.id]
        assert s.reduction.rule == "longest" and s.reduction.reduced == (len(units) > 4)
        assert s.reduction.units == (tuple(units) if len(units) > 4 else ())
        assert len(s.variables) == min(4, len(units))
        for prompt in s.prompts.values():  # every prompt marks exactly the kept variables
            assert [prompt.text[a:b] for a, b in prompt.spans] == [v.text for v in s.variables]
    c = next(s for s in ss.samples if s.item.id == "c")
    # animal 6, lays 4, eggs 4, chickens 8, dogs 4, frogs 5, turtles 7: the ties at 4 go to
    # the earlier unit (animal, chickens, turtles, frogs are the longest four anyway)
    assert [v.text for v in c.variables] == ["animal", "chickens", "frogs", "turtles"]


def test_samples_file_round_trip(tmp_path):
    ss = prepare_samples(settings_for(tmp_path))
    ss.samples[0].reduction = Reduction(  # occlusion fields too
        "occlusion", 6, True, tuple(ss.samples[2].variables) * 2, (0.5, 1, 2, 3, 4, 5), "ref")
    path = tmp_path / "samples.json"
    save_samples(ss, path)
    back = load_samples(path)
    assert back == ss
    assert back.settings["variables"]["reduce"] == "longest"
    doc = json.loads(path.read_text())
    assert doc["samples"][0]["reduction"]["reference_model"] == "ref"
    assert {"n_units", "reduced", "rule", "units", "scores"} <= set(doc["samples"][1]["reduction"])


def test_occlusion_needs_a_reference_model(tmp_path):
    base = {"variables": {"reduce": "occlusion"}, "models": {"tiny": TINY_ATTRS | {"source": {"path": "x"}}}}
    with pytest.raises(ConfigError, match=r"^config: variables.reference_model: required when "):
        validate(json.loads(json.dumps(base)))
    bad = json.loads(json.dumps(base))
    bad["variables"]["reference_model"] = "huge"
    with pytest.raises(ConfigError, match=r"variables.reference_model: 'huge' is not under models "
                                          r"\(configured: tiny\)$"):
        validate(bad)
    with pytest.raises(InputError, match="variables.reduce is occlusion"):
        prepare_samples(settings_for(tmp_path, reduce="occlusion", reference_model="tiny"))


def test_occlusion_ranks_units_by_the_reference_model(tmp_path, llama, tiny_llama_dir):
    settings = settings_for(tmp_path, reduce="occlusion", reference_model="tiny")
    assert settings["variables"]["reference_model"] == "tiny"
    loads = []
    ranker = Occlusion("tiny", lambda: loads.append(1) or llama)
    ss = prepare_samples(settings, ranker)
    assert len(loads) == 1 and len(ss.samples) == 5

    # ground truth: v of all 2**n masks by the plain engine (bit masks), from the tokenizer
    tok = AutoTokenizer.from_pretrained(tiny_llama_dir)
    engine = Engine(llama.model, llama.mask_token_id, scorer="plain")
    t1 = load_templates()["T1"]
    for s in ss.samples:
        red = s.reduction
        if not red.reduced:
            assert red == Reduction("occlusion", len(s.variables), False)
            continue
        n = red.n_units
        prompt = render(t1, s.item, list(red.units))
        enc = tok(prompt.text, return_offsets_mapping=True)
        ids = np.asarray(enc["input_ids"], dtype=np.int64)
        owners = token_owners(enc["offset_mapping"], prompt.spans)
        letters, _ = letter_tokens(tok, prompt.cue, "ABCD")
        v = engine.values(ids, owners, n, [letters[s.item.gold]])
        full = (1 << n) - 1
        expect = [abs(v[full] - v[full ^ (1 << i)]) for i in range(n)]
        # float32 forwards in other batch compositions agree to ~1e-7
        assert red.scores == pytest.approx(expect, rel=0, abs=1e-6)
        assert red.reference_model == "tiny" and red.rule == "occlusion"
        top = sorted(sorted(range(n), key=lambda i: (-expect[i], i))[:4])
        assert s.variables == [red.units[i] for i in top]
        assert max(expect) > 0  # the random model reacts to masking, so the ranking means something

    # `ips samples` with the reference model's entry gives the same file
    out = tmp_path / "cli.json"
    entry = {"source": {"path": str(tiny_llama_dir)}, **TINY_ATTRS}
    code = main(["samples", "--settings", json.dumps(settings), "--reference-entry",
                 json.dumps(entry), "--cache-dir", str(tmp_path / "cache"), "--threads", "1",
                 "--out", str(out)])
    assert code == 0
    cli = load_samples(out)
    assert [s.variables for s in cli.samples] == [s.variables for s in ss.samples]
    for a, b in zip(cli.samples, ss.samples):
        assert a.reduction.scores == pytest.approx(b.reduction.scores, rel=0, abs=1e-6)


def test_cli_occlusion_without_entry_is_one_line(tmp_path, capsys):
    settings = settings_for(tmp_path, reduce="occlusion", reference_model="tiny")
    code = main(["samples", "--settings", json.dumps(settings), "--out", str(tmp_path / "o.json")])
    err = capsys.readouterr().err
    assert code == 2 and "give the entry of 'tiny' (--reference-entry JSON)" in err
    assert len(err.strip().splitlines()) == 1


def test_bundled_arc_challenge_items_are_no_longer_skipped():
    # question + options at n_max 8: only 4 of the 295 bundled items have at most 8 units
    def draw(rule):
        config = validate({
            "n_max": 8, "n_items": 5, "templates": {"mcq": ["T1", "T2"]},
            "few_shot": {"templates": [], "shots": []}, "variables": {"reduce": rule},
            "datasets": {"arc": {"format": "arc", "subset": "ARC-Challenge"}},
        })
        return prepare_samples(dataset_settings(config, "arc"))

    skip, longest = draw("skip"), draw("longest")
    assert len(skip.samples) == 4 and skip.n_considered == 295
    assert skip.skipped["more than 8 variables"] == 291
    assert len(longest.samples) == 5 and longest.n_considered == 5
    assert "more than 8 variables" not in longest.skipped
    reduced = [s for s in longest.samples if s.reduction.reduced]
    assert reduced and all(len(s.variables) == 8 < s.reduction.n_units for s in reduced)
    assert {s.item.id for s in reduced}.isdisjoint(s.item.id for s in skip.samples)


def a1(instruction: str, context: str = "") -> str:
    """Template A1 written out by hand from src/ips/data/templates.yaml."""
    if context:
        return ("Below is an instruction that describes a task, paired with an input that "
                "provides further context. Write a response that appropriately completes the "
                f"request.\n\n### Instruction:\n{instruction}\n\n### Input:\n{context}\n\n"
                "### Response:\n")
    return ("Below is an instruction that describes a task. Write a response that "
            f"appropriately completes the request.\n\n### Instruction:\n{instruction}\n\n"
            "### Response:\n")


def test_a_reworded_prompt_with_examples_rewords_the_query_only(tmp_path):
    """`perturbations.shots: [1]`: A1-paraphrase-1shot is A1-1shot's example, unreworded,
    then the reworded query with its variables where the rewording put them; an item the
    perturbation file does not reword lacks both reworded conditions and keeps A1-1shot."""
    shipped = yaml.safe_load((Path(__file__).parents[2] / "src/ips/data/dolly_perturbations.yaml")
                             .read_text(encoding="utf-8"))
    keep = [f"dolly-{i:03d}" for i in range(0, 20, 2)]
    file = tmp_path / "rewordings.yaml"
    file.write_text(yaml.safe_dump({k: shipped[k] for k in keep}))
    config = validate({
        "n_max": 4, "n_items": 8, "seed": 1,
        "templates": {"instruction": ["A1", "A2"]},
        "few_shot": {"templates": [], "shots": [1]},
        "perturbations": {"names": ["paraphrase"], "file": str(file), "shots": [1]},
        "datasets": {"dolly": {"format": "dolly", "fields": ["instruction"]}},
    })
    ss = prepare_samples(dataset_settings(config, "dolly"))
    assert ss.groups == {"0shot": ["A1", "A2"], "perturbation": ["A1", "A1-paraphrase"],
                         "perturbation-1shot": ["A1-1shot", "A1-paraphrase-1shot"]}
    (shot,) = ss.shots
    example = a1(shot.instruction, shot.context) + shot.response + "\n\n"
    assert shipped[shot.id]["paraphrase"]["instruction"] not in example  # as the dataset has it
    with_it = [s for s in ss.samples if s.item.id in keep]
    assert 0 < len(with_it) < len(ss.samples)
    for s in ss.samples:
        assert s.prompts["A1-1shot"].text == example + a1(s.item.instruction, s.item.context)
        if s.item.id not in keep:
            assert not {"A1-paraphrase", "A1-paraphrase-1shot"} & set(s.prompts)
            continue
        p = shipped[s.item.id]["paraphrase"]
        prompt = s.prompts["A1-paraphrase-1shot"]
        assert prompt.text == example + a1(p["instruction"], s.item.context)
        assert prompt.text.removeprefix(example) == s.prompts["A1-paraphrase"].text
        moved = [p.get("variables", {}).get(v.text, v.text) for v in s.variables]
        assert [prompt.text[a:b] for a, b in prompt.spans] == moved
        assert min(a for a, _ in prompt.spans) >= len(example)  # in the query, never the example
    assert ss.perturbed() == {"A1-paraphrase": len(with_it), "A1-paraphrase-1shot": len(with_it)}


def few_shot_settings(tmp_path, shots, n_items=10, **entry):
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in RECORDS[:3]))
    config = validate({
        "n_max": 8, "n_items": n_items,
        "templates": {"mcq": ["T1", "T2"]}, "few_shot": {"templates": ["T1"], "shots": shots},
        "models": {"tiny": {"source": {"path": "unused"}, **TINY_ATTRS}},
        "datasets": {"mine": {"format": "mcq", "source": str(data), **entry}},
    })
    return dataset_settings(config, "mine")


def test_examples_taken_from_the_items_are_counted_and_advised(tmp_path, caplog):
    """Three items and one shot: one item becomes the example, two are evaluated; the log,
    the samples file and the short-of-n_items warning say so, and advise a few-shot split,
    not n_max (no item had too many variables)."""
    caplog.set_level(logging.INFO, logger="ips.prompts.samples")
    ss = prepare_samples(few_shot_settings(tmp_path, [1]))
    assert len(ss.samples) == 2 and len(ss.shots) == 1 and ss.shots_from == "items"
    assert {s.item.id for s in ss.samples} | {ss.shots[0].id} == {"a", "b", "c"}
    assert "; 1 few-shot examples of its own items, never evaluated;" in caplog.text
    warning = next(r.getMessage() for r in caplog.records if r.levelname == "WARNING")
    assert warning.endswith("lower n_items, or add items, or give it a few-shot split "
                            "(datasets.mine.shot_split) so that its 1 examples come from "
                            "elsewhere")
    assert "n_max" not in warning
    save_samples(ss, tmp_path / "s.json")
    assert json.loads((tmp_path / "s.json").read_text())["shots_from"] == "items"
    assert load_samples(tmp_path / "s.json").shots_from == "items"

    caplog.clear()
    enough = prepare_samples(few_shot_settings(tmp_path, [1], n_items=2))
    assert len(enough.samples) == 2 and not any(r.levelname == "WARNING" for r in caplog.records)


def test_examples_that_would_take_every_item_stop_in_one_line(tmp_path):
    with pytest.raises(InputError) as e:
        prepare_samples(few_shot_settings(tmp_path, [1, 3]))
    assert str(e.value) == (
        "dataset 'mine': 3 few-shot examples (few_shot.shots) would take all of its 3 items, "
        "leaving none to evaluate: lower few_shot.shots, or give it a few-shot split "
        "(datasets.mine.shot_split)")
