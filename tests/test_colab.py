"""The Colab badge and setup cell of every learner notebook (course_utils/colab.py).

The install is tested offline: a wheel built from this checkout, a fresh virtual environment
without the course package, and the learner notebook run there by nbclient, its setup cell
pointed at the wheel through ``COURSE_PIP_SOURCE``.
"""

from __future__ import annotations

import copy
import os

import nbformat
import pytest

from course_utils import build, colab, links
import wheel_env


@pytest.mark.parametrize("stem", build.solution_stems())
def test_every_learner_notebook_starts_with_the_badge_and_setup_cell(stem):
    nb = nbformat.read(build.NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    setup = [c for c in nb.cells if colab.SETUP_TAG in c.metadata.get("tags", [])]
    assert [c.cell_type for c in setup] == ["markdown", "code"]
    assert nb.cells.index(setup[0]) <= 1, "right after the title"
    assert links.colab_url(f"notebooks/{stem}.ipynb") in setup[0].source
    code = setup[1].source
    compile(code, stem, "exec")
    assert links.pip_source() in code and 'find_spec("course_utils") is None' in code
    if stem.startswith("09"):
        assert "course_utils[export]" in code and "onnxruntime" in code
    else:
        assert "[export]" not in code


def test_extras_come_from_pyproject():
    assert any(r.startswith("onnx") for r in colab.extra_requirements("export"))
    assert set(colab.LESSON_EXTRAS.values()) <= {"export"}


def _run_setup_cell(tmp_path, stem, *, colab_runtime=False, pip_args=""):
    from nbclient import NotebookClient

    wheel = wheel_env.build_wheel(tmp_path / "wheel")
    python = wheel_env.make_venv(tmp_path / "venv")
    jupyter_path = wheel_env.kernelspec(python, "fresh-venv", tmp_path / "share")
    nb = nbformat.read(build.NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    cells = [c for c in nb.cells if colab.SETUP_TAG in c.metadata.get("tags", []) and c.cell_type == "code"]
    probe = nbformat.v4.new_code_cell(
        "import importlib.util; print('before:', importlib.util.find_spec('course_utils'))")
    after = nbformat.v4.new_code_cell("import course_utils, sys; print('after:', course_utils.__file__, sys.prefix)")
    fake_colab = nbformat.v4.new_code_cell(
        "import sys, types; sys.modules['google.colab'] = types.ModuleType('google.colab')")
    again = copy.deepcopy(cells[0])  # the same cell run a second time: course_utils is there now
    again.id = "setup-again"  # cell ids are unique in a notebook (nbformat would rename it, with a warning)
    test_nb = nbformat.v4.new_notebook(cells=([fake_colab] if colab_runtime else []) + [probe, cells[0], again, after])
    work = tmp_path / "work"
    work.mkdir()
    env = wheel_env.clean_env(JUPYTER_PATH=str(jupyter_path), COURSE_PIP_SOURCE=wheel.as_uri(),
                              COURSE_PIP_ARGS=pip_args, COURSE_PROGRESS_LOG="")
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)  # the kernel inherits it (no PYTHONPATH to this checkout)
    try:
        NotebookClient(test_nb, timeout=600, kernel_name="fresh-venv",
                       resources={"metadata": {"path": str(work)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    out = ["".join(o.get("text", "") or str(o.get("evalue", "")) for o in c.outputs) for c in test_nb.cells]
    return out, tmp_path / "venv"


@pytest.mark.slow
def test_setup_cell_installs_the_wheel_in_a_fresh_environment_then_does_nothing(tmp_path):
    out, venv = _run_setup_cell(tmp_path, "09_persistence")
    before, install, again, after = out[-4:]
    assert "before: None" in before
    assert "Installed the course package from file://" in install and "onnxruntime" in install
    assert again.strip() == "", "a second run (course_utils present) must do nothing"
    assert "after:" in after and str(venv) in after.split("after:")[1], after


@pytest.mark.slow
def test_setup_cell_on_colab_keeps_colabs_packages(tmp_path):
    out, venv = _run_setup_cell(tmp_path, "00_start_here", colab_runtime=True)
    before, install, again, after = out[-4:]
    assert "before: None" in before and "Installed the course package" in install
    assert str(venv) in after.split("after:")[1]
    # --no-deps on Colab: nothing but the course package went into the environment
    site = next(venv.glob("lib/python3*/site-packages"))
    installed = {p.name.split("-")[0].lower() for p in site.glob("*.dist-info")}
    assert installed - {"pip", "setuptools"} == {"course_utils"}, installed
