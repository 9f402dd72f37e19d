"""`ips samples`, `ips prepare-model` and `ips score` as the workflow calls them."""

import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr
import yaml

from ips.cli.main import main


@pytest.fixture
def ips(capsys):
    """`ips ARGS` in this process, where torch and the model code are imported already (a
    subprocess spends seconds importing them): its exit code and stderr, as
    `subprocess.run` gives them; torch's thread count (`--threads`) is restored after."""
    import torch

    def run(*args):
        threads = torch.get_num_threads()
        try:
            code = main([str(a) for a in args])
        finally:
            torch.set_num_threads(threads)
        return SimpleNamespace(returncode=code, stderr=capsys.readouterr().err)

    return run


@pytest.fixture
def config(tmp_path, tiny_llama_dir):
    cfg = {
        "n_max": 4,
        "n_items": 3,
        "shard_size": 2,
        "few_shot": {"templates": ["T1", "T4"], "shots": [1]},
        "templates": {"mcq": ["T1", "T2", "T4"]},
        "models": {"tiny": {"source": {"path": str(tiny_llama_dir)}, "family": "tiny",
                            "series": "tiny", "type": "base", "architecture": "dense", "params": 1}},
        "datasets": {"arc-easy": {"format": "arc", "subset": "ARC-Easy", "fields": ["question"]}},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_samples_then_score_every_shard(ips, config, tmp_path):
    samples = tmp_path / "samples.json"
    r = ips("samples", "--config", config, "--dataset", "arc-easy", "--out", samples)
    assert r.returncode == 0, r.stderr
    assert "3 samples, 5 conditions" in r.stderr
    outs = []
    for shard in (0, 1):
        out = tmp_path / f"v{shard}.h5"
        r = ips("score", "--config", config, "--model", "tiny", "--dataset", "arc-easy",
                    "--samples", samples, "--shard", shard, "--threads", 1, "--out", out)
        assert r.returncode == 0, r.stderr
        assert "baseline unk: '<unk>'" in r.stderr
        outs.append(xr.open_dataset(out, engine="h5netcdf"))
    assert [ds.sizes["sample"] for ds in outs] == [2, 1]
    assert all(ds.sizes["condition"] == 5 for ds in outs)
    # without --samples the command prepares the same samples from the config
    # (same thread count: float32 sums in another order differ in the last bits)
    r = ips("score", "--config", config, "--model", "tiny", "--dataset", "arc-easy",
                "--shard", 1, "--threads", 1, "--out", tmp_path / "again.h5")
    assert r.returncode == 0, r.stderr
    again = xr.open_dataset(tmp_path / "again.h5", engine="h5netcdf")
    assert np.array_equal(again.v.values, outs[1].v.values, equal_nan=True)
    for ds in (*outs, again):
        ds.close()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--model", "nope", "--dataset", "arc-easy"], "no model 'nope' under 'models'"),
        (["--model", "tiny", "--dataset", "nope"], "no dataset 'nope' under 'datasets'"),
        (["--model", "tiny", "--dataset", "arc-easy", "--shard", "9"], "shard 9 is empty"),
        (["--model", "tiny", "--dataset", "arc-easy", "--conditions", "T1", "T3"],
         "dataset 'arc-easy': no condition 'T3' (its conditions: T1, T2, T4, T1-1shot, T4-1shot)"),
    ],
)
def test_score_bad_names_exit_2(config, tmp_path, capsys, args, message):
    code = main(["score", "--config", str(config), *args, "--out", str(tmp_path / "v.h5")])
    assert code == 2
    assert message in capsys.readouterr().err


def test_chosen_conditions_in_another_precision(ips, config, tmp_path):
    """The precision null's run (`--dtype --conditions`): only those conditions and their
    groups, computed in that dtype, recorded in the file; v close to float32's (a random
    tiny model: bfloat16 keeps about 3 significant digits)."""
    common = ["--config", config, "--model", "tiny", "--dataset", "arc-easy", "--threads", 1]
    r = ips("score", *common, "--out", tmp_path / "f32.h5")
    assert r.returncode == 0, r.stderr
    r = ips("score", *common, "--dtype", "bfloat16", "--conditions", "T4", "T1",
                "--out", tmp_path / "bf16.h5")
    assert r.returncode == 0, r.stderr
    assert "tiny in bfloat16: half precision alone moves IPS" in r.stderr
    with xr.open_dataset(tmp_path / "f32.h5", engine="h5netcdf") as full, \
            xr.open_dataset(tmp_path / "bf16.h5", engine="h5netcdf") as half:
        assert list(half["condition"].values) == ["T1", "T4"]
        assert json.loads(half.attrs["groups"]) == {"0shot": ["T1", "T4"]}  # 1shot: none left
        assert (full.attrs["dtype"], half.attrs["dtype"]) == ("float32", "bfloat16")
        a = full["v"].sel(condition=["T1", "T4"]).values
        b = half["v"].values
        assert np.array_equal(np.isnan(a), np.isnan(b))
        assert 0 < np.nanmax(np.abs(a - b)) < 0.1 * np.nanmax(np.abs(a))


def test_another_baseline_scores_as_that_mask_token(ips, config, tmp_path, capsys):
    """The baseline null's run (`--baseline eos --conditions T1`) gives exactly the values of a
    model entry whose `mask_token` is that token, and other values than the model's own mask
    (unk) everywhere but at the unmasked prompt; the file records the baseline; so does
    `--baseline delete`, and an entry whose `baseline` is delete. The model's own baseline is
    refused in one line."""
    common = ["--model", "tiny", "--dataset", "arc-easy", "--threads", 1, "--conditions", "T1"]
    r = ips("score", "--config", config, *common, "--baseline", "eos", "--out",
                tmp_path / "e.h5")
    assert r.returncode == 0, r.stderr
    assert "baseline eos: '</s>'" in r.stderr
    entry = yaml.safe_load(config.read_text())
    entry["models"]["tiny"]["mask_token"] = "</s>"
    (tmp_path / "eos.yaml").write_text(yaml.safe_dump(entry))
    r = ips("score", "--config", tmp_path / "eos.yaml", *common, "--out", tmp_path / "c.h5")
    assert r.returncode == 0, r.stderr
    r = ips("score", "--config", config, *common, "--out", tmp_path / "u.h5")
    assert r.returncode == 0, r.stderr
    with xr.open_dataset(tmp_path / "e.h5", engine="h5netcdf") as other, \
            xr.open_dataset(tmp_path / "c.h5", engine="h5netcdf") as override, \
            xr.open_dataset(tmp_path / "u.h5", engine="h5netcdf") as own:
        assert (other.attrs["mask_source"], other.attrs["mask_token"]) == ("eos", "</s>")
        assert other.attrs["mask_token_id"] == override.attrs["mask_token_id"]
        assert np.array_equal(other["v"].values, override["v"].values, equal_nan=True)
        assert not np.allclose(other["v"].values, own["v"].values, equal_nan=True)
        # the unmasked prompt x_N has no mask token: what every output-level metric sees
        full = 2 ** other["n_vars"].values - 1
        at_n = [(o["v"].values[s, 0, m]) for o in (other, own) for s, m in enumerate(full)]
        np.testing.assert_allclose(at_n[:len(full)], at_n[len(full):], rtol=1e-6, atol=1e-6)
    # the deletion baseline: no token (id −1); it agrees with the own mask at x_N only
    r = ips("score", "--config", config, *common, "--baseline", "delete", "--out",
                tmp_path / "d.h5")
    assert r.returncode == 0, r.stderr
    entry["models"]["tiny"] = {**entry["models"]["tiny"], "mask_token": None, "baseline": "delete"}
    (tmp_path / "delete.yaml").write_text(yaml.safe_dump(entry))
    r = ips("score", "--config", tmp_path / "delete.yaml", *common, "--out",
                tmp_path / "e-d.h5")
    assert r.returncode == 0, r.stderr
    with xr.open_dataset(tmp_path / "d.h5", engine="h5netcdf") as deleted, \
            xr.open_dataset(tmp_path / "e-d.h5", engine="h5netcdf") as by_entry, \
            xr.open_dataset(tmp_path / "u.h5", engine="h5netcdf") as own:
        assert np.array_equal(deleted["v"].values, by_entry["v"].values, equal_nan=True)
        assert (deleted.attrs["mask_source"], deleted.attrs["mask_token_id"]) == ("delete", -1)
        for s, m in enumerate(2 ** deleted["n_vars"].values - 1):
            v, u = deleted["v"].values[s, 0], own["v"].values[s, 0]
            assert v[m] == pytest.approx(u[m], abs=1e-5) and np.abs(v[:m] - u[:m]).min() > 0
    code = main(["score", "--config", str(config), *map(str, common), "--baseline", "unk",
                 "--out", str(tmp_path / "x.h5")])
    err = capsys.readouterr().err
    assert code != 0 and "baseline 'unk' is '<unk>'" in err and "Traceback" not in err
    assert not (tmp_path / "x.h5").exists()


def test_masking_word_is_recorded_and_changes_only_masked_prompts(ips, config, tmp_path,
                                                                  capsys):
    """`--masking word` (Appendix A's one mask per word): the file says so, x_N keeps the
    token masking's value and every masked prompt reads otherwise; with `--baseline delete`
    it is refused in one line before any scoring."""
    common = ["--model", "tiny", "--dataset", "arc-easy", "--threads", 1, "--conditions", "T1"]
    for name, extra in (("w", ["--masking", "word"]), ("t", [])):
        r = ips("score", "--config", config, *common, *extra, "--out", tmp_path / f"{name}.h5")
        assert r.returncode == 0, r.stderr
    with xr.open_dataset(tmp_path / "w.h5", engine="h5netcdf") as word, \
            xr.open_dataset(tmp_path / "t.h5", engine="h5netcdf") as tokens:
        assert (word.attrs["masking"], tokens.attrs["masking"]) == ("word", "tokens")
        for s, m in enumerate(2 ** word["n_vars"].values - 1):
            w, t = word["v"].values[s, 0], tokens["v"].values[s, 0]
            assert w[m] == pytest.approx(t[m], abs=1e-5) and np.abs(w[:m] - t[:m]).min() > 0
    code = main(["score", "--config", str(config), *map(str, common), "--masking", "word",
                 "--baseline", "delete", "--out", str(tmp_path / "x.h5")])
    err = capsys.readouterr().err
    assert code != 0 and "the baseline 'delete' has none" in err and "Traceback" not in err
    assert "loaded" not in err  # before the model loads
    assert not (tmp_path / "x.h5").exists()


def test_several_samples_files_share_one_model_load(ips, config, tmp_path, capsys):
    """A re-scored null's run: several samples files, each with its own --conditions and
    --out, scored with one model load, each file the same as its own run."""
    cfg = yaml.safe_load(config.read_text())
    cfg["datasets"]["dolly"] = {"format": "dolly", "fields": ["instruction"], "n_items": 2}
    config.write_text(yaml.safe_dump(cfg))
    files = {}
    for dataset in ("arc-easy", "dolly"):
        files[dataset] = tmp_path / f"{dataset}.json"
        assert ips("samples", "--config", config, "--dataset", dataset,
                       "--out", files[dataset]).returncode == 0
    common = ["--config", config, "--model", "tiny", "--threads", 1, "--shard-size", 2]
    r = ips("score", *common[2:], "--entry", json.dumps(cfg["models"]["tiny"]),
                "--samples", files["arc-easy"], files["dolly"], "--conditions", "T1",
                "--conditions", "A1", "--out", tmp_path / "a.h5", tmp_path / "d.h5")
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("loaded tiny") == 1
    for dataset, condition, both in (("arc-easy", "T1", "a.h5"), ("dolly", "A1", "d.h5")):
        alone = tmp_path / f"alone-{dataset}.h5"
        r = ips("score", *common, "--dataset", dataset, "--samples", files[dataset],
                    "--conditions", condition, "--out", alone)
        assert r.returncode == 0, r.stderr
        with xr.open_dataset(alone, engine="h5netcdf") as one, \
                xr.open_dataset(tmp_path / both, engine="h5netcdf") as shared:
            assert list(shared["condition"].values) == [condition]
            assert shared.attrs["dataset"] == dataset and shared.sizes["sample"] == 2
            assert np.array_equal(one["v"].values, shared["v"].values, equal_nan=True)
    entry = ["--entry", json.dumps(cfg["models"]["tiny"])]
    two = ["--samples", str(files["arc-easy"]), str(files["dolly"])]
    for args, message in (
        ([*two, "--out", str(tmp_path / "x.h5")], "--out: 1 file(s) for 2 --samples file(s)"),
        ([*two, "--conditions", "T1", "--conditions", "A1", "--conditions", "A2", "--out",
          str(tmp_path / "x.h5"), str(tmp_path / "y.h5")], "--conditions: given 3 times"),
    ):
        assert main(["score", "--model", "tiny", *entry, *args]) == 2
        assert message in capsys.readouterr().err


def test_negative_shard_is_refused(config, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["score", "--config", str(config), "--model", "tiny", "--dataset", "arc-easy",
              "--shard", "-1", "--out", str(tmp_path / "v.h5")])
    assert e.value.code == 2 and "must be in 0.." in capsys.readouterr().err


def test_broken_samples_file_is_named(config, tmp_path, capsys):
    bad = tmp_path / "samples.json"
    bad.write_text('{"dataset": "arc-easy", "samples": [{"item": {}}]}')
    code = main(["score", "--config", str(config), "--model", "tiny", "--dataset", "arc-easy",
                 "--samples", str(bad), "--out", str(tmp_path / "v.h5")])
    assert code == 2 and f"{bad}: not a samples file" in capsys.readouterr().err


def test_bad_config_value_names_the_field(tmp_path, capsys):
    path = tmp_path / "config.yaml"
    path.write_text("variables: {strategy: nouns}\n")
    assert main(["samples", "--config", str(path), "--dataset", "x", "--out", str(tmp_path / "s.json")]) == 2
    err = capsys.readouterr().err
    assert "variables.strategy" in err and "allowed: all, content" in err


def test_prepare_model_prints_the_directory(config, tiny_llama_dir, capsys):
    assert main(["prepare-model", "--config", str(config), "--model", "tiny"]) == 0
    assert capsys.readouterr().out.strip() == str(tiny_llama_dir)


def test_prepare_model_checks_another_baseline(config, tiny_llama_dir, capsys):
    """`--baseline` prints the other baseline's token as the tokenizer has it, and
    refuses one it cannot be in one line."""
    import transformers

    args = ["prepare-model", "--config", str(config), "--model", "tiny"]
    assert main([*args, "--baseline", "eos"]) == 0
    tok = transformers.AutoTokenizer.from_pretrained(tiny_llama_dir)
    assert capsys.readouterr().out == f"eos\t{tok.eos_token_id}\t{tok.eos_token}\n"
    assert main([*args, "--baseline", "delete"]) == 0
    assert capsys.readouterr().out == "delete\t-1\t\n"
    assert main([*args, "--baseline", "word:abcdefghij"]) != 0
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert "model tiny: baseline 'word:abcdefghij'" in last and "not one" in last
    assert "Traceback" not in err


def test_killed_score_resumes_with_identical_output(ips, config, tmp_path):
    """SIGKILL `ips score` once a sample is finished; the rerun scores only the rest."""
    import signal
    import time

    # one shard of 6 samples: the poll below has 5 samples' time to see the first one done
    # (a lower priority for the scorer would widen that window, but a nice-19 process
    # waits minutes behind the other test worker's jobs)
    six = tmp_path / "six.yaml"
    six.write_text(yaml.safe_dump({**yaml.safe_load(config.read_text()), "n_items": 6,
                                   "shard_size": 6}))
    args = ["score", "--config", six, "--model", "tiny", "--dataset", "arc-easy",
            "--shard", 0, "--threads", 1]
    r = ips(*args, "--out", tmp_path / "whole.h5")
    assert r.returncode == 0, r.stderr

    out = tmp_path / "killed.h5"
    partial = tmp_path / "killed.h5.partial"
    proc = subprocess.Popen([sys.executable, "-m", "ips", *map(str, args), "--out", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while not list(partial.glob("*.npz")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if out.exists():  # the whole shard finished before the kill: nothing to resume
        pytest.skip("the run finished before it could be killed")
    done = len(list(partial.glob("*.npz")))
    assert done >= 1

    r = ips(*args, "--out", out)
    assert r.returncode == 0, r.stderr
    assert f"{done} already done (resuming)" in r.stderr
    a, b = (xr.open_dataset(p, engine="h5netcdf") for p in (tmp_path / "whole.h5", out))
    for name in ("v", "pred", "letter_logit", "option_logp", "hidden", "target_ids"):
        assert np.array_equal(a[name].values, b[name].values, equal_nan=True), name
    a.close(), b.close()
