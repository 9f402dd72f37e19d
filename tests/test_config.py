"""config.yaml is valid, matches the schema's defaults, and bad values are rejected."""

import copy
import json
from pathlib import Path

import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"


def load(name):
    return yaml.safe_load((ROOT / name).read_text())


def test_default_config_is_valid_and_spells_out_every_key():
    config = load("config.yaml")
    validate(config, str(SCHEMA))
    # every top-level key of the schema is written in config.yaml, so users see it
    assert set(load(SCHEMA)["properties"]) <= set(load("config.yaml"))


def test_missing_keys_get_defaults():
    config = {}
    validate(config, str(SCHEMA))
    assert config["tau"] == 0.1 and config["solver"] == "auto" and config["n_max"] == 10
    assert config["tau_sweep"][0] == 0.05 and config["tau_sweep"][-1] == 0.2
    assert len(config["tau_sweep"]) == 16


@pytest.mark.parametrize(
    "bad",
    [
        {"tau": 0},
        {"tau": 1},
        {"tau": "0.1"},
        {"tau_sweep": [0.1, 1.2]},
        {"solver": "simplex"},
        {"noise": -0.1},
        {"n_max": 0},
        {"n_max": 33},
        {"n_max": 2.5},
        {"sampling": {"mode": "random"}},
        {"sampling": {"budget": 8}},
        {"seed": "zero"},
    ],
)
def test_bad_values_rejected(bad):
    with pytest.raises(WorkflowError):
        validate(dict(bad), str(SCHEMA))


def test_beyond_16_variables_needs_sparse_sampling():
    from ips.config import ConfigError
    from ips.config import validate as ips_validate

    base = {"models": {}, "datasets": {}}
    with pytest.raises(ConfigError, match=r"n_max: 17 needs `sampling: \{mode: sparse\}`"):
        ips_validate({**base, "n_max": 17})
    config = ips_validate({**base, "n_max": 32, "sampling": {"mode": "sparse"}})
    assert config["sampling"] == {"mode": "sparse", "budget": 1024}


def test_scorer_and_target_choices_are_the_schemas():
    from ips.config import DTYPES, MASKINGS, SAMPLINGS, SCORERS, TARGETS, schema

    props = schema()["properties"]
    assert list(SCORERS) == props["scorer"]["enum"]
    assert list(MASKINGS) == props["masking"]["enum"]
    assert list(DTYPES) == schema()["$defs"]["dtype"]["enum"]
    assert list(SAMPLINGS) == props["sampling"]["properties"]["mode"]["enum"]
    targets = schema()["$defs"]["dataset"]["properties"]["target"]["enum"]
    assert [t for ts in TARGETS.values() for t in ts] == targets


def test_variants_name_configured_models_and_conditions():
    """`nulls.precision` and `nulls.baseline`: per_model names a model, a listed condition
    exists in a dataset; each dataset scores the listed conditions it has again ([]: its
    first template); a model's own dtype is never its second precision; a baseline is a
    role, word:W or id:N."""
    from ips.config import ConfigError, variant_conditions, variant_settings
    from ips.config import validate as ips_validate

    model = {"source": {"hub": "org/m"}, "family": "f", "series": "s", "type": "base",
             "architecture": "dense", "params": 10}
    base = {"models": {"m": model, "h": {**model, "dtype": "bfloat16"}},
            "datasets": {"arc": {"format": "arc"}, "dolly": {"format": "dolly"}},
            "nulls": {"precision": {"dtypes": ["bfloat16"]}, "baseline": {"others": ["eos"]}}}
    config = ips_validate(yaml.safe_load(yaml.safe_dump(base)))
    for null in ("precision", "baseline"):
        assert [variant_conditions(config, null, d) for d in ("arc", "dolly")] == [["T1"], ["A1"]]
    assert variant_settings(config, "precision", "m") == ["bfloat16"]
    assert variant_settings(config, "precision", "h") == []
    assert variant_settings(config, "baseline", "h") == ["eos"]
    config = ips_validate({**yaml.safe_load(yaml.safe_dump(base)), "nulls": {"precision": {
        "dtypes": ["bfloat16"], "per_model": {"h": ["float32", "bfloat16"]},
        "conditions": ["T2", "T1-1shot"]}, "baseline": {
        "others": ["pad", "word:the"], "per_model": {"m": ["id:7"]}, "conditions": ["A2"]}}})
    assert variant_conditions(config, "precision", "arc") == ["T2", "T1-1shot"]
    assert variant_conditions(config, "precision", "dolly") == []
    assert variant_settings(config, "precision", "h") == ["float32"]
    assert variant_conditions(config, "baseline", "dolly") == ["A2"]
    assert variant_settings(config, "baseline", "m") == ["id:7"]
    assert variant_settings(config, "baseline", "h") == ["pad", "word:the"]
    for null, section, message in (
        ("precision", {"per_model": {"x": ["float16"]}},
         r"nulls\.precision\.per_model\.x: not under models \(configured: h, m\)"),
        ("precision", {"dtypes": ["float16"], "conditions": ["T1", "T9"]},
         r"nulls\.precision\.conditions\.1: 'T9' is a condition of no configured dataset"),
        ("precision", {"dtypes": ["half"]}, r"nulls\.precision\.dtypes\.0: 'half' is not one of"),
        ("baseline", {"per_model": {"x": ["eos"]}}, r"nulls\.baseline\.per_model\.x: not under"),
        ("baseline", {"others": ["eos"], "conditions": ["A9"]},
         r"nulls\.baseline\.conditions\.0: 'A9' is a condition of no configured dataset"),
        ("baseline", {"others": ["word:two words"]}, r"nulls\.baseline\.others\.0: 'word:two"),
        ("baseline", {"others": ["<unk>"]}, r"nulls\.baseline\.others\.0: '<unk>'"),
    ):
        with pytest.raises(ConfigError, match=message):
            ips_validate({**yaml.safe_load(yaml.safe_dump(base)), "nulls": {null: section}})


def test_the_old_null_sections_name_their_new_place():
    """A config of before `nulls: {kind: ...}` is one line naming where each key went."""
    from ips.config import ConfigError
    from ips.config import validate as ips_validate

    for old, message in (
        ({"nulls": {"levels": [0.01]}}, r"^c\.yaml: nulls\.levels: renamed nulls\.noise\.levels"),
        ({"nulls": {"matched": False}}, r"nulls\.matched: renamed nulls\.noise\.matched"),
        ({"precision_null": {"dtypes": []}}, r"precision_null: renamed nulls\.precision;"),
        ({"mask_null": {"masks": ["pad"]}},
         r"mask_null: renamed nulls\.baseline \(its masks: others\);"),
        ({"nulls": {"gaussian": {}}}, r"nulls\.gaussian: unknown key; known: noise, precision"),
    ):
        with pytest.raises(ConfigError, match=message) as e:
            ips_validate(old, "c.yaml")
        assert "\n" not in str(e.value)


TWIN_MODEL = {"source": {"gguf_package": "llm-x"}, "family": "f", "series": "s",
              "type": "instruct", "architecture": "moe", "params": "1.5B", "active_params": "1B",
              "dtype": "bfloat16", "mask_token": "<pad>", "gpus": 2, "device_map": "auto",
              "trust_remote_code": True}


def twin_config(**controls):
    return {"controls": controls, "models": {"a": dict(TWIN_MODEL), "b": {
        **TWIN_MODEL, "source": {"random": "llama", "seed": 3}, "type": "base"}}}


def test_each_listed_model_gets_a_twin_entry_equal_to_its_own_but_the_source():
    """`controls.twins`: `M-twin` holds M's entry with `source: {redraw: M, seed}` and
    `weights: random`, the seed
    controls.seed + CRC-32 of M's name (written out here: crc32(b"a") = 0xE8B7BE43), and
    `control: {kind: twins, of: M}`; added after the configured models; validating again
    changes nothing."""
    import copy

    from ips.config import validate as ips_validate
    from ips.controls.twins import twin_name

    config = ips_validate(twin_config(twins=["b", "a"], seed=5))
    assert list(config["models"]) == ["a", "b", "b-twin", "a-twin"]
    assert twin_name("a") == "a-twin"
    for name in ("a", "b"):
        twin = dict(config["models"][f"{name}-twin"])
        assert twin.pop("source")["redraw"] == name
        assert twin.pop("control") == {"kind": "twins", "of": name}
        assert twin.pop("weights") == "random"
        assert twin == {k: v for k, v in config["models"][name].items()
                        if k not in ("source", "weights")}
    assert config["models"]["a-twin"]["source"] == {"redraw": "a", "seed": 5 + 0xE8B7BE43}
    assert config["models"]["b-twin"]["source"]["seed"] != config["models"]["a-twin"][
        "source"]["seed"]
    again = ips_validate(copy.deepcopy(config))
    assert again == config and list(again["models"]) == list(config["models"])
    assert ips_validate(twin_config())["controls"] == {"twins": [], "draws": 1, "seed": 0}
    assert list(ips_validate(twin_config())["models"]) == ["a", "b"]


def test_the_controls_section_is_the_registered_kinds_keys():
    """`controls` holds every registered kind's keys (`ips.controls`): the twins' `twins`
    and `seed` with their defaults; an added entry names its model and kind; a second kind
    reading a key of the first is refused in one line, and a kind of another's name too."""
    from ips import controls
    from ips.config import schema
    from ips.controls import REGISTRY, Control, UntrainedTwins
    from ips.errors import InputError

    section = schema()["properties"]["controls"]
    assert set(section["properties"]) == {"twins", "draws", "seed"}
    assert section["additionalProperties"] is False
    twin = {"source": {"redraw": "a", "seed": 1}, "control": {"kind": "twins", "of": "a"}}
    assert (controls.controlled(twin), controls.kind_of(twin)) == ("a", UntrainedTwins)
    assert UntrainedTwins.controls_of(twin) == "a"
    assert controls.controlled({"source": {"redraw": "a", "seed": 3}}) is None
    assert UntrainedTwins.controls_of({"control": {"kind": "other", "of": "a"}}) is None

    class Seeds(Control):  # defined here, and taken out of the registry again below
        kind = "seeds"
        noun = "another draw"
        settings = {"seed": {"type": "integer"}}

        @classmethod
        def expand(cls, section, models, source):
            return []

    try:
        with pytest.raises(InputError, match=r"controls\.seed is read by two control kinds, "
                                             r"'twins' and 'seeds'"):
            controls.settings()
    finally:
        del REGISTRY["seeds"]
    with pytest.raises(InputError, match="control kind 'twins' is defined twice"):
        type("Twins", (UntrainedTwins,), {"kind": "twins"})


def test_a_twin_takes_the_variants_of_its_original():
    """The precision and baseline nulls score a twin again with its original's per_model
    list (it is scored on the same conditions as its model), unless it has its own."""
    from ips.config import validate as ips_validate
    from ips.config import variant_settings

    config = ips_validate({**twin_config(twins=["a", "b"]), "nulls": {
        "precision": {"dtypes": ["float16"], "per_model": {"a": ["float32"]}},
        "baseline": {"others": ["eos"], "per_model": {"b-twin": ["pad"]}}}})
    assert variant_settings(config, "precision", "a-twin") == ["float32"]
    assert variant_settings(config, "precision", "b-twin") == ["float16"]
    assert variant_settings(config, "baseline", "a-twin") == ["eos"]
    assert variant_settings(config, "baseline", "b-twin") == ["pad"]


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["controls"].update(twins=["x"]),
     "config: controls.twins.0: 'x' is not under models (configured: a, b)"),
    (lambda c: c["controls"].update(twins=["a", "a-twin"]),
     "config: controls.twins.1: 'a-twin' is the control of 'a'; a twin of a control is not "
     "drawn"),
    (lambda c: c["models"].update({"a-twin": dict(TWIN_MODEL)}),
     "config: models.a-twin: a model of this name is configured, and controls.twins.0 adds "
     "a twin of 'a' under it; rename the model"),
    (lambda c: c["models"].update({"c": {**TWIN_MODEL, "control": {"kind": "twins", "of": "b"}}}),
     "config: models.c.control: set by the control that adds the entry, not written by hand; "
     "configure it under controls (kinds: twins"),
    (lambda c: c["models"].update({"c": {**TWIN_MODEL, "source": {"redraw": "x", "seed": 1}}}),
     "config: models.c.source.redraw: 'x' is not under models; name the configured model"),
    (lambda c: c["models"].update({"c": {**TWIN_MODEL, "source": {"redraw": "a-twin",
                                                                   "seed": 1}}}),
     "config: models.c.source.redraw: 'a-twin' is itself re-drawn; name the model it re-draws"),
    (lambda c: c["controls"].update(seed=-1), "config: controls.seed: -1 is less than"),
    (lambda c: c["controls"].update(twin=["a"]),
     "config: controls.twin: unknown key; did you mean twins?"),
    (lambda c: c["models"]["b"]["source"].update(redraw="a"),
     "config: models.b.source: key 'redraw' is not allowed here; allowed: random, seed"),
])
def test_a_bad_twin_is_one_line_naming_the_field(edit, message):
    from ips.config import ConfigError
    from ips.config import validate as ips_validate

    config = twin_config(twins=["a"])
    edit(config)
    with pytest.raises(ConfigError) as e:
        ips_validate(config)
    assert str(e.value).startswith(message) and "\n" not in str(e.value), str(e.value)


def test_twin_draws_are_entries_of_their_own_seeds():
    """controls.draws: 3 gives each listed model three twins, `M-twin`, `M-twin-2` and
    `M-twin-3`, drawn from the twin seed plus 0, 1, 2 and recorded as draws 1-3; the first
    is the entry one draw gives (its record names no draw)."""
    from ips.config import validate as ips_validate
    from ips.controls.twins import twin_seed

    config = ips_validate(twin_config(twins=["a"], seed=5, draws=3))
    assert [m for m in config["models"] if m.startswith("a-")] == ["a-twin", "a-twin-2",
                                                                    "a-twin-3"]
    for k, name in enumerate(("a-twin", "a-twin-2", "a-twin-3"), start=1):
        entry = config["models"][name]
        assert entry["source"] == {"redraw": "a", "seed": 5 + 0xE8B7BE43 + k - 1}
        assert entry["control"] == {"kind": "twins", "of": "a", **({"draw": k} if k > 1 else {})}
        assert twin_seed(5, "a", k) == entry["source"]["seed"]
    one = ips_validate(twin_config(twins=["a"], seed=5))
    assert one["models"]["a-twin"] == config["models"]["a-twin"]


def per_dataset_config(**dolly):
    return {"n_max": 6, "variables": {"merge_phrases": True},
            "controls": {"twins": ["a"]},
            "models": {"a": dict(TWIN_MODEL), "b": {**TWIN_MODEL, "series": "t"},
                       "c": {"source": {"path": "x"}}},
            "datasets": {"arc": {"format": "arc"}, "dolly": {"format": "dolly", **dolly}}}


def test_a_dataset_sets_its_own_variables_n_max_and_models():
    """A dataset's `variables` override the top-level ones key by key and its `n_max` the
    top-level one; its `models` select by name or by every key of a filter, a control coming
    with its model; none of `models` reaches the samples' settings (changing it redraws
    nothing); other datasets keep the top-level values and every model."""
    from ips.config import dataset_models, dataset_settings
    from ips.config import validate as ips_validate

    config = ips_validate(per_dataset_config(
        n_max=4, variables={"strategy": "all"}, models=[{"series": "s", "type": "instruct"}, "c"]))
    dolly, arc = dataset_settings(config, "dolly"), dataset_settings(config, "arc")
    assert dolly["n_max"] == 4 and arc["n_max"] == 6
    assert dolly["variables"] == {"reduce": "longest", "strategy": "all", "merge_phrases": True}
    assert arc["variables"] == {"reduce": "longest", "strategy": "content", "merge_phrases": True}
    assert set(dolly["entry"]) == {"format", "source"}  # n_max, variables, models taken out
    assert dataset_models(config, "dolly") == ["a", "c", "a-twin"]  # b is series t
    assert dataset_models(config, "arc") == ["a", "b", "c", "a-twin"]
    unrestricted = ips_validate(per_dataset_config(n_max=4, variables={"strategy": "all"}))
    assert dataset_settings(unrestricted, "dolly") == dolly
    assert dataset_models(ips_validate(per_dataset_config(models=[{"series": "t"}])),
                          "dolly") == ["b"]


@pytest.mark.parametrize("dolly, message", [
    ({"n_max": 7}, "datasets.dolly.n_max: 7 exceeds the top-level n_max 6"),
    ({"models": ["z"]}, "datasets.dolly.models.0: 'z' is not under models (configured: a, b, c, "),
    ({"models": ["a", {"family": "g"}]},
     "datasets.dolly.models.1: {'family': 'g'} matches no model entry"),
    ({"models": [{"params": 5}]}, "datasets.dolly.models.0"),
    ({"variables": {"reduce": "occlusion"}},
     "datasets.dolly.variables.reference_model: required when reduce is occlusion"),
    ({"variables": {"reduce": "occlusion", "reference_model": "q"}},
     "datasets.dolly.variables.reference_model: 'q' is not under models"),
    ({"variables": {"n_max": 3}}, "datasets.dolly.variables"),
])
def test_a_bad_dataset_setting_is_one_line_naming_the_field(dolly, message):
    from ips.config import ConfigError
    from ips.config import validate as ips_validate

    with pytest.raises(ConfigError) as e:
        ips_validate(per_dataset_config(**dolly))
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("perturbations, few_shot, message", [
    ({"names": [], "shots": [1]}, {"shots": [1, 2]},
     "config: perturbations.shots: [1], but perturbations.names is empty; name the rewordings "
     "to score with examples or leave the shots out"),
    ({"names": ["paraphrase"], "shots": [1, 3]}, {"shots": [1, 2]},
     "config: perturbations.shots.1: 3 is not in few_shot.shots (1, 2); name one of them or "
     "add it there"),
    ({"names": ["paraphrase"], "shots": [1]}, {"shots": []},
     "config: perturbations.shots.0: 1 is not in few_shot.shots (none); name one of them or "
     "add it there"),
])
def test_reworded_prompts_take_examples_only_of_the_few_shot_ks(perturbations, few_shot,
                                                                 message):
    """`perturbations.shots` (Figs. 12d, 55) needs rewordings and the k of few_shot.shots:
    else one line naming the field, in a config and in a dataset's JSON settings alike."""
    from ips.config import ConfigError, check_settings, dataset_settings
    from ips.config import validate as ips_validate

    config = {"datasets": {"dolly": {"format": "dolly"}}, "perturbations": perturbations,
              "few_shot": few_shot}
    with pytest.raises(ConfigError) as e:
        ips_validate(config)
    assert str(e.value) == message
    settings = {**dataset_settings(ips_validate({"datasets": config["datasets"]}), "dolly"),
                "perturbations": perturbations, "few_shot": few_shot}
    with pytest.raises(ConfigError) as e:
        check_settings(settings)
    assert str(e.value) == message.replace("config:", "settings:", 1)


def test_an_empty_perturbations_shots_leaves_the_settings_as_they_were():
    """A run without `perturbations.shots`, and an MCQ dataset of a run with it, pass the
    samples the settings they passed before the key existed (a changed workflow param would
    draw those samples again); a Dolly of a run with it passes it, and JSON settings
    validate to the same."""
    from ips.config import check_settings, dataset_settings
    from ips.config import validate as ips_validate

    base = {"datasets": {"dolly": {"format": "dolly"}},
            "perturbations": {"names": ["paraphrase", "reorder"]}}
    plain = dataset_settings(ips_validate(copy.deepcopy(base)), "dolly")
    assert plain["perturbations"] == {"names": ["paraphrase", "reorder"], "file": None}
    assert check_settings(json.loads(json.dumps(plain))) == plain
    config = ips_validate({**copy.deepcopy(base),
                           "perturbations": {"names": ["paraphrase"], "shots": [2]}})
    assert config["perturbations"]["shots"] == [2]
    shot = dataset_settings(config, "dolly")
    assert shot["perturbations"] == {"names": ["paraphrase"], "file": None, "shots": [2]}
    assert check_settings(json.loads(json.dumps(shot))) == shot
    # an MCQ dataset has no reworded prompts: its settings do not change with the key
    mcq = {"format": "arc", "subset": "ARC-Easy"}
    without = dataset_settings(ips_validate({**copy.deepcopy(base), "datasets": {"arc": mcq}}),
                               "arc")
    with_shots = dataset_settings(ips_validate({
        **copy.deepcopy(base), "datasets": {"arc": mcq},
        "perturbations": {"names": ["paraphrase", "reorder"], "shots": [1]}}), "arc")
    assert with_shots == without and "shots" not in with_shots["perturbations"]
    assert check_settings(json.loads(json.dumps(with_shots))) == with_shots


def test_weights_are_declared_where_the_source_cannot_say_them():
    """`weights: random` on a path model stands; `trained` on a re-drawn model is refused;
    a twin is random whatever its model declares."""
    from ips.config import ConfigError
    from ips.config import validate as ips_validate

    def config(**entry):
        return {"models": {"m": {"source": {"path": "/m"}, "family": "f", "series": "s",
                                 "type": "base", "architecture": "dense", "params": 1000,
                                 **entry}},
                "controls": {"twins": ["m"]},
                "datasets": {"arc": {"format": "arc"}}}

    models = ips_validate(config(weights="trained"))["models"]
    assert models["m"]["weights"] == "trained" and models["m-twin"]["weights"] == "random"
    assert ips_validate(config())["models"]["m"]["weights"] is None
    bad = config()
    bad["models"]["r"] = {"source": {"redraw": "m", "seed": 1}, "weights": "trained"}
    with pytest.raises(ConfigError, match="models.r.weights: trained, but its source draws"):
        ips_validate(bad)
