"""`ips explain`: the case study of one item under a template pair (ips.explain).

Ground truth: hand-computed U, types, order and ips on small normalised arrays, and, on a
tiny random Llama, an independent pipeline (plain Engine → and_or → normalize →
pair_sensitivity) that the printed IPS must equal.
"""

import json
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

from ips.analysis import interaction_types, layout, metrics
from ips.analysis.case_study import CaseStudy, case_study
from ips.cli.main import build_parser
from ips.config import DEFAULT_MODEL, DEFAULT_MODEL_ENTRY
from ips.errors import InputError
from ips.explain.inputs import ExplainError
from ips.explain.run import format_case
from ips.figures.plots.case_study import case_study_figure, case_title
from ips.interactions.design import design
from ips.prompts.items import MCQItem

NAN = np.nan
ROOT = Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------ case_study on hand-built arrays

# n = 2 variables ("cat" bit 0, "sat" bit 1); masks 1 = {cat}, 2 = {sat}, 3 = {cat, sat}
A = np.array([[NAN, 0.8, -0.05, 0.3],   # AND
              [NAN, 0.0, 0.5, -1.0]])   # OR
B = np.array([[NAN, -0.4, 0.02, 0.25],
              [NAN, 0.0, 0.1, -1.0]])


def test_case_study_hand_computed():
    c = case_study(A, B, ["cat", "sat"], "A", "B", 0.1, model="m", sample="s1",
                   templates=("T1", "T4"), gold="A")
    assert isinstance(c, CaseStudy)
    # U at τ = 0.1: AND{cat} (0.8 | 0.4), AND{cat,sat} (0.3 | 0.25), OR{sat} (0.5 | 0.1, salient
    # under T only: 0.1 is not > 0.1), OR{cat,sat} (1 | 1); AND{sat} (0.05, 0.02) and OR{cat}
    # (0, 0) are not salient. Sorted by |Ĩ_T − Ĩ_T̂|: 1.2, 0.4, 0.05, 0.
    got = [(r.kind, r.mask, r.words, r.type) for r in c.rows]
    assert got == [
        ("AND", 1, "cat", "opposite_sign"),
        ("OR", 2, "sat", "same_sign_different_effect"),  # 0.5 / 0.1 = 5 > 2
        ("AND", 3, "cat ∧ sat", "same_sign_similar_effect"),  # 0.3 / 0.25 = 1.2
        ("OR", 3, "cat ∨ sat", "same_sign_similar_effect"),
    ]
    assert [r.change for r in c.rows] == pytest.approx([1.2, 0.4, 0.05, 0.0])
    assert [(r.value_a, r.value_b) for r in c.rows] == [(0.8, -0.4), (0.5, 0.1), (0.3, 0.25),
                                                         (-1.0, -1.0)]
    # terms |a − b| / ((|a| + |b|)/2): 2, 4/3, 2/11, 0 → mean 29/33
    assert c.ips == pytest.approx(29 / 33, abs=1e-12)
    assert c.n_union == 4
    assert c.type_counts == {"opposite_sign": 1, "same_sign_different_effect": 1,
                             "same_sign_similar_effect": 2}
    assert (c.model, c.sample, c.templates, c.gold, c.tau) == ("m", "s1", ("T1", "T4"), "A", 0.1)
    assert (c.pred_a, c.pred_b, c.prediction_changed) == ("A", "B", True)
    assert c.rows[0]["change"] == c.rows[0].change and c.rows[2].order == 2


def test_case_study_agrees_with_metrics_and_other_tau():
    # at τ = 0.35: U = {AND{cat} (0.8), OR{sat} (0.5), OR{cat,sat}}; terms 2, 4/3, 0
    c = case_study(A, B, ["cat", "sat"], "A", "A", 0.35)
    assert [(r.kind, r.mask) for r in c.rows] == [("AND", 1), ("OR", 2), ("OR", 3)]
    assert c.ips == pytest.approx((2 + 4 / 3 + 0) / 3, abs=1e-12)
    assert c.ips == pytest.approx(float(metrics.pair_sensitivity(A, B, 0.35).value))
    assert not c.prediction_changed and c.gold is None


def test_case_study_zero_side_and_ties():
    # zero on one side counts as same sign & different effect (ips.analysis.metrics convention);
    # equal changes are ordered by |S|, then AND before OR, then mask
    a = np.array([[NAN, 0.5, 0.0, 0.2], [NAN, 0.0, 0.2, 1.0]])
    b = np.array([[NAN, 0.0, 0.5, 0.0], [NAN, 0.5, 0.0, 1.0]])
    c = case_study(a, b, ["x", "y"], "A", "A", 0.1)
    # changes: 0.5 for AND{x}, AND{y}, OR{x}; 0.2 for OR{y} (|S| 1) and AND{x,y} (|S| 2); 0
    assert [(r.kind, r.mask) for r in c.rows] == [("AND", 1), ("AND", 2), ("OR", 1),
                                                   ("OR", 2), ("AND", 3), ("OR", 3)]
    assert {r.type for r in c.rows[:5]} == {"same_sign_different_effect"}
    assert c.rows[5].type == "same_sign_similar_effect"
    # every term is 2 except OR{x,y} (0): ips = 10/6
    assert c.ips == pytest.approx(10 / 6)


def test_case_study_padded_rows_and_normalize_output():
    rng = np.random.default_rng(3)
    and_, or_ = rng.normal(size=(2, 8)), rng.normal(size=(2, 8))
    norm = metrics.normalize(and_, or_)  # (template, kind, mask), n = 3
    words = ["a", "b", "c"]
    c = case_study(norm[0], norm[1], words, "A", "C", 0.2)
    assert c.ips == pytest.approx(float(metrics.pair_sensitivity(norm[0], norm[1], 0.2).value))
    assert len(c.rows) == int(metrics.pair_sensitivity(norm[0], norm[1], 0.2).n_union)
    counts = interaction_types.interaction_types(norm[0], norm[1], 0.2)
    assert [sum(r.type == t for r in c.rows) for t in interaction_types.INTERACTION_TYPES] == counts.tolist()
    changes = [r.change for r in c.rows]
    assert changes == sorted(changes, reverse=True)
    # the same sample NaN-padded to n_max = 4 gives the same case
    pad = np.full((2, 2, 16), NAN)
    pad[..., :8] = norm
    p = case_study(pad[0], pad[1], words, "A", "C", 0.2)
    assert p.ips == c.ips
    assert [(r.kind, r.mask) for r in p.rows] == [(r.kind, r.mask) for r in c.rows]


def test_case_study_empty_union():
    a = np.array([[NAN, 0.05, -0.1, 0.0], [NAN, 0.0, 0.02, 0.1]])
    c = case_study(a, a * 0.5, ["x", "y"], "B", "B", 0.1)
    assert c.rows == [] and c.n_union == 0 and math.isnan(c.ips)
    assert "no value" in format_case(c)
    assert c.to_dict()["ips"] is None


@pytest.mark.parametrize(
    "a, b, words, message",
    [
        (A, B, ["cat"], "words: 1 given"),
        (A[None], B[None], ["cat", "sat"], "shape"),
        (A, B[:, :2], ["cat", "sat"], "same shape"),
        (A * 2, B, ["cat", "sat"], "normalised"),
    ],
)
def test_case_study_rejects_bad_input(a, b, words, message):
    with pytest.raises(ValueError, match=message):
        case_study(a, b, words, "A", "B", 0.1)


def test_format_case_table():
    c = case_study(A, B, ["cat", "sat"], "A", "B", 0.1, model="m", sample="s1",
                   templates=("T1", "T4"), gold="A")
    text = format_case(c, top=2)
    assert "ips(x, T1, T4) = 0.8788 at τ = 0.1" in text
    assert "T1: A   T4: B   (prediction changed, gold A)" in text
    table = text.split("\n\n")[1].splitlines()
    assert "Ĩ[T1]" in table[0] and "Ĩ[T4]" in table[0]
    assert table[1].split()[:7] == ["1", "AND", "cat", "+0.8000", "-0.4000", "1.2000", "opposite"]
    assert table[2].split()[:3] == ["2", "OR", "sat"]
    assert table[3] == "... 2 more (--top 0 lists all)"
    assert len(format_case(c, top=0).split("\n\n")[1].splitlines()) == 5


# ------------------------------------------------------------------ figure


def test_case_study_figure_files(tmp_path):
    c = case_study(A, B, ["cat", "sat"], "A", "B", 0.1, model="m", sample="s1",
                   templates=("T1", "T4"), gold="A")
    files = case_study_figure(c, tmp_path / "case.png", top=3)
    assert files == [tmp_path / "case.png", tmp_path / "case.pdf"]
    assert all(f.stat().st_size > 1000 for f in files)
    empty = case_study(A * 0.1, B * 0.1, ["cat", "sat"], "A", "A", 0.1)
    files = case_study_figure(empty, tmp_path / "empty.png")
    assert all(f.stat().st_size > 1000 for f in files)


def test_case_study_figure_escapes_a_control_character_prediction(tmp_path):
    """A byte-level model may predict a control byte (found on the miniature's random
    models): the title shows it escaped, so no glyph is missing from the font."""
    c = case_study(A, B, ["cat", "sat"], "\x02", "\x00", 0.1, model="m", sample="s1",
                   templates=("A1", "A4"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        case_study_figure(c, tmp_path / "case.png")
    assert r"prediction \x02" in case_title(c) and r"prediction \x00" in case_title(c)


# ------------------------------------------------------------------ the command on a tiny model

QUESTION = "Which tool measures the mass of a small stone?"
CHOICES = ["a balance", "a ruler", "a thermometer", "a magnet"]
# 28 content units over question and options: beyond exhaustive scoring
LONG_QUESTION = ("Which of these tools would a careful student most likely use to measure the "
                 "mass of a small smooth stone found near the river bank during a field trip?")
LONG_CHOICES = ["a precise balance scale", "a wooden metre ruler", "a glass thermometer",
                "a strong bar magnet"]
ITEMS = [
    {"id": "q1", "question": QUESTION, "choices": CHOICES, "gold": "A"},
    {"id": "q2", "question": "What do plants need to make food?",
     "choices": ["water", "rocks", "iron", "glass"], "gold": 0},
]


@pytest.fixture
def config(tmp_path, tiny_llama_dir):
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ITEMS))
    cfg = {
        "n_max": 4,
        "scorer": "plain",
        "models": {"tiny": {"source": {"path": str(tiny_llama_dir)}, "family": "tiny",
                            "series": "tiny", "type": "base", "architecture": "dense",
                            "params": 1}},
        "datasets": {"local": {"format": "mcq", "source": str(data), "fields": ["question"]}},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def run_explain(argv):
    """`ips explain ARGV` through the real command line's parser (errors raise)."""
    args = build_parser().parse_args(["explain", *map(str, argv)])
    return args.func(args)


def independent_ips(model_dir, item, templates, fields, tau=0.1):
    """Score with the plain Engine, fit with and_or, normalise: ips(x,T,T̂) and predictions."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ips.interactions import and_or
    from ips.prompts.templates import load_templates, render
    from ips.prompts.variables import select_variables
    from ips.scoring.engine import Engine, letter_tokens
    from ips.scoring.log_odds import token_owners

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    variables = select_variables(item, "content", n_max=8, merge_phrases=True, fields=fields)
    engine = Engine(model, tok.unk_token_id, batch_tokens=1024, scorer="plain")
    tset = load_templates()
    v, preds = [], []
    for t in templates:
        prompt = render(tset[t], item, variables)
        enc = tok(prompt.text, return_offsets_mapping=True)
        ids = np.asarray(enc["input_ids"], dtype=np.int64)
        owners = token_owners(enc["offset_mapping"], prompt.spans)
        letters, _ = letter_tokens(tok, prompt.cue, "ABCD")
        v.append(engine.values(ids, owners, len(variables), [letters[item.gold]]))
        preds.append("ABCD"[int(np.argmax(engine.unmasked(ids, letters).letter_logit))])
    fit = and_or(np.stack(v))
    norm = metrics.normalize(fit.and_, fit.or_)
    res = metrics.pair_sensitivity(norm[0], norm[1], tau)
    union = metrics.salient(norm[0], tau) | metrics.salient(norm[1], tau)
    return float(res.value), preds, [x.text for x in variables], union


def test_explain_question_matches_independent_pipeline(config, tiny_llama_dir, tmp_path, capsys):
    out, js = tmp_path / "fig" / "case.png", tmp_path / "case.json"
    out.parent.mkdir()
    code = run_explain(["--config", config, "--model", "tiny", "--question", QUESTION,
                        "--choices", *CHOICES, "--answer", "a balance", "--fields", "question",
                        "--templates", "T1", "T4", "--threads", 1, "--out", out, "--json", js])
    assert code == 0
    text = capsys.readouterr().out
    expected, preds, words, union = independent_ips(tiny_llama_dir, MCQItem(
        "custom", QUESTION, tuple(CHOICES), 0), ("T1", "T4"), ["question"])
    assert words == ["tool", "measures", "mass", "small", "stone"]
    m = re.search(r"ips\(x, T1, T4\) = ([0-9.]+) at τ = 0\.1, \|U\| = (\d+) of 62", text)
    assert m, text
    assert float(m.group(1)) == pytest.approx(expected, abs=5e-5)
    assert int(m.group(2)) == int(union.sum())
    case = json.loads(js.read_text())
    assert case["ips"] == pytest.approx(expected, abs=1e-9)
    assert (case["pred_a"], case["pred_b"], case["gold"]) == (*preds, "A")
    assert f"T1: {preds[0]}   T4: {preds[1]}" in text
    assert case["words"] == words and case["model"] == "tiny" and case["sample"] == "custom"
    assert {(r["kind"], r["mask"]) for r in case["rows"]} == {
        (layout.KINDS[k], int(s)) for k, s in zip(*np.nonzero(union))}
    for f in (out, out.with_suffix(".pdf")):
        assert f.is_file() and f.stat().st_size > 1000
    assert f"wrote {out}, {out.with_suffix('.pdf')}, {js}" in text


def test_explain_sparse_beyond_16_variables(config, tiny_llama_dir, tmp_path, capsys):
    """--sampling sparse: n = 28 variables from 64 masks per template; the rows and ips are
    those of `sparse_case_study` on estimates made independently from the plain Engine's v
    on the same design, and the output says how reliable the estimate is."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ips.analysis.case_study import sparse_case_study
    from ips.interactions import sparse
    from ips.prompts.templates import load_templates, render
    from ips.prompts.variables import select_variables
    from ips.scoring.engine import Engine, letter_tokens
    from ips.scoring.log_odds import token_owners

    question, choices = LONG_QUESTION, LONG_CHOICES
    js = tmp_path / "case.json"
    code = run_explain(["--config", config, "--model", "tiny", "--question", question,
                        "--choices", *choices, "--answer", "A", "--n-max", 32,
                        "--sampling", "sparse", "--budget", 64, "--threads", 1,
                        "--out", tmp_path / "case.png", "--json", js])
    assert code == 0
    text = capsys.readouterr().out
    case = json.loads(js.read_text())
    item = MCQItem("custom", question, tuple(choices), 0)
    variables = select_variables(item, "content", n_max=32)
    n = len(variables)
    assert n == 28 and case["words"] == [v.text for v in variables]
    tok = AutoTokenizer.from_pretrained(tiny_llama_dir)
    engine = Engine(AutoModelForCausalLM.from_pretrained(tiny_llama_dir).eval(),
                    tok.unk_token_id, batch_tokens=1024, scorer="plain")
    chosen = design(n, 64, seed=0)
    ests = []
    for t in ("T1", "T4"):
        prompt = render(load_templates()[t], item, variables)
        enc = tok(prompt.text, return_offsets_mapping=True)
        owners = token_owners(enc["offset_mapping"], prompt.spans)
        letters, _ = letter_tokens(tok, prompt.cue, "ABCD")
        v = engine.values(np.asarray(enc["input_ids"]), owners, n, [letters[0]], chosen)
        ests.append(sparse.estimate(chosen, v, n))
    expect = sparse_case_study(*ests, case["words"], "A", "A", 0.1)
    assert case["ips"] == pytest.approx(expect.ips, abs=1e-6)
    assert [(r["kind"], r["mask"]) for r in case["rows"]] == [(r.kind, r.mask) for r in expect.rows]
    sp = case["sparse"]
    assert sp["masks"] == 64 and sp["heldout_error"] == pytest.approx(
        [e.heldout_error for e in ests], abs=1e-6)
    assert sp["reliable"] == all(e.reliable for e in ests)
    verdict = "reliable" if sp["reliable"] else "UNRELIABLE"
    assert "estimate  sparse: 64 of 2**28 masks per template" in text and verdict in text


def test_explain_dataset_sample(config, tiny_llama_dir, tmp_path, capsys):
    code = run_explain(["--config", config, "--dataset", "local", "--sample", "q2",
                        "--threads", 1, "--tau", 0.15, "--out", tmp_path / "q2.png"])
    assert code == 0
    text = capsys.readouterr().out
    expected, preds, words, _ = independent_ips(
        tiny_llama_dir, MCQItem("q2", ITEMS[1]["question"], tuple(ITEMS[1]["choices"]), 0),
        ("T1", "T4"), ["question"], tau=0.15)
    assert f"variables (n = {len(words)}): " + ", ".join(
        f"{i}:{w}" for i, w in enumerate(words)) in text
    assert "sample    q2" in text and "gold A" in text
    if math.isnan(expected):
        assert "no value" in text
    else:
        assert f"= {expected:.4f} at τ = 0.15" in text
    assert (tmp_path / "q2.png").stat().st_size > 0 and (tmp_path / "q2.pdf").stat().st_size > 0


def test_a_dataset_item_gets_the_workflows_variables(config, tmp_path, capsys):
    """q1 has 5 question units and the dataset n_max 4: explain keeps the 4 that the
    workflow's samples keep (`ips samples`' code: the longest, variables.reduce), not all 5,
    and a smaller --n-max reduces it too instead of refusing."""
    import ips

    cfg = yaml.safe_load(config.read_text())
    cfg["few_shot"] = {"shots": []}  # two items leave none to spare for examples
    config.write_text(yaml.safe_dump(cfg))
    settings = ips.dataset_settings(ips.load_config(config), "local")
    drawn = {s.item.id: [v.text for v in s.variables]
             for s in ips.prepare_samples(settings).samples}
    assert len(drawn["q1"]) == 4
    for n_max, want in ((None, drawn["q1"]), (2, None)):
        js = tmp_path / f"q1-{n_max}.json"
        run_explain(["--config", config, "--dataset", "local", "--sample", "q1",
                     "--threads", 1, "--out", tmp_path / "q1.png", "--json", js,
                     *(["--n-max", n_max] if n_max else [])])
        words = json.loads(js.read_text())["words"]
        if want is not None:
            assert words == want
        else:  # the two longest of the workflow's four, in the item's order
            longest = sorted(drawn["q1"], key=len, reverse=True)[:2]
            assert words == [w for w in drawn["q1"] if w in longest]


def test_a_dataset_that_skips_long_items_names_its_n_max(config, tmp_path):
    cfg = yaml.safe_load(config.read_text())
    cfg["variables"] = {"reduce": "skip"}
    config.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ExplainError, match=r"at most n_max = 4, the config's n_max for local"):
        run_explain(["--config", config, "--dataset", "local", "--sample", "q1",
                     "--out", tmp_path / "q1.png"])


def test_explain_instruction_item(tmp_path, tiny_llama_dir, capsys):
    data = tmp_path / "dolly.jsonl"
    data.write_text(json.dumps({"id": "d1", "instruction": "Give three reasons to exercise.",
                                "context": "", "response": "It keeps the heart strong.",
                                "category": "brainstorming"}) + "\n")
    cfg = {"models": {"tiny": {"source": {"path": str(tiny_llama_dir)}, "family": "tiny",
                               "series": "tiny", "type": "base", "architecture": "dense",
                               "params": 1}},
           "datasets": {"dolly": {"format": "dolly", "source": str(data)}}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    code = run_explain(["--config", tmp_path / "c.yaml", "--model", "tiny", "--dataset", "dolly",
                        "--sample", "d1", "--threads", 1, "--out", tmp_path / "d.png",
                        "--json", tmp_path / "d.json"])
    assert code == 0
    case = json.loads((tmp_path / "d.json").read_text())
    assert case["templates"] == ["A1", "A4"] and case["gold"] is None
    assert case["words"] == ["Give", "three", "reasons", "exercise"]
    assert "templates A1 vs A4" in capsys.readouterr().out


ITEM = ["--question", QUESTION, "--choices", *CHOICES, "--answer", "A"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--question", QUESTION, "--choices", *CHOICES, "--answer", "E"],
         "--answer: 'E' is not among the choices"),
        (["--question", QUESTION, "--choices", *CHOICES, "--answer", "a rock"],
         "--answer: 'a rock' is not among the choices"),
        (["--question", QUESTION, "--choices", *CHOICES[:3], "--answer", "A"],
         "--choices: give exactly 4 choices"),
        (["--question", QUESTION, "--answer", "A"], "--choices: missing"),
        (["--question", " ", "--choices", *CHOICES, "--answer", "A"], "--question: give a"),
        ([*ITEM, "--templates", "T1", "T9"], "--templates: unknown template 'T9'"),
        ([*ITEM, "--templates", "T1", "T1"], "--templates: give two different"),
        ([*ITEM, "--templates", "T1", "A1"], "--templates: template 'A1' is for instruction"),
        ([*ITEM, "--fields", "answer"], "--fields: unknown fields"),
        ([*ITEM, "--n-max", "2"], "--question: item 'custom' has more than 2 variables"),
        ([*ITEM, "--target", "response"], "--target: 'response' does not apply"),
        ([*ITEM, "--model", "nope"], "--model: no model 'nope'"),
        ([*ITEM, "--model", "no-such-org/no-such-model"],
         "--model: 'no-such-org/no-such-model' is not under 'models' in the config "
         "(configured: tiny) nor in the local Hugging Face cache, and explain downloads "
         "nothing: run `hf download no-such-org/no-such-model` first"),
        (["--dataset", "local", "--sample", "q9"], "--sample: no item 'q9' in dataset 'local'"),
        (["--dataset", "nope", "--sample", "q1"], "--dataset: no dataset 'nope'"),
        (["--sample", "q1"], "--dataset: --sample needs"),
        (["--dataset", "local"], "--sample: --dataset needs"),
        ([*ITEM, "--dataset", "local", "--sample", "q1"], "--sample: give either"),
        ([], "--question: give an item"),
        ([*ITEM, "--budget", "64"], "--budget: applies to --sampling sparse only"),
        (["--question", LONG_QUESTION, "--choices", *LONG_CHOICES, "--answer", "A",
          "--n-max", "32"], "n = 28 variables; scoring all 2**28 masks is beyond exhaustive"),
    ],
)
def test_bad_input_names_the_field(config, tmp_path, args, message):
    with pytest.raises(ExplainError) as e:
        run_explain(["--config", config, "--model", "tiny", *args, "--out", tmp_path / "x.png"])
    assert isinstance(e.value, InputError)  # the CLI reports it in one line, exit code 2
    assert message in str(e.value)
    assert not (tmp_path / "x.png").exists()


def test_entry_needs_a_model_name(tmp_path, tiny_llama_dir):
    entry = json.dumps({"source": {"path": str(tiny_llama_dir)}, "family": "t", "series": "t",
                        "type": "base", "architecture": "dense", "params": 1})
    with pytest.raises(ExplainError, match="--model: --entry needs"):
        run_explain([*ITEM, "--entry", entry, "--out", tmp_path / "x.png"])


def test_default_model_is_the_config_entry():
    cfg = yaml.safe_load((ROOT / "config.yaml").read_text())
    assert cfg["models"][DEFAULT_MODEL] == DEFAULT_MODEL_ENTRY


def test_registered_in_the_ips_cli(capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["explain", "--help"])
    assert e.value.code == 0 and "--templates" in capsys.readouterr().out


def test_a_hub_id_in_the_local_cache_is_a_model_to_explain(tmp_path, monkeypatch,
                                                            tiny_llama_dir):
    """`--model org/name` not in the config: the repository from the local Hugging Face cache,
    its entry the source alone (attributes from the checkpoint when it loads)."""
    from types import SimpleNamespace

    import huggingface_hub.constants

    from builders import hub_cache
    from ips.explain.inputs import choose_spec

    hub_cache(tmp_path / "hub", "ips-tests/tiny", tiny_llama_dir)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    spec = choose_spec(SimpleNamespace(model="ips-tests/tiny", entry=None), {"models": {}})
    assert (spec.source.kind, spec.source.hub) == ("hub", "ips-tests/tiny")
    assert (spec.family, spec.type, spec.params) == ("unknown", "unknown", None)


def test_the_case_returns_its_labelled_interactions(tiny_llama_dir):
    """`explain` returns every subset's effects as `ips export`'s tables: 2 templates × 2^n
    rows, whose normalised values are the case's rows of U."""
    from ips.explain.run import explain
    from ips.models.testing import load_tiny

    case = explain(load_tiny(tiny_llama_dir), MCQItem("custom", QUESTION, tuple(CHOICES), 0),
                   ("T1", "T4"), fields=["question"], scorer="plain")
    t = case.labelled.to_frame()
    assert len(t) == 2 * 2 ** case.n and set(t["condition"]) == {"T1", "T4"}
    for row in case.rows:
        kind = "and" if row.kind == "AND" else "or"
        for template, value in (("T1", row.value_a), ("T4", row.value_b)):
            got = t[(t["condition"] == template) & (t["mask"] == row.mask)][f"{kind}_normalised"]
            assert float(got.iloc[0]) == pytest.approx(value, abs=1e-12)
    assert "labelled" not in case.to_dict()
