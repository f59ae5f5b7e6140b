"""The wheel installs what the course needs, and works with no clone next to it.

pyproject.toml's dependencies are the runtime half of requirements.txt (lesson extras as
optional extras), requirements-dev.txt is the [test] extra, and a wheel built from this
checkout, installed without a clone, runs ``doctor``, ``lab``, a check and the grader.
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import wheel_env

ROOT = Path(__file__).resolve().parent.parent

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _reqs(path: Path) -> dict[str, Requirement]:
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            req = Requirement(line)
            out[canonicalize_name(req.name)] = req
    return out


def _named(reqs: list[str]) -> dict[str, Requirement]:
    return {canonicalize_name(Requirement(r).name): Requirement(r) for r in reqs}


def test_runtime_requirements_match_the_package_metadata():
    runtime = _reqs(ROOT / "requirements.txt")
    declared = {**_named(PYPROJECT["dependencies"]), **_named(PYPROJECT["optional-dependencies"]["export"])}
    for name, req in runtime.items():
        assert name in declared, f"{name} is in requirements.txt but not in pyproject.toml"
        assert req.specifier == declared[name].specifier, f"{name}: {req.specifier} vs {declared[name].specifier}"
    torch = declared["torch"]
    assert not any(s.operator == "==" for s in torch.specifier), "torch is a range, not a pin"
    assert torch.specifier.contains("2.8.0") and torch.specifier.contains("2.13.0+cpu", prereleases=True)


def test_test_only_requirements_are_the_test_extra():
    dev = _reqs(ROOT / "requirements-dev.txt")
    test = _named(PYPROJECT["optional-dependencies"]["test"])
    assert set(test) <= set(dev), sorted(set(test) - set(dev))
    assert not set(dev) & set(_reqs(ROOT / "requirements.txt"))


def test_every_subpackage_is_listed():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "course_utils").rglob("__init__.py")}
    assert found <= listed, f"add to [tool.setuptools] packages: {sorted(found - listed)}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A wheel of this checkout installed (no deps: they come from the base Python) into a
    fresh environment without course_utils; returns (python, wheel, a folder outside any clone)."""
    tmp = tmp_path_factory.mktemp("wheel-install")
    wheel = wheel_env.build_wheel(tmp / "dist")
    python = wheel_env.make_venv(tmp / "venv")
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    proc = wheel_env.run(python, "-m", "pip", "install", "-q", "--no-deps", str(wheel), cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    return python, wheel, elsewhere


@pytest.mark.slow
def test_wheel_metadata_declares_the_dependencies(installed):
    _, wheel, _ = installed
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
        names = z.namelist()
    requires = [line.split(":", 1)[1].strip() for line in meta.splitlines() if line.startswith("Requires-Dist:")]
    by_name = {canonicalize_name(Requirement(r).name): r for r in requires}
    for name in ("torch", "jupyterlab", "ipywidgets", "jupytext", "matplotlib", "nbclient", "scikit-learn"):
        assert name in by_name, f"no Requires-Dist for {name}: {requires}"
    assert "extra ==" in by_name["onnxruntime"] and "extra ==" in by_name["pytest"]
    assert "course_utils/lessons/00_start_here.ipynb" in names, "the lessons ship in the wheel"


@pytest.mark.slow
def test_doctor_from_the_wheel_without_a_clone(installed):
    python, _, elsewhere = installed
    proc = wheel_env.run(python, "-m", "course_utils", "doctor", cwd=elsewhere, timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "FAIL" not in proc.stdout
    assert "(not editable)" in proc.stdout and "site-packages" in proc.stdout, proc.stdout


@pytest.mark.slow
def test_a_check_from_the_wheel(installed):
    python, _, elsewhere = installed
    code = ("import course_utils, json; from course_utils import grading\n"
            "ex = grading.exercises_for('01_tensors'); name = sorted(ex)[0] if hasattr(ex, 'keys') else None\n"
            "ids = [i for i in grading.exercises() if i.startswith('01_tensors')]\n"
            "res = grading.check(ids[0], grading.reference(ids[0]))\n"
            "print(json.dumps({'file': course_utils.__file__, 'passed': res.passed}))")
    proc = wheel_env.run(python, "-c", code, cwd=elsewhere, timeout=180, COURSE_PROGRESS_LOG="")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["passed"] and "site-packages" in out["file"]


@pytest.mark.slow
def test_lab_without_a_clone_copies_the_lessons_and_starts_jupyterlab(installed, tmp_path):
    python, _, elsewhere = installed
    home = tmp_path / "course"
    mine = home / "notebooks" / "01_tensors.ipynb"
    mine.parent.mkdir(parents=True)
    mine.write_text("my work")  # never overwritten
    # `--version` makes JupyterLab print its version and exit instead of serving
    proc = wheel_env.run(python, "-m", "course_utils", "lab", "--version", cwd=elsewhere, COURSE_HOME=str(home))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    n = len(list((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))) - 1
    assert f"copied {n} lessons" in proc.stdout and "1 CPU thread per notebook" in proc.stdout, proc.stdout
    assert proc.stdout.strip().splitlines()[-1].startswith("4."), proc.stdout
    assert (home / "notebooks" / "00_start_here.ipynb").exists() and mine.read_text() == "my work"


@pytest.mark.slow
def test_the_grader_from_the_wheel(installed, tmp_path):
    python, _, elsewhere = installed
    sub = tmp_path / "submissions" / "alice"
    sub.mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / "00_start_here.ipynb", sub / "00_start_here.ipynb")
    proc = wheel_env.run(python, "-m", "course_utils", "grade", str(tmp_path / "submissions"), "--workers", "1",
                         "--json", str(tmp_path / "grades.json"), cwd=elsewhere, timeout=300, COURSE_PROGRESS_LOG="")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads((tmp_path / "grades.json").read_text())
    rows = rows["rows"] if isinstance(rows, dict) else rows
    assert rows and all(r["status"] == "correct" for r in rows), rows
