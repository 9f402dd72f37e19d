"""Every bad input fails before any work, in one line that names the field, file or dataset.

Each case of CONFIG_CASES is walked through the entry points it reaches: `load_config`,
`ips samples --config`, `ips samples --settings` (the same values as the workflow passes them)
and, for a few, `snakemake -n`. Each must exit 2 (or raise `ConfigError` / `WorkflowError` at
parse time) with a one-line message holding the expected words, and leave no output file.
"""

import copy
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ips.cli.main import main
from ips.config import (
    SETTINGS_KEYS,
    ConfigError,
    check_settings,
    dataset_settings,
    load_config,
    validate,
    validate_settings,
)
from ips.prompts.datasets import SHOW_BAD, load_items
from ips.prompts.items import FORMATS, ITEM_TYPES, DatasetError

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = Path(sys.executable).parent / "snakemake"

RECORDS = [
    {"id": "a", "question": "Which is red?", "choices": ["sky", "grass", "snow", "blood"],
     "gold": 3},
    {"id": "b", "question": "Which animal lays eggs?",
     "choices": ["chickens", "dogs", "frogs", "turtles"], "gold": 0},
    {"id": "c", "question": "What do plants need to make food?",
     "choices": ["water", "sunlight", "soil", "air"], "gold": 1},
]


def write_jsonl(path, records):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                            for r in records))
    return path


def base_config(tmp_path):
    """A valid config whose dataset `mine` is a local file of 3 MCQ items (fast to sample)."""
    data = write_jsonl(tmp_path / "items.jsonl", RECORDS)
    return {
        "n_max": 4,
        "n_items": 3,
        "templates": {"mcq": ["T1", "T2"]},
        "few_shot": {"templates": [], "shots": []},
        "datasets": {"mine": {"format": "mcq", "source": str(data)}},
    }


def set_key(config, dotted, value):
    *parents, last = dotted.split(".")
    for key in parents:
        config = config.setdefault(key, {})
    config[last] = value


MODEL = {"source": {"path": "x"}, "family": "f", "series": "s", "type": "base",
         "architecture": "dense", "params": 1}

# (id, dotted key -> value set on the base config, the dataset sampled, words of the message)
CONFIG_CASES = [
    ("fields-arc", {"datasets.arc": {"format": "arc", "fields": ["choices"]}}, "arc",
     ["datasets.arc.fields", "'arc'", "choices", "question, choice_0, choice_1"]),
    ("fields-dolly", {"datasets.dolly": {"format": "dolly", "fields": ["question"]}}, "dolly",
     ["datasets.dolly.fields", "'dolly'", "question", "allowed: instruction, context"]),
    ("mcq-template-unknown", {"templates.mcq": ["T1", "T9"]}, "mine",
     ["templates.mcq", "'T9'", "mcq templates: T1, T2, T3, T4, T5"]),
    ("mcq-template-of-other-kind", {"templates.mcq": ["T1", "A1"]}, "mine",
     ["templates.mcq", "'A1' is an instruction template", "mcq templates: T1, T2, T3, T4, T5"]),
    ("few-shot-template", {"few_shot.templates": ["T1", "A9"], "few_shot.shots": [1]}, "mine",
     ["few_shot.templates", "'A9' is not in", "mcq/instruction templates: T1", "A4"]),
    ("instruction-template", {"datasets.dolly": {"format": "dolly"},
                              "templates.instruction": ["A1", "T2"]}, "dolly",
     ["templates.instruction", "'T2' is an mcq template", "instruction templates: A1, A2"]),
    ("template-file", {"templates.file": "{tmp}/my-templates.yaml"}, "mine",
     ["templates.file", "my-templates.yaml", "no such template file"]),
    ("missing-source", {"datasets.mine.source": "{tmp}/nowhere/q.jsonl"}, "mine",
     ["datasets.mine.source", "'mine'", "nowhere/q.jsonl does not exist"]),
    ("misspelt-top-level", {"n_itmes": 3}, "mine",
     ["n_itmes: unknown key", "did you mean n_items?"]),
    ("misspelt-entry-key", {"datasets.mine.feilds": ["question"]}, "mine",
     ["datasets.mine.feilds: unknown key", "did you mean fields?"]),
    ("tau", {"tau": 0}, "mine", ["tau: 0", "allowed: 0 < tau < 1"]),
    ("n-max", {"n_max": 33}, "mine", ["n_max: 33", "allowed: 1 <= n_max <= 32"]),
    ("n-max-exhaustive", {"n_max": 17}, "mine",
     ["n_max: 17 needs `sampling: {mode: sparse}`", "n_max <= 16"]),
    ("sampling-budget", {"sampling": {"mode": "sparse", "budget": 4}}, "mine",
     ["sampling.budget: 4", "allowed: sampling.budget >= 16"]),
    ("missing-format", {"datasets.mine.format": None}, "mine",
     ["datasets.mine.format: missing", "allowed: arc, mmlu, mcq, dolly"]),
    # model entries: the schema's $defs/model, as ips.models.entries.ModelSpec.from_config checks
    # them
    ("model-type", {"models.m": MODEL | {"type": "chat"}}, "mine",
     ["models.m.type: 'chat' is not one of", "allowed: base, instruct"]),
    ("model-name", {"models": {"a b": MODEL}}, "mine",
     ["models: 'a b' does not match", "a model name names its cache directory"]),
    ("model-source-key", {"models.m": MODEL | {"source": {"path": "x", "revision": "v"}}}, "mine",
     ["models.m.source: key 'revision' is not allowed here; allowed: path"]),
    ("model-active-params", {"models.m": MODEL | {"params": "1B", "active_params": "2B"}}, "mine",
     ["models.m.active_params: 2000000000 exceeds params (1000000000)"]),
]
# cases that `ips samples --settings` meets too (the others are not dataset settings)
SETTINGS_CASES = {"fields-arc", "fields-dolly", "mcq-template-unknown",
                  "mcq-template-of-other-kind", "few-shot-template", "instruction-template",
                  "template-file", "missing-source", "misspelt-entry-key", "n-max",
                  "missing-format"}


def bad_config(tmp_path, changes):
    config = base_config(tmp_path)
    for key, value in changes.items():
        value = copy.deepcopy(value)
        if isinstance(value, str):
            value = value.format(tmp=tmp_path)
        if value is None:  # a key to remove
            *parents, last = key.split(".")
            node = config
            for k in parents:
                node = node[k]
            del node[last]
        else:
            set_key(config, key, value)
    return config


def one_line(text: str) -> str:
    lines = text.strip().splitlines()
    assert len(lines) == 1, text
    return lines[0]


def assert_names(message: str, words):
    for word in words:
        assert word in message, (word, message)


@pytest.mark.parametrize("changes, dataset, words",
                         [c[1:] for c in CONFIG_CASES], ids=[c[0] for c in CONFIG_CASES])
def test_bad_config_fails_in_one_line(tmp_path, capsys, changes, dataset, words):
    config = bad_config(tmp_path, changes)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))

    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert_names(one_line(str(e.value)), [str(path), *words])

    out = tmp_path / "samples.json"
    code = main(["samples", "--config", str(path), "--dataset", dataset, "--out", str(out)])
    err = one_line(capsys.readouterr().err)
    assert code == 2 and err.startswith("ips samples: error: ")
    assert_names(err, words)
    assert not out.exists()


def good_settings(tmp_path):
    config = validate(base_config(tmp_path))
    return dataset_settings(config, "mine")


@pytest.mark.parametrize("changes, dataset, words",
                         [c[1:] for c in CONFIG_CASES if c[0] in SETTINGS_CASES],
                         ids=[c[0] for c in CONFIG_CASES if c[0] in SETTINGS_CASES])
def test_bad_settings_fail_in_one_line(tmp_path, capsys, changes, dataset, words):
    # what the workflow would pass for this dataset had its config not been validated
    config = bad_config(tmp_path, changes)
    few = config.get("few_shot", {})
    entry = config["datasets"][dataset]
    settings = good_settings(tmp_path) | {
        "dataset": dataset, "entry": entry, "n_max": config["n_max"],
        "templates": config["templates"], "few_shot": few,
    }
    out = tmp_path / "samples.json"
    code = main(["samples", "--settings", json.dumps(settings), "--out", str(out)])
    err = one_line(capsys.readouterr().err)
    assert code == 2 and err.startswith("ips samples: error: settings: ")
    # the settings name the entry, not its place in a config
    assert_names(err, [w.replace(f"datasets.{dataset}.", "entry.") for w in words])
    assert not out.exists()


@pytest.mark.parametrize("drop, words", [
    ("entry", ["settings: entry: missing"]),
    ("dataset", ["settings: dataset: missing"]),
])
def test_settings_without_a_required_key(tmp_path, capsys, drop, words):
    settings = good_settings(tmp_path)
    del settings[drop]
    out = tmp_path / "samples.json"
    code = main(["samples", "--settings", json.dumps(settings), "--out", str(out)])
    err = one_line(capsys.readouterr().err)
    assert code == 2 and not out.exists()
    assert_names(err, words)


def test_settings_without_optional_keys_get_the_schema_defaults(tmp_path):
    settings = good_settings(tmp_path)
    for key in ("templates", "perturbations", "variables", "seed", "n_items"):
        del settings[key]
    out = tmp_path / "samples.json"
    assert main(["samples", "--settings", json.dumps(settings), "--out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["settings"]["templates"]["mcq"] == ["T1", "T2", "T3", "T4", "T5"]
    assert doc["settings"]["n_items"] == 10 and doc["settings"]["seed"] == 0
    assert len(doc["samples"]) == 3


def test_workflow_settings_pass_unchanged(tmp_path):
    # `ips score` compares a samples file's settings with those of the config: both ways of
    # giving them must agree, and the settings schema must cover what dataset_settings passes
    settings = good_settings(tmp_path)
    assert set(settings) == {"dataset", "entry", *SETTINGS_KEYS}
    assert check_settings(json.loads(json.dumps(settings))) == settings
    occlusion = validate(base_config(tmp_path) | {
        "variables": {"reduce": "occlusion", "reference_model": "m"},
        "models": {"m": {"source": {"path": "x"}, "family": "f", "series": "s", "type": "base",
                         "architecture": "dense", "params": 1}},
    })
    settings = dataset_settings(occlusion, "mine")
    assert check_settings(json.loads(json.dumps(settings))) == settings


@pytest.mark.parametrize("fmt", FORMATS)
def test_fields_of_every_format(tmp_path, fmt):
    entry = {"format": fmt}
    if fmt == "mcq":  # no bundled data
        entry["source"] = str(write_jsonl(tmp_path / "q.jsonl", RECORDS))
    allowed = ITEM_TYPES[fmt].field_names
    validate({"datasets": {"d": dict(entry, fields=list(allowed))}})  # every one is accepted
    with pytest.raises(ConfigError) as e:
        validate({"datasets": {"d": dict(entry, fields=[allowed[0], "nope"])}})
    assert str(e.value) == (f"config: datasets.d.fields: dataset 'd' ({fmt}) has no field nope; "
                            f"allowed: {', '.join(allowed)}")
    with pytest.raises(ConfigError, match=r"^settings: entry\.fields: dataset 'd'"):
        validate_settings({"dataset": "d", "entry": dict(entry, fields=["nope"])})


def test_field_names_are_the_keys_of_fields(tmp_path):
    # the config check allows exactly the fields that loaded items have
    source = str(write_jsonl(tmp_path / "q.jsonl", RECORDS))
    for fmt, entry in [("mcq", {"source": source}), ("dolly", {})]:
        item = load_items("d", {"format": fmt, **entry}).items[0]
        assert type(item) is ITEM_TYPES[fmt]
        assert tuple(item.fields()) == ITEM_TYPES[fmt].field_names


@pytest.mark.parametrize("config, message", [
    ({"noise": -1}, "config: noise: -1 is less than the minimum of 0; allowed: noise >= 0"),
    ({"n_items": 0}, "config: n_items: 0 is less than the minimum of 1; allowed: n_items >= 1"),
    ({"tau_sweep": [0.1, 1]}, "allowed: 0 < tau_sweep.1 < 1"),
    ({"bootstrap": {"level": 1}}, "allowed: 0 < bootstrap.level < 1"),
    ({"variables": {"stratgy": "all"}}, "config: variables.stratgy: unknown key; did you mean "
                                        "strategy?"),
    ({"colour": "red"}, "config: colour: unknown key; known: tau, tau_sweep, figure_taus, solver"),
    ({"solver": 3}, "config: solver: 3 is not of type 'string'; allowed: auto, exact"),
])
def test_schema_messages(config, message):
    with pytest.raises(ConfigError) as e:
        validate(config)
    assert message in one_line(str(e.value))


@pytest.mark.parametrize("name", ["config.yaml", "workflow/configs/paper.yaml",
                                  "workflow/configs/evidence.yaml",
                                  "workflow/configs/scale.yaml"])
def test_repository_configs_stay_valid(name):
    load_config(ROOT / name)


def test_the_baselines_study_is_the_scale_study_under_three_baselines():
    """Merged after scale.yaml, as the command in its header gives it to snakemake."""
    extra = yaml.safe_load((ROOT / "workflow/configs/baselines.yaml").read_text())
    config = load_config(ROOT / "workflow/configs/scale.yaml", overrides=extra)
    assert config["baselines"]["others"] == ["delete", "word:the"]
    assert not any(e.get("control") for e in config["models"].values())


def test_every_malformed_record_in_one_error(tmp_path, capsys):
    good = RECORDS[0]
    lines = [good, {**good, "id": "x1", "question": " "}, "{oops", {**good, "id": "a"},
             {**good, "id": "x3", "gold": 7}, [1, 2], {**good, "id": "x5", "choices": []},
             {**good, "id": "x6", "gold": None}, {**good, "id": "x7", "question": None}]
    path = write_jsonl(tmp_path / "bad.jsonl", lines)
    with pytest.raises(DatasetError) as e:
        load_items("mine", {"format": "mcq", "source": str(path)})
    message = one_line(str(e.value))
    assert message.startswith(f"dataset 'mine': 8 malformed records: {path}, line 2 (id 'x1'): "
                              "field 'question' is empty; line 3: invalid JSON")
    assert_names(message, ["line 4: id 'a' was already used at", "line 5 (id 'x3'): field 'gold'",
                           "line 6: expected a JSON object, got list", "; and 3 more;",
                           "fix or remove them"])
    assert "x6" not in message and SHOW_BAD == 5
    # through `ips samples`: exit 2, one line, no output
    config = base_config(tmp_path)
    config["datasets"]["mine"]["source"] = str(path)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    out = tmp_path / "samples.json"
    assert main(["samples", "--config", str(cfg), "--dataset", "mine", "--out", str(out)]) == 2
    assert "8 malformed records" in one_line(capsys.readouterr().err) and not out.exists()


def test_short_dataset_is_a_warning(tmp_path, caplog):
    config = base_config(tmp_path)
    config["n_items"] = 5
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    out = tmp_path / "samples.json"
    caplog.set_level(logging.INFO, logger="ips")
    assert main(["samples", "--config", str(cfg), "--dataset", "mine", "--out", str(out)]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert_names(warnings[0], ["dataset 'mine'", "only 3 items qualify", "n_items asks for 5"])
    assert len(json.loads(out.read_text())["samples"]) == 3


@pytest.mark.parametrize("case", ["fields-arc", "mcq-template-unknown", "missing-source"])
def test_snakemake_dry_run_fails_at_parse_time(tmp_path, case):
    changes, _, words = next(c[1:] for c in CONFIG_CASES if c[0] == case)
    work = tmp_path / "work"
    work.mkdir()
    (work / "config.yaml").write_text(yaml.safe_dump(bad_config(tmp_path, changes)))
    # this checkout's package, whatever the environment has installed
    env = os.environ | {"PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    r = subprocess.run([str(SNAKEMAKE), "--snakefile", str(ROOT / "Snakefile"), "--directory",
                        str(work), "--cores", "1", "-n"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode != 0
    # one line naming the config file and the field: no WorkflowError header, no traceback
    (line,) = [x for x in r.stderr.splitlines() if "profile" not in x]
    assert line.startswith("ips: config.yaml: ")
    assert_names(line, words)
    assert not (work / "results").exists()


@pytest.mark.parametrize("text, words", [
    ("mcq: [unclosed\n", ["not valid YAML", "line 1"]),
    ("- a list\n", ["the top level must be a mapping"]),
])
def test_unreadable_files_in_one_line(tmp_path, text, words):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    for config, where in [(bad, str(bad)),
                          (tmp_path / "c.yaml", f"templates.file: {bad}")]:
        if config != bad:
            config.write_text(yaml.safe_dump({"templates": {"file": str(bad)}}))
        with pytest.raises(ConfigError) as e:
            load_config(config)
        assert_names(one_line(str(e.value)), [where, *words])
