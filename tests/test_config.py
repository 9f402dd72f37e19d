"""config.yaml is valid, matches the schema's defaults, and bad values are rejected."""

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
    from ips.config import SAMPLINGS, SCORERS, TARGETS, schema

    props = schema()["properties"]
    assert list(SCORERS) == props["scorer"]["enum"]
    assert list(SAMPLINGS) == props["sampling"]["properties"]["mode"]["enum"]
    targets = schema()["$defs"]["dataset"]["properties"]["target"]["enum"]
    assert [t for ts in TARGETS.values() for t in ts] == targets
