"""The front door: `import ips` names what a user calls, each the object of its module, and
loads nothing heavy until one is used."""

import importlib
import subprocess
import sys

import pytest

import ips


@pytest.mark.parametrize("name", sorted(ips._EXPORTS))
def test_each_name_is_its_modules_object(name):
    assert getattr(ips, name) is getattr(importlib.import_module(ips._EXPORTS[name]), name)
    assert name in dir(ips)


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        ips.nothing  # noqa: B018


def test_import_ips_loads_no_torch():
    code = "import sys, ips; ips.__version__; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
