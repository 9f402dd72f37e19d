"""The conda environment (envs/ips.yaml) pins exactly what pyproject.toml pins."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]

# name[extras]==version; a trailing environment marker is not allowed in our pins
PIN = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*==\s*([^\s;,]+)\s*$")


def _pins(requirements, source):
    """Map normalised name -> public version; every requirement must be an exact pin."""
    pins, unpinned = {}, []
    for req in requirements:
        m = PIN.match(req)
        if not m:
            unpinned.append(req)
            continue
        name = m.group(1).lower().replace("_", "-").replace(".", "-")
        assert name not in pins, f"{source}: {name} is listed twice"
        # a local label (torch==2.13.0+cpu) selects a build, not a version
        pins[name] = m.group(2).split("+", 1)[0]
    assert not unpinned, f"{source}: not an exact '==' pin: {unpinned}"
    return pins


def _pyproject_pins():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project.get("optional-dependencies", {}).values():
        reqs += extra
    return _pins(reqs, "pyproject.toml")


def _conda_pins():
    env = yaml.safe_load((ROOT / "envs" / "ips.yaml").read_text())
    pip_sections = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_sections) == 1, "envs/ips.yaml: expected one pip section"
    # lines such as --extra-index-url are pip options, not packages
    reqs = [r for r in pip_sections[0] if not r.lstrip().startswith("-")]
    return _pins(reqs, "envs/ips.yaml")


def test_conda_env_has_python_and_pip():
    env = yaml.safe_load((ROOT / "envs" / "ips.yaml").read_text())
    deps = [d for d in env["dependencies"] if isinstance(d, str)]
    assert "conda-forge" in env["channels"]
    assert any(d.replace(" ", "").startswith("python=3.11") for d in deps)
    assert "pip" in deps


def test_conda_env_pins_match_pyproject():
    py, conda = _pyproject_pins(), _conda_pins()
    problems = [f"only in pyproject.toml: {n}=={py[n]}" for n in sorted(py.keys() - conda.keys())]
    problems += [f"only in envs/ips.yaml: {n}=={conda[n]}" for n in sorted(conda.keys() - py.keys())]
    problems += [
        f"version differs for {n}: pyproject.toml {py[n]} vs envs/ips.yaml {conda[n]}"
        for n in sorted(py.keys() & conda.keys())
        if py[n] != conda[n]
    ]
    assert not problems, "pins disagree:\n  " + "\n  ".join(problems)
