"""A control of a user's own (tests/plugins/reseeded.py, a file outside `ips`): named in the
config alone, its keys validate under `controls`, it adds its entries beside the twins, and
its entries are paired with their models as the twins' are. The tiny workflow runs it through
to the claims (tests/pipeline/test_workflow.py)."""

from pathlib import Path

import pytest
import yaml

from ips import controls, plugins
from ips.config import ConfigError, schema, validate

PLUGIN = str(Path(__file__).resolve().parents[1] / "plugins" / "reseeded.py")
MODEL = {"source": {"hub": "org/m"}, "family": "f", "series": "s", "type": "base",
         "architecture": "dense", "params": 10}


@pytest.fixture(scope="module")
def reseeded():
    """The plug-in's class, registered for this module's tests only (the registry is the
    process's, and other files' tests see the built-in kinds)."""
    (module,) = plugins.load([PLUGIN])
    yield module.Reseeded
    del controls.REGISTRY["reseeded"]


def config(**control_keys):
    return yaml.safe_load(yaml.safe_dump({
        "plugins": [PLUGIN], "controls": control_keys,
        "models": {"m": dict(MODEL), "n": {**MODEL, "source": {"hub": "org/n"}}}}))


def test_the_plugins_keys_are_keys_of_controls(reseeded):
    assert reseeded.origin == PLUGIN
    section = schema()["properties"]["controls"]["properties"]
    assert {"twins", "seed", "reseeded", "reseed"} <= set(section)
    c = validate(config(reseeded=["m"], reseed=11, twins=["n"]))
    assert list(c["models"]) == ["m", "n", "n-twin", "m-reseeded"]
    added = c["models"]["m-reseeded"]
    assert added["source"] == {"redraw": "m", "seed": 11}
    assert added["control"] == {"kind": "reseeded", "of": "m"}
    assert (controls.kind_of(added), controls.controlled(added)) == (reseeded, "m")
    assert controls.kind_of(c["models"]["n-twin"]) is controls.UntrainedTwins
    assert validate(c) == c  # validated again, the same entries


@pytest.mark.parametrize("keys, message", [
    ({"reseeded": ["x"]}, r"^config: controls\.reseeded\.0: 'x' is no configured model$"),
    ({"reseed": -1}, r"^config: controls\.reseed: -1 is less than the minimum of 0"),
    ({"reseeded": ["m"], "twins": ["m"]},
     r"^config: controls: model 'm' gets control entries of two kinds, 'm-twin' and "
     r"'m-reseeded'; give each model one control kind$"),
])
def test_a_bad_control_setting_is_one_line(reseeded, keys, message):
    with pytest.raises(ConfigError, match=message):
        validate(config(**keys))


def test_without_the_plugin_its_keys_are_unknown(reseeded, monkeypatch):
    monkeypatch.delitem(controls.REGISTRY, "reseeded")
    c = config(reseeded=["m"])
    del c["plugins"]
    with pytest.raises(ConfigError, match=r"^config: controls\.reseeded: unknown key"):
        validate(c)
