"""What JupyterLab opens, with the course's jupytext.toml and jupytext's contents manager (the
one JupyterLab uses): a learner notebook is only ever its .ipynb, whatever text file lies next
to it; a solution's stale .py never silently replaces its notebook (jupytext's guard is on).
The real-browser version of the first sequence is in tests/test_browser.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import nbformat
import pytest
from jupytext import TextFileContentsManager
from tornado.web import HTTPError

from course_utils import build

ROOT = Path(__file__).resolve().parent.parent
STEM = "00_start_here"


@pytest.fixture
def course(tmp_path):
    shutil.copy(ROOT / "jupytext.toml", tmp_path / "jupytext.toml")
    for folder in ("notebooks", "solutions"):
        (tmp_path / folder).mkdir()
    shutil.copy(build.NOTEBOOKS / f"{STEM}.ipynb", tmp_path / "notebooks")
    for ext in (".ipynb", ".py"):
        shutil.copy(build.SOLUTIONS / f"{STEM}{ext}", tmp_path / "solutions")
    return tmp_path


def _cm(root: Path) -> TextFileContentsManager:
    cm = TextFileContentsManager()
    cm.root_dir = str(root)
    return cm


def _age(path: Path, seconds: float) -> None:
    st = path.stat()
    os.utime(path, (st.st_atime - seconds, st.st_mtime - seconds))


def _edit_elsewhere(path: Path, marker: str) -> None:
    """VS Code, Colab or a script: the .ipynb changes, nothing else does."""
    nb = nbformat.read(path, as_version=4)
    i = next(i for i, c in enumerate(nb.cells) if c.source.startswith("def celsius_to_fahrenheit"))
    nb.cells[i].source = f"def celsius_to_fahrenheit(c):\n    return c * 9 / 5 + 32  # {marker}"
    nbformat.write(nb, path)


def _sources(model) -> str:
    return "\n".join(c["source"] for c in model["content"]["cells"])


@pytest.mark.parametrize("py_age", [60, -60], ids=["older-py", "newer-py"])
def test_learner_notebook_edited_outside_lab_opens_with_the_learners_work(course, py_age):
    """Even with a leftover text pair (older or newer, as after a pull of the old layout), the
    learner's .ipynb is what opens, and saving it writes no .py."""
    ipynb = course / "notebooks" / f"{STEM}.ipynb"
    py = ipynb.with_suffix(".py")
    py.write_text(build.py_text(nbformat.read(ipynb, as_version=4), py))  # fresh stubs
    _edit_elsewhere(ipynb, "my answer")
    _age(py, py_age)
    cm = _cm(course)
    model = cm.get(f"notebooks/{STEM}.ipynb")
    assert "# my answer" in _sources(model)
    py.unlink()
    cm.save(model, f"notebooks/{STEM}.ipynb")
    assert not py.exists() and "# my answer" in ipynb.read_text()
    assert sorted(p.name for p in (course / "notebooks").iterdir() if not p.name.startswith(".")) == [f"{STEM}.ipynb"]


def test_stale_solution_py_does_not_win_silently(course):
    """An author's .ipynb edited elsewhere, its .py older and different: JupyterLab refuses to
    open it (and says which is newer) instead of showing the .py's cells; nothing is written."""
    ipynb, py = course / "solutions" / f"{STEM}.ipynb", course / "solutions" / f"{STEM}.py"
    _edit_elsewhere(ipynb, "edited in VS Code")
    _age(py, 60)
    before = ipynb.read_text(), py.read_text()
    with pytest.raises(HTTPError) as err:
        _cm(course).get(f"solutions/{STEM}.ipynb")
    assert err.value.status_code == 400 and "is more recent than" in err.value.log_message
    assert (ipynb.read_text(), py.read_text()) == before


def test_solution_pair_with_git_checkout_mtimes_opens(course):
    """After a clone the mtimes are arbitrary but the pair agrees: it opens."""
    py = course / "solutions" / f"{STEM}.py"
    _age(py, 3600)
    model = _cm(course).get(f"solutions/{STEM}.ipynb")
    assert model["content"]["cells"][0]["source"].startswith("# 00")


def test_build_check_says_which_side_of_a_solution_pair_is_newer(course, monkeypatch):
    monkeypatch.setattr(build, "ROOT", course)
    monkeypatch.setattr(build, "SOLUTIONS", course / "solutions")
    monkeypatch.setattr(build, "NOTEBOOKS", course / "notebooks")
    ipynb, py = course / "solutions" / f"{STEM}.ipynb", course / "solutions" / f"{STEM}.py"
    _edit_elsewhere(ipynb, "edited in VS Code")
    _age(py, 60)
    problem = build.pair_problem(STEM)
    assert f"solutions/{STEM}.ipynb is newer than {STEM}.py (by 60 s)" in problem
    assert f"jupytext --to py:percent solutions/{STEM}.ipynb" in problem and "build --execute" in problem
