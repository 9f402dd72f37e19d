"""Every bad file or destination through the commands: exit 2, one line naming the file,
nothing half-written left behind.

- a full disk (simulated: writes to our temporary files fail with ENOSPC after half the
  data; also RLIMIT_FSIZE in a subprocess, and a real 12 kB tmpfs when root);
- a destination that cannot be written (under a file, read-only), found before any work;
- HDF5 files with a flipped byte in the data (Fletcher-32) or cut short;
- `ips score` on an --out that another run holds;
- a damaged resume file of `ips score`, which is recomputed (exit 0) instead.
"""

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr
import yaml

from builders import flip_in_chunk, make_fit, make_values
from ips.cli.main import main
from ips.config import DEFAULT_MODEL, DEFAULT_MODEL_ENTRY
from ips.formats.hdf5 import write_dataset

FAST = ["--resamples", "100", "--permutations", "99"]  # bootstrap settings of a quick run
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [A-Z]+ ")


def one_line_error(code: int, err: str, command: str, *parts: str) -> str:
    """Assert exit 2 and a single `ips COMMAND: error:` line holding `parts`; return it."""
    assert code == 2, err
    # neither log lines nor progress bars (redrawn with \r)
    lines = [x for x in err.split("\n") if x and "\r" not in x and not LOG_LINE.match(x)]
    assert len(lines) == 1 and lines[0].startswith(f"ips {command}: error: "), err
    for part in parts:
        assert str(part) in lines[0], (part, lines[0])
    return lines[0]


def leftovers(root) -> list[str]:
    """Temporary files or folders of a writer under `root` (none may survive a failure)."""
    return sorted(str(p) for p in root.rglob("*") if re.search(r"\.(tmp|old|lock)$", p.name))


# ---------------------------------------------------------------- inputs


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A values file, its fit, a metrics file and a factors file, written by the commands."""
    tmp = tmp_path_factory.mktemp("inputs")
    ds = make_values([f"item{i}" for i in range(4)], seed=3)
    paths = {"values": tmp / "v.h5", "fit": tmp / "fit.h5", "metrics": tmp / "m.nc",
             "factors": tmp / "f.nc"}
    write_dataset(ds, paths["values"])
    write_dataset(make_fit(ds), paths["fit"])
    assert main(["metrics", "--values", str(paths["values"]), "--interactions", str(paths["fit"]),
                 *FAST, "--out", str(paths["metrics"])]) == 0
    assert main(["factors", "--metrics", str(paths["metrics"]), *FAST,
                 "--out", str(paths["factors"])]) == 0
    return paths


@pytest.fixture(scope="module")
def scoring(tmp_path_factory, tiny_llama_dir):
    """A config with the tiny Llama, its samples file, and the clean output of `ips score`."""
    tmp = tmp_path_factory.mktemp("scoring")
    cfg = {
        "n_max": 3, "n_items": 2, "shard_size": 2,
        "few_shot": {"templates": ["T1"], "shots": [1]},
        "templates": {"mcq": ["T1", "T2"]},
        "models": {"tiny": {"source": {"path": str(tiny_llama_dir)}, "family": "tiny",
                            "series": "tiny", "type": "base", "architecture": "dense",
                            "params": 1}},
        "datasets": {"arc-easy": {"format": "arc", "subset": "ARC-Easy", "fields": ["question"]}},
    }
    config = tmp / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    samples = tmp / "samples.json"
    assert main(["samples", "--config", str(config), "--dataset", "arc-easy",
                 "--out", str(samples)]) == 0
    ctx = {"config": config, "samples": samples}
    clean = tmp / "clean.h5"
    assert main(score_args(ctx, clean)) == 0
    with xr.open_dataset(clean, engine="h5netcdf") as ds:
        ctx["v"] = ds["v"].values
    return ctx


def score_args(ctx, out) -> list[str]:
    return ["score", "--config", str(ctx["config"]), "--model", "tiny", "--dataset", "arc-easy",
            "--samples", str(ctx["samples"]), "--threads", "1", "--out", str(out)]


# ---------------------------------------------------------------- a full disk


FULL_DISK = {
    "fit": lambda f, ctx, out: ["fit", str(f["values"]), "--out", str(out)],
    "metrics": lambda f, ctx, out: ["metrics", "--values", str(f["values"]), "--interactions",
                                    str(f["fit"]), *FAST, "--out", str(out)],
    "factors": lambda f, ctx, out: ["factors", "--metrics", str(f["metrics"]), *FAST,
                                    "--out", str(out)],
    "samples": lambda f, ctx, out: ["samples", "--config", str(ctx["config"]),
                                    "--dataset", "arc-easy", "--out", str(out)],
    # fails on the first resume file, OUT.partial/000000.npz
    "score": lambda f, ctx, out: score_args(ctx, out),
}


@pytest.mark.parametrize("command", FULL_DISK)
def test_full_disk(command, files, scoring, tmp_path, capsys, full_disk):
    out = tmp_path / "out" / "o.h5"
    code = main(FULL_DISK[command](files, scoring, out))
    one_line_error(code, capsys.readouterr().err, command, out, "no space left on device")
    assert not out.exists() and leftovers(tmp_path) == []
    assert list(tmp_path.rglob("*.partial")) == []


def test_file_size_limit_in_a_real_write(files, tmp_path):
    """HDF5 crashed (SIGSEGV, exit 139) when a write failed; now it never writes the disk."""
    script = ("import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
              "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096)); "
              "from ips.cli.main import main; sys.exit(main(sys.argv[1:]))")
    out = tmp_path / "fit.h5"
    r = subprocess.run([sys.executable, "-c", script, "fit", str(files["values"]),
                        "--out", str(out)], capture_output=True, text=True, timeout=300)
    one_line_error(r.returncode, r.stderr, "fit", out, "file too large")
    assert leftovers(tmp_path) == [] and not out.exists()


@pytest.fixture
def tmpfs(tmp_path):
    """Mount a tmpfs (options given to the returned function); root only, else skip."""
    mounts = []

    def mount(options: str):
        if os.geteuid() != 0 or not shutil.which("mount"):
            pytest.skip("mounting a tmpfs needs root")
        where = tmp_path / f"mnt{len(mounts)}"
        where.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                           capture_output=True, text=True)
        if r.returncode:
            pytest.skip(f"cannot mount a tmpfs: {r.stderr.strip()}")
        mounts.append(where)
        return where

    yield mount
    for where in mounts:
        subprocess.run(["umount", str(where)], check=False)


def test_real_full_disk(files, tmpfs, capsys):
    disk = tmpfs("size=12k")
    out = disk / "fit.h5"
    code = main(["fit", str(files["values"]), "--out", str(out)])
    one_line_error(code, capsys.readouterr().err, "fit", out, "no space left on device")
    assert list(disk.iterdir()) == []


# ---------------------------------------------------------------- unusable destinations
# The inputs do not exist: the destination is checked first, before any work.

DESTINATION = {
    "samples": lambda out: ["samples", "--settings", "{}", "--out", str(out)],
    "prepare-model": lambda out: ["prepare-model", "--model", DEFAULT_MODEL, "--entry",
                                  json.dumps(DEFAULT_MODEL_ENTRY), "--cache-dir", str(out)],
    "score": lambda out: ["score", "--config", "nope.yaml", "--model", "m", "--out", str(out)],
    "fit": lambda out: ["fit", "nope.h5", "--out", str(out)],
    "metrics": lambda out: ["metrics", "--values", "nope.h5", "--interactions", "nope.h5",
                            "--out", str(out)],
    "factors": lambda out: ["factors", "--metrics", "nope.nc", "--out", str(out)],
    "figures": lambda out: ["figures", "--metrics", "nope.nc", "--factors", "nope.nc",
                            "--out", str(out)],
    "explain": lambda out: ["explain", "--config", "nope.yaml", "--out", str(out)],
}


@pytest.mark.parametrize("command", DESTINATION)
def test_destination_under_a_file(command, tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / "sub" / "out"
    code = main(DESTINATION[command](out))
    option = "--cache-dir" if command == "prepare-model" else "--out"
    one_line_error(code, capsys.readouterr().err, command, out, "is a file, not a folder",
                   f"choose another {option}")
    assert (tmp_path / "file").read_text() == "x" and leftovers(tmp_path) == []


@pytest.fixture
def read_only(tmp_path, tmpfs):
    """A folder nobody may write to: a read-only tmpfs as root, else a chmod 555 folder."""
    if os.geteuid() == 0:
        yield tmpfs("ro,size=16k")
        return
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


@pytest.mark.parametrize("command", ["fit", "score", "figures"])
def test_read_only_destination(command, read_only, capsys):
    out = read_only / "out"
    code = main(DESTINATION[command](out))
    one_line_error(code, capsys.readouterr().err, command, out, "cannot write (",
                   "choose another --out")


# ---------------------------------------------------------------- damaged files


def flipped(path, name):
    flip_in_chunk(path, name)
    return path


def truncated(path, name):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


DAMAGED = {
    # (command line of a damaged copy `p` of an input, the dataset it names)
    "fit, flipped v": ("values", flipped, "v",
                       lambda f, p, out: ["fit", str(p), "--out", str(out)]),
    "fit, truncated": ("values", truncated, None,
                       lambda f, p, out: ["fit", str(p), "--out", str(out)]),
    "metrics, flipped v": ("values", flipped, "v",
                           lambda f, p, out: ["metrics", "--values", str(p), "--interactions",
                                              str(f["fit"]), *FAST, "--out", str(out)]),
    "metrics, flipped and": ("fit", flipped, "and",
                             lambda f, p, out: ["metrics", "--values", str(f["values"]),
                                                "--interactions", str(p), *FAST, "--out",
                                                str(out)]),
    "factors, flipped ips": ("metrics", flipped, "ips",
                             lambda f, p, out: ["factors", "--metrics", str(p), *FAST,
                                                "--out", str(out)]),
}


@pytest.mark.parametrize("case", DAMAGED)
def test_damaged_input(case, files, tmp_path, capsys):
    key, damage, dataset, argv = DAMAGED[case]
    bad = damage(shutil.copy(files[key], tmp_path / files[key].name), dataset)
    out = tmp_path / "out.h5"
    command = case.split(",")[0]
    parts = [bad] + ([f"'{dataset}' cannot be read", "damaged"] if dataset else [])
    one_line_error(main(argv(files, bad, out)), capsys.readouterr().err, command, *parts)
    assert not out.exists() and leftovers(tmp_path) == []


# ---------------------------------------------------------------- ips score: lock, resume


def test_second_score_on_the_same_out_fails_at_once(scoring, tmp_path, capsys):
    out = tmp_path / "v.h5"
    with open(tmp_path / ".v.h5.lock", "w") as held:  # another run holds OUT
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write("4242\n")
        held.flush()
        code = main(score_args(scoring, out))
    one_line_error(code, capsys.readouterr().err, "score", out, "another ips run (pid 4242)")
    assert not (tmp_path / "v.h5.partial").exists()  # the holder's resume folder is safe


@pytest.fixture(scope="module")
def partial(scoring, tmp_path_factory):
    """The resume folder of a run killed after scoring every sample, before writing OUT."""
    import ips.scoring.shard

    tmp = tmp_path_factory.mktemp("killed")
    mp = pytest.MonkeyPatch()
    mp.setattr(ips.scoring.shard, "write_values",
               lambda *a: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        main(score_args(scoring, tmp / "v.h5"))
    mp.undo()
    assert len(list((tmp / "v.h5.partial").glob("*.npz"))) == 2
    return tmp / "v.h5.partial"


def drop_key(path):
    with np.load(path) as z:
        kept = {k: z[k] for k in z.files if k != "hidden"}
    path.unlink()
    with open(path, "wb") as f:
        np.savez(f, **kept)


RESUME_DAMAGE = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:300]),
    "empty": lambda p: p.write_bytes(b""),
    "missing key": drop_key,
}


@pytest.mark.parametrize("damage", RESUME_DAMAGE)
def test_damaged_resume_file_is_recomputed(damage, scoring, partial, tmp_path, capsys):
    out = tmp_path / "v.h5"
    shutil.copytree(partial, tmp_path / "v.h5.partial")
    RESUME_DAMAGE[damage](tmp_path / "v.h5.partial" / "000000.npz")
    assert main(score_args(scoring, out)) == 0
    err = capsys.readouterr().err
    assert "000000.npz: unreadable partial result of sample 0" in err
    assert "2 already done (resuming)" in err  # counted, then sample 0 is scored again
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert np.array_equal(ds["v"].values, scoring["v"], equal_nan=True)
    assert not (tmp_path / "v.h5.partial").exists() and leftovers(tmp_path) == []
