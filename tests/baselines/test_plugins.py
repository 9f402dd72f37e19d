"""Baselines as plug-ins (`ips.baselines`, `ips.plugins`): the registry names every setting
once, and a baseline of a user's own (tests/plugins/random_token.py, a file outside `ips`)
is a setting like the built-in ones in the config, the command line and both scorers.

Ground truth for the scores: one forward of each masked prompt, built token by token from
the plug-in's own draws, and v = log p − log(1 − p) from its float64 softmax.
"""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from builders import prompt
from ips import baselines, plugins
from ips.baselines import Deletion, Token
from ips.cli.main import main
from ips.config import ConfigError, validate
from ips.errors import InputError
from ips.scoring.engine import Engine
from ips.scoring.trie import TrieScorer

PLUGIN = str(Path(__file__).resolve().parents[1] / "plugins" / "random_token.py")
MODEL = {"source": {"hub": "org/m"}, "family": "f", "series": "s", "type": "base",
         "architecture": "dense", "params": 10}


@pytest.fixture(scope="module")
def random_token():
    (module,) = plugins.load([PLUGIN])
    return module.RandomToken


def config(**changes):
    return yaml.safe_load(yaml.safe_dump({"models": {"m": dict(MODEL)},
                                          "datasets": {"arc": {"format": "arc"}}, **changes}))


def test_every_setting_has_one_kind_and_the_schema_reads_the_registry():
    for setting, kind in (("unk", Token), ("pad", Token), ("word:the", Token),
                          ("id:7", Token), ("delete", Deletion)):
        assert baselines.kind_of(setting) is kind
        assert re.fullmatch(baselines.pattern(), setting)
    for bad in ("<unk>", "word:two words", "id:x", "deleted", ""):
        assert baselines.kind_of(bad) is None
        with pytest.raises(ConfigError, match=rf"baselines\.others\.0: {re.escape(repr(bad))} is "
                                              r"not allowed \(a baseline: .*delete"):
            validate(config(baselines={"others": [bad]}))


def test_the_plugin_registers_by_being_defined(random_token):
    assert baselines.kind_of("random:3") is random_token
    assert random_token.origin == PLUGIN and Token.origin is None
    assert "random:SEED" in baselines.syntax() and re.fullmatch(baselines.pattern(), "random:12")
    assert plugins.load([PLUGIN]) == plugins.load([PLUGIN])  # imported once


def test_the_config_names_its_plugins(random_token):
    c = validate(config(plugins=[PLUGIN], baselines={"others": ["random:3", "delete"]},
                        nulls={"baseline": {"others": ["random:4"]}}))
    assert c["baselines"]["others"] == ["random:3", "delete"]
    # the run's baseline goes into every entry that sets none
    c = validate(config(baseline="random:5", models={"m": dict(MODEL),
                                                     "d": {**MODEL, "baseline": "delete"}}))
    assert [c["models"][m]["baseline"] for m in ("m", "d")] == ["random:5", "delete"]
    for changes, message in (
        ({"plugins": ["no/such/file.py"]}, r"plugins\.0: plug-in file no/such/file\.py does not "
                                           r"exist"),
        ({"plugins": ["no_such_module"]}, r"plugins\.0: cannot import plug-in 'no_such_module'"),
        ({"plugins": "random_token.py"}, r"plugins: 'random_token.py' is not of type 'array'"),
        ({"baselines": {"masks": ["delete"]}}, r"baselines\.masks: renamed baselines\.others"),
        ({"models": {"m": {**MODEL, "baseline": "nothing"}}},
         r"models\.m\.baseline: 'nothing' is not allowed"),
    ):
        with pytest.raises(ConfigError, match=message):
            validate(config(**changes))


def brute_force_v(model, seq, owners, n, masks, absent, target):
    """v(x_S) of one forward per mask, each absent token replaced by `absent[position]`."""
    out = []
    for m in masks:
        row = [int(t) if o < 0 or (m >> int(o)) & 1 else int(absent[p])
               for p, (t, o) in enumerate(zip(seq, owners))]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([row])).logits[0, -1].double()
        p = torch.softmax(logits, -1)[target]
        out.append(float(torch.log(p) - torch.log1p(-p)))
    return np.array(out)


def test_a_plugin_baseline_is_scored_as_its_rows_read(random_token, llama):
    ids, owners, n, letters = prompt(llama, "T4")
    toy = baselines.resolve("random:3", llama.tokenizer, llama.baseline)
    assert isinstance(toy, random_token) and toy.source == "random:3"
    assert len(np.unique(toy.drawn[:len(ids)])) > len(ids) // 2  # draws, not one token
    target = [letters[1]]
    v = Engine(llama.model, toy, batch_tokens=64).values(ids, owners, n, target)
    expect = brute_force_v(llama.model, ids, owners, n, range(1 << n), toy.drawn, target[0])
    np.testing.assert_allclose(v, expect, rtol=0, atol=1e-4)
    own = Engine(llama.model, llama.baseline).values(ids, owners, n, target)
    assert v[-1] == pytest.approx(own[-1], abs=1e-6)  # x_N: nothing absent (batches differ)
    assert np.abs(v[:-1] - own[:-1]).min() > 1e-4  # every other row reads the draws
    # the trie asks the plug-in for its segments: the same values
    trie = TrieScorer(llama.model, toy, budget=16)
    np.testing.assert_allclose(trie.values(ids, owners, n, target), v, rtol=0, atol=1e-5)
    assert trie.stats.forwards > 1


def test_the_command_line_lists_and_checks_every_baseline(random_token, tmp_path, capsys):
    # before the command (the help) or after it (the run below): read first either way
    r = subprocess.run([sys.executable, "-m", "ips", "--plugin", PLUGIN, "score", "--help"],
                       capture_output=True, text=True, timeout=120)
    help_text = " ".join(r.stdout.split())
    for kind in baselines.REGISTRY.values():
        assert f"{kind.syntax}: {kind.summary}" in help_text, kind.kind
    r = subprocess.run([sys.executable, "-m", "ips", "score", "--model", "m", "--baseline",
                        "random:3", "--out", str(tmp_path / "x.h5")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "argument --baseline: 'random:3' is none of" in r.stderr
    assert main(["score", "--plugin", str(tmp_path / "none.py"), "--model", "m", "--out",
                 str(tmp_path / "x.h5")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ips: error: --plugin.0: plug-in file") and "\n" not in err


def test_two_kinds_of_one_name_are_refused():
    with pytest.raises(InputError, match="baseline kind 'deletion' is defined twice"):
        type("Other", (Deletion,), {"kind": "deletion"})
