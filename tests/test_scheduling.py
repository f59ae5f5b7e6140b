"""How the test command shares the suite between its two xdist workers (the root conftest.py).

A notebook's cells must run in order in one kernel, and a file's module-scoped fixture (a
graded batch, a built wheel, a browser) must be built once. Both hold only if the scheduler
keeps such a unit on one worker. With pytest 9.2 and pytest-xdist 3.8 the old mechanism
(``xdist_group`` marks) was silently ignored: 658 of 1,055 notebook cells failed. The last test
here runs the real test command's configuration on two workers and fails if either breaks.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Set by the two-worker run below: where the module fixture and the tests record themselves.
PROBE = os.environ.get("COURSE_SCHEDULING_PROBE")


def _record(what: str) -> None:
    if PROBE:
        with open(PROBE, "a", encoding="utf-8") as fh:
            fh.write(f"{what} {os.environ.get('PYTEST_XDIST_WORKER', 'main')} {os.getpid()}\n")


@pytest.fixture(scope="module")
def built_once():
    _record("fixture")
    return object()


@pytest.mark.parametrize("i", range(8))
def test_tests_of_a_file_scope_share_its_module_fixture(built_once, i):
    _record("test")
    assert built_once is not None


def _root_conftest(config: pytest.Config):
    return next(p for p in config.pluginmanager.get_plugins()
                if getattr(p, "__file__", None) == str(ROOT / "conftest.py"))


def test_units_are_notebooks_listed_files_and_single_tests(pytestconfig):
    conftest = _root_conftest(pytestconfig)
    assert conftest.scope_of("solutions/00_start_here.ipynb::Cell 3") == "solutions/00_start_here.ipynb"
    assert conftest.scope_of("notebooks/05_training_loop.ipynb::Cell 0") == "notebooks/05_training_loop.ipynb"
    assert conftest.scope_of("tests/test_grade.py::test_x[a-b]") == "tests/test_grade.py"
    assert conftest.scope_of("tests/test_l01_tensors.py::test_x[a::b]") == "tests/test_l01_tensors.py::test_x[a::b]"
    # a parameter that looks like a group suffix (the old mechanism's syntax) is not one
    assert conftest.scope_of("tests/test_predict.py::test_x[a@b]") == "tests/test_predict.py::test_x[a@b]"


@pytest.mark.parametrize("workers", [0, 2])
def test_a_file_with_an_unlisted_module_fixture_fails_naming_it(tmp_path, workers):
    """A new test file with a module-scoped fixture, missing from FILE_SCOPES, would have its
    fixture built on both workers: its tests fail with the file's name instead."""
    out = _run_tmp_project(tmp_path, "import pytest\n\n@pytest.fixture(scope='module')\ndef heavy():\n"
                                     "    return 1\n\ndef test_a(heavy):\n    assert heavy\n", workers)
    assert out.returncode == 1 and "INTERNALERROR" not in out.stdout + out.stderr, out.stdout + out.stderr
    assert "tests/test_new.py uses a module-scoped fixture (heavy) but is not in FILE_SCOPES" in out.stdout, out.stdout


@pytest.mark.slow
def test_two_workers_keep_a_notebook_and_a_fixture_file_each_on_one_worker(tmp_path):
    """The test command's own options (pyproject.toml's addopts: two workers), on one notebook
    and this file's fixture tests. Fails when two cells of the notebook run on different
    workers (the later ones then fail with NameError, and the report shows two workers) or when
    the module fixture is built twice."""
    probe = tmp_path / "probe.txt"
    notebook = "solutions/00_start_here.ipynb"
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:randomly", notebook,
         "tests/test_scheduling.py::test_tests_of_a_file_scope_share_its_module_fixture"],
        cwd=ROOT, capture_output=True, text=True, timeout=400,
        env={**os.environ, "COURSE_SCHEDULING_PROBE": str(probe)})
    report = out.stdout + out.stderr
    workers: dict[str, set[str]] = defaultdict(set)
    for worker, nodeid in re.findall(r"\[(gw\d+)\][^\n]*? (?:PASSED|FAILED|ERROR|SKIPPED) ([^\n]+)", report):
        # pytest -v shows an nbval cell as "solutions/00_start_here::ipynb::Cell 0"
        workers[notebook if "00_start_here" in nodeid else nodeid.split("::")[0]].add(worker)
    assert out.returncode == 0, report[-3000:]
    assert set(workers) == {notebook, "tests/test_scheduling.py"}, report[-3000:]
    assert workers[notebook] and len(workers[notebook]) == 1, f"the notebook's cells ran on {workers[notebook]}"
    assert len(workers["tests/test_scheduling.py"]) == 1, workers
    # both workers were used: otherwise this test would pass without testing the scheduler
    assert workers[notebook] != workers["tests/test_scheduling.py"], workers
    lines = probe.read_text().split()
    builds = [lines[i + 1:i + 3] for i in range(0, len(lines), 3) if lines[i] == "fixture"]
    tests = [lines[i + 1] for i in range(0, len(lines), 3) if lines[i] == "test"]
    assert len(tests) == 8, lines
    assert len(builds) == 1, f"the module fixture was built {len(builds)} times: {builds}"


def _run_tmp_project(tmp_path: Path, test_source: str, workers: int = 0, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "tests").mkdir(exist_ok=True)
    (tmp_path / "conftest.py").write_text((ROOT / "conftest.py").read_text())
    (tmp_path / "tests" / "test_new.py").write_text(test_source)
    xdist = ["-n", str(workers)] if workers else ["-p", "no:xdist"]
    return subprocess.run([sys.executable, "-m", "pytest", *xdist, "-p", "no:nbval", "-p", "no:cacheprovider",
                           "-o", "addopts=", "tests"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**{k: v for k, v in os.environ.items() if k != "CI"}, "PYTHONPATH": str(ROOT), **env})


def test_under_ci_a_skipped_test_fails_the_run_and_an_xfail_does_not(tmp_path):
    source = ("import pytest\n\ndef test_ok():\n    pass\n\n@pytest.mark.xfail(strict=True)\ndef test_known():\n"
              "    assert False\n\ndef test_needs_a_browser():\n    pytest.skip('no chromium here')\n")
    assert _run_tmp_project(tmp_path, source).returncode == 0
    ci = _run_tmp_project(tmp_path, source, CI="true")
    assert ci.returncode == 1 and "1 test(s) skipped" in ci.stderr and "no chromium here" in ci.stderr, ci.stderr
    assert _run_tmp_project(tmp_path, source.split("\n\ndef test_needs")[0] + "\n", CI="true").returncode == 0
