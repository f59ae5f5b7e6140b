"""binder/ stays consistent with requirements.txt, and builds what the course needs.

repo2docker reads only binder/ when it exists, so the runtime requirements are repeated there;
these tests keep the two lists in line (same packages, compatible versions), with a CPU-only
torch and without the test-only packages.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from course_utils import jupyter_settings

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def parse(path: Path) -> tuple[dict[str, Requirement], dict[str, str], list[str]]:
    """``(requirements by name, section of each name, option lines)``; sections are the
    ``# comment`` headers above blocks."""
    reqs: dict[str, Requirement] = {}
    sections: dict[str, str] = {}
    options: list[str] = []
    section = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            section = line.lstrip("# ").split(" ")[0].lower()
            continue
        line = line.split(" #", 1)[0].strip()
        if line.startswith("-"):
            options.append(line)
            continue
        req = Requirement(line)
        name = canonicalize_name(req.name)
        reqs[name] = req
        sections[name] = section
    return reqs, sections, options


ROOT_REQS, ROOT_SECTIONS, ROOT_OPTIONS = parse(ROOT / "requirements.txt")
BINDER_REQS, _, BINDER_OPTIONS = parse(BINDER / "requirements.txt")
DEV_REQS, _, DEV_OPTIONS = parse(ROOT / "requirements-dev.txt")
TEST_ONLY = set(DEV_REQS)
RUNTIME = set(ROOT_REQS)


def test_learners_do_not_install_test_only_packages():
    assert {"pytest", "nbval", "playwright"} <= TEST_ONLY
    assert not TEST_ONLY & RUNTIME, "test-only packages belong in requirements-dev.txt"
    assert "-r requirements.txt" in DEV_OPTIONS, "requirements-dev.txt installs the runtime too"
    assert "torch" in RUNTIME and "jupyterlab" in RUNTIME


def test_same_runtime_packages_without_test_only_ones():
    # torchvision: requirements.txt leaves it out (pip would take PyPI's build); binder/ pins the
    # pair of its CPU torch (course_utils/extras.py)
    assert set(BINDER_REQS) - {"torchvision"} == RUNTIME, (
        f"missing in binder/: {sorted(RUNTIME - set(BINDER_REQS))}; "
        f"extra in binder/: {sorted(set(BINDER_REQS) - RUNTIME - {'torchvision'})}")


def test_torchvision_is_the_pair_of_binders_torch():
    from course_utils import extras

    torch_pin = next(s.version for s in BINDER_REQS["torch"].specifier if s.operator == "==")
    vision_pin = next(s.version for s in BINDER_REQS["torchvision"].specifier if s.operator == "==")
    assert vision_pin.startswith(extras.torchvision_for(torch_pin) + ".") and vision_pin.endswith("+cpu"), vision_pin


@pytest.mark.parametrize("name", sorted(RUNTIME))
def test_versions_are_compatible(name):
    root, binder = ROOT_REQS[name], BINDER_REQS[name]
    pins = [s for s in binder.specifier if s.operator == "=="]
    if pins:
        version = Version(pins[0].version)
        assert root.specifier.contains(version, prereleases=True), \
            f"binder pins {name}=={version}, outside requirements.txt's {root.specifier}"
    else:
        assert binder.specifier == root.specifier, \
            f"{name}: binder/ has {binder.specifier}, requirements.txt has {root.specifier}"


def test_torch_is_the_cpu_build():
    torch = BINDER_REQS["torch"]
    pins = [s.version for s in torch.specifier if s.operator == "=="]
    assert pins and pins[0].endswith("+cpu"), "binder/ must pin the CPU-only torch wheel (small image)"
    assert f"--extra-index-url {CPU_INDEX}" in BINDER_OPTIONS or f"--index-url {CPU_INDEX}" in BINDER_OPTIONS


def test_the_package_is_installed_by_postbuild_not_requirements():
    assert not any(o.startswith("-e") for o in BINDER_OPTIONS), \
        "repo2docker resolves relative paths in binder/requirements.txt unreliably; install the package in postBuild"


def test_runtime_python_is_supported():
    text = (BINDER / "runtime.txt").read_text().strip()
    m = re.fullmatch(r"python-3\.(\d+)", text)
    assert m, f"runtime.txt should read python-3.X, not {text!r}"
    assert 10 <= int(m.group(1)) <= 13, "the tested range is Python 3.10-3.13"
    pyproject = (ROOT / "pyproject.toml").read_text()
    low = re.search(r'requires-python\s*=\s*">=3\.(\d+)"', pyproject)
    assert low and int(m.group(1)) >= int(low.group(1))


def test_postbuild_is_a_strict_executable_script():
    post = BINDER / "postBuild"
    text = post.read_text()
    assert os.access(post, os.X_OK), "postBuild must be executable (git update-index --chmod=+x)"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    assert text.startswith("#!/bin/bash") or text.startswith("#!/usr/bin/env bash")
    assert lines[0].startswith("set -e"), "the first command of postBuild must be `set -e` (fail the build early)"
    assert re.search(r"pip install .*--no-deps \.$", text, re.M), "postBuild installs the course package"
    assert not re.search(r"pip install .*-e \.", text), \
        "not editable: a hub's persistent home volume hides the clone an editable install points to"
    assert "--no-deps" in text, "pip must not re-resolve torch while installing the package"
    assert "python -m course_utils doctor" in text, "postBuild should fail the build on a broken environment"
    assert "python -m course_utils.jupyter_settings" in text
    settings = (ROOT / "course_utils" / "jupyter_settings.py").read_text()
    for key in ("Jupytext Notebook", "autoStartDefaultKernel", "fetchNews"):
        assert key in settings
    bash = shutil.which("bash")
    if bash:
        proc = subprocess.run([bash, "-n", str(post)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


def test_binder_opens_the_first_notebook_from_the_readme_badge():
    assert (ROOT / "notebooks" / "00_start_here.ipynb").exists()
    readme = (ROOT / "README.md").read_text()
    m = re.search(r"https://mybinder\.org/v2/gh/[^)\s]+", readme)
    assert m, "README.md should have a Binder badge linking to mybinder.org"
    assert "labpath=notebooks%2F00_start_here.ipynb" in m.group(0)
    assert "mybinder.org/badge_logo.svg" in readme


def test_binder_start_limits_threads_and_hands_over():
    start = ROOT / "binder" / "start"
    text = start.read_text()
    assert start.stat().st_mode & 0o111, "binder/start must be executable"
    assert 'export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"' in text
    assert text.rstrip().endswith('exec "$@"'), "start must hand over to the command it is given"


def test_jupyter_settings_write_into_the_environment_they_run_in(tmp_path, monkeypatch):
    """Issue 24 D: run from a venv, the overrides go to the venv (sys.prefix), not to the folder
    jupyterlab.commands.get_app_dir() finds (the system Python's, for a venv without its own)."""
    import sys

    pytest.importorskip("jupyterlab")
    import jupyterlab.commands

    from course_utils import jupyter_settings

    venv, system = tmp_path / "venv", tmp_path / "system" / "share" / "jupyter" / "lab"
    system.mkdir(parents=True)
    monkeypatch.setattr(sys, "prefix", str(venv))
    monkeypatch.setattr(jupyterlab.commands, "get_app_dir", lambda: str(system))
    monkeypatch.delenv("JUPYTERLAB_DIR", raising=False)
    assert jupyter_settings.main([]) == 0
    written = venv / "share" / "jupyter" / "lab" / "settings" / "overrides.json"
    assert json.loads(written.read_text()) == jupyter_settings.OVERRIDES
    assert not (system / "settings").exists()
    monkeypatch.setenv("JUPYTERLAB_DIR", str(tmp_path / "chosen"))  # JupyterLab's own override wins
    assert jupyter_settings.settings_dir() == tmp_path / "chosen" / "settings"


def _schema(plugin_id: str) -> dict:
    import jupyterlab

    package, plugin = plugin_id.split(":")
    path = Path(jupyterlab.__file__).parent / "schemas" / package / f"{plugin}.json"
    if not path.exists():  # a plugin of another package (jupytext...): its own schemas
        pytest.skip(f"no schema of {plugin_id} in jupyterlab")
    return json.loads(path.read_text())


@pytest.mark.parametrize("plugin_id", sorted(jupyter_settings.OVERRIDES))
def test_overrides_are_settings_the_installed_jupyterlab_knows(plugin_id):
    """A misspelt key or a value of the wrong type does not do what it says, and no learner sees
    why: each override is a property of its plugin's schema in the installed JupyterLab, with a
    value the schema allows."""
    pytest.importorskip("jupyterlab")

    props = _schema(plugin_id)["properties"]
    for key, value in jupyter_settings.OVERRIDES[plugin_id].items():
        assert key in props, f"{plugin_id} has no setting {key!r}"
        spec = props[key]
        if "oneOf" in spec:
            assert value in [c["const"] for c in spec["oneOf"] if "const" in c], (key, value)
        kind = {"boolean": bool, "string": str, "object": dict}.get(spec.get("type", ""))
        if kind:
            assert isinstance(value, kind), (key, value)


def test_the_course_lab_and_images_turn_the_news_pop_up_off():
    """JupyterLab's "Jupyter news" question covers every notebook until answered: fetchNews
    "false" (never; "none" is the asking default) and no update check, in the overrides that
    binder/postBuild and the JupyterHub recipe write and in what `lab` writes."""

    news = {"fetchNews": "false", "checkForUpdates": False}
    assert jupyter_settings.NO_NEWS == {"@jupyterlab/apputils-extension:notification": news}
    assert jupyter_settings.OVERRIDES["@jupyterlab/apputils-extension:notification"] == news
