"""torchvision: which lessons need it, the pair for each torch, and what a learner sees without it."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

from course_utils import doctor, extras

ROOT = Path(__file__).resolve().parent.parent


def test_the_list_is_exactly_the_lessons_that_import_torchvision():
    importing = sorted(p.stem for p in (ROOT / "solutions").glob("[0-9][0-9]_*.py")
                       if re.search(r"^\s*(import|from) torchvision", p.read_text(encoding="utf-8"), re.M))
    assert importing == sorted(extras.TORCHVISION_LESSONS)


@pytest.mark.parametrize("torch_version, series", [
    ("2.13.0+cpu", "0.28"), ("2.14.1+cu130", "0.29"), ("2.9.1", "0.24"), ("2.8.0", "0.23"), ("2.15.0", "0.30"),
])
def test_the_pair_of_each_torch(torch_version, series):
    assert extras.torchvision_for(torch_version) == series


def test_the_install_line_keeps_the_index_the_torch_came_from():
    assert extras.install_line("2.13.0+cpu") == (
        "python -m pip install torch==2.13.0 torchvision==0.28.* --index-url https://download.pytorch.org/whl/cpu")
    assert extras.install_line("2.14.1+cu130").endswith("--index-url https://download.pytorch.org/whl/cu130")
    assert extras.install_line("2.13.0") == "python -m pip install torch==2.13.0 torchvision==0.28.*"


def _fake_torchvision(monkeypatch, module):
    monkeypatch.setitem(sys.modules, "torchvision", module)


def test_missing_torchvision_is_named_with_the_line_that_installs_the_pair(monkeypatch):
    import torch

    _fake_torchvision(monkeypatch, None)  # `import torchvision` raises ModuleNotFoundError
    assert extras.torchvision_problem() == "torchvision is not installed"
    with pytest.raises(ImportError, match=re.escape(extras.install_line(torch.__version__))):
        extras.require_torchvision()
    check = doctor.check_torchvision()
    assert check.status == "WARN" and "13_images_from_files" in check.detail
    assert f"torchvision=={extras.torchvision_for(torch.__version__)}.*" in check.fix


def test_a_torchvision_for_another_torch_is_named(monkeypatch):
    _fake_torchvision(monkeypatch, types.SimpleNamespace(__version__="0.20.1"))
    problem = extras.torchvision_problem()
    assert problem is not None and "0.20.1 does not go with torch" in problem
    assert doctor.check_torchvision().status == "WARN"


def test_the_right_pair_passes(monkeypatch):
    import torch

    _fake_torchvision(monkeypatch, types.SimpleNamespace(__version__=extras.torchvision_for(torch.__version__) + ".0"))
    assert extras.torchvision_problem() is None
    extras.require_torchvision()  # nothing raised
    assert doctor.check_torchvision().status == "OK"


@pytest.mark.vision
def test_the_real_torchvision_goes_with_this_torch():
    assert extras.torchvision_problem() is None
    from torchvision.transforms import v2

    assert v2.ToDtype is not None
