"""One thread policy (course_utils/threads.py), applied by every way the course starts torch."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from course_utils import launch, threads

ROOT = Path(__file__).resolve().parent.parent


def test_policy_default_and_overrides():
    assert threads.DEFAULT == 1
    assert threads.kernel_threads({}) == 1
    assert threads.kernel_threads({"OMP_NUM_THREADS": "3"}) == 3
    assert threads.kernel_threads({"COURSE_TORCH_THREADS": "2", "OMP_NUM_THREADS": "3"}) == 2
    for junk in ("", "0", "-2", "lots"):
        assert threads.kernel_threads({"COURSE_TORCH_THREADS": junk}) == 1
    assert threads.kernel_env({"COURSE_TORCH_THREADS": "4"}) == {"OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "4"}
    env = {}
    assert threads.apply_env(env) == 1 and env["OMP_NUM_THREADS"] == "1"


def test_apply_torch_sets_and_keeps(monkeypatch):
    import torch

    before = torch.get_num_threads()
    monkeypatch.setenv("COURSE_TORCH_THREADS", "2")
    try:
        assert threads.apply_torch() == 2 and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_binder_start_repeats_the_default():
    text = (ROOT / "binder" / "start").read_text()
    m = re.search(r'OMP_NUM_THREADS="\$\{OMP_NUM_THREADS:-(\d+)\}"', text)
    assert m and int(m.group(1)) == threads.DEFAULT


def test_the_tests_and_their_kernels_use_the_policy():
    # conftest.py applied it to this process; nbval and nbclient kernels inherit the variable
    assert os.environ["OMP_NUM_THREADS"] == str(threads.kernel_threads())


def test_build_execute_and_the_grader_use_the_policy():
    build = (ROOT / "course_utils" / "build.py").read_text()
    assert "threads.kernel_env(" in build
    grade = (ROOT / "course_utils" / "instructor" / "grade_run.py").read_text()
    assert "thread_policy.kernel_threads()" in grade


def test_launcher_exports_the_policy_to_jupyterlab(monkeypatch, capsys):
    seen = {}

    def fake_exec(path, argv):
        seen["argv"] = argv
        seen["omp"] = os.environ.get("OMP_NUM_THREADS")

    monkeypatch.setenv("COURSE_TORCH_THREADS", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setattr(os, "execv", fake_exec)
    monkeypatch.setattr(os, "chdir", lambda p: None)
    assert launch.main(["--no-browser"]) == 0
    assert seen["omp"] == "1" and "--no-browser" in seen["argv"]
    assert "1 CPU thread per notebook" in capsys.readouterr().out


@pytest.mark.slow
def test_a_kernel_started_like_the_tests_runs_one_thread():
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import torch; print(torch.get_num_threads())")])
    NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    assert nb.cells[0].outputs[0]["text"].strip() == str(threads.kernel_threads())
