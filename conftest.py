"""Shared test setup.

- Progress events written while testing go to a temporary log, never to the tester's home;
  notebook kernels inherit the variable (and ``OMP_NUM_THREADS=1``, see below).
- Learner notebooks: every check cell (tagged ``check:NAME`` by build, course_utils/cells.py)
  must report "not attempted" when nbval runs the untouched notebook: a stub that passes or
  fails a check is a broken exercise.
- Scheduling on the two xdist workers (``--dist loadscope --no-loadscope-reorder``, set in
  pyproject.toml): see :func:`scope_of` and :func:`pytest_xdist_make_scheduler`.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_LOG_DIR = tempfile.mkdtemp(prefix="course-test-progress-")
atexit.register(shutil.rmtree, _LOG_DIR, True)  # one per pytest process: 599 were left after a day
os.environ["COURSE_PROGRESS_LOG"] = os.path.join(_LOG_DIR, "progress.jsonl")
# Two pytest workers each drive a kernel on a 2-core machine: the course's thread policy
# (course_utils/threads.py: one thread per kernel, with the measured reason) avoids
# oversubscription. `build --execute` stores solution outputs with the same setting.
from course_utils import threads  # noqa: E402

threads.apply_env()
from course_utils import cells  # noqa: E402  (the cell grammar: which cell checks what)


def _outputs_text(outputs) -> str:
    parts = []
    for out in outputs or []:
        if "text" in out:
            parts.append(out["text"])
        for key in ("text/plain", "text/html"):
            if key in out.get("data", {}):
                parts.append(out["data"][key])
    return "\n".join(parts)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    outcome = yield
    cell = getattr(item, "cell", None)
    path = Path(str(getattr(item, "path", "")))
    if cell is None or path.parent.name != "notebooks" or outcome.excinfo is not None:
        return
    checks = [name for role, name in cells.role_tags(cell) if role == cells.CHECK]
    if not checks:
        return
    text = _outputs_text(getattr(item, "test_outputs", None))
    if "Not attempted yet" not in text:
        raise AssertionError(
            f"{path.name}: the check of the untouched stub `{checks[0]}` should report "
            f"'Not attempted yet', but printed:\n{text[:500]}"
        )


# Longest first. These files grade whole batches of notebooks in the sandbox, build wheels or
# drive a browser: one of them started last is the whole run's tail (it was: xdist's default
# order puts one-test files last, and grading every solution notebook ran alone for minutes).
HEAVY_FIRST = (
    "tests/test_hostile_submissions.py",
    "tests/test_grade_solutions.py",
    "tests/test_grade.py",
    "tests/test_forgery.py",
    "tests/test_packaging.py",
    "tests/test_colab.py",
    "tests/test_browser.py",
    "tests/test_jupyterhub.py",
    "tests/test_ddp_launch.py",
)

# Files whose tests share a module-scoped fixture (a graded batch, a built wheel, a browser, a
# hub): all their tests go to one worker, so the fixture is built once. The tests of a file that
# uses such a fixture and is missing here fail, naming it (:func:`_check_file_scopes`), and
# tests/test_scheduling.py checks the whole mechanism in a real two-worker run.
FILE_SCOPES = (
    "tests/test_browser.py",
    "tests/test_forgery.py",
    "tests/test_grade.py",
    "tests/test_hostile_submissions.py",
    "tests/test_jupyterhub.py",
    "tests/test_packaging.py",
    "tests/test_scheduling.py",
    "tests/test_staged_course.py",
    "tests/test_website.py",
)
SHARED_SCOPES = ("module", "package", "session")


def scope_of(nodeid: str) -> str:
    """The unit of work a test belongs to: one worker runs a unit's tests, in order.

    A notebook's cells run in order in one kernel: one unit per notebook. A file in
    :data:`FILE_SCOPES` is one unit. Every other test is a unit of its own, so the two workers
    share the rest of the suite test by test. Decided from the node id alone, on the controller:
    no private pytest or xdist attribute is involved (pytest 9.2 ignores xdist 3.8's
    ``item._nodeid`` rewrite, which silently switched ``xdist_group`` off)."""
    path = nodeid.split("::", 1)[0]
    if path.endswith(".ipynb") or path in FILE_SCOPES:
        return path
    return nodeid


def _shared_fixtures(item: pytest.Item) -> list[str]:
    """Names of the module-, package- or session-scoped fixtures of tests/ that ``item`` uses."""
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}) or {}
    return sorted({name for name, fds in defs.items() for d in fds
                   if d.scope in SHARED_SCOPES and d.baseid.startswith("tests")})


# Files found using a module-scoped fixture without being in FILE_SCOPES: their tests fail at setup,
# naming the file (a UsageError raised in an xdist worker's collection only shows as a crash).
_UNSCOPED: dict[str, list[str]] = {}


def _check_file_scopes(items: list[pytest.Item]) -> None:
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        if path not in FILE_SCOPES and (names := _shared_fixtures(item)):
            _UNSCOPED[path] = sorted(set(_UNSCOPED.get(path, [])) | set(names))


def pytest_runtest_setup(item):
    path = item.nodeid.split("::", 1)[0]
    if path in _UNSCOPED:
        pytest.fail(f"{path} uses a module-scoped fixture ({', '.join(_UNSCOPED[path])}) but is not in "
                    "FILE_SCOPES (conftest.py), so two workers would each build it: add it there", pytrace=False)


def _rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::")[0]
    if path in HEAVY_FIRST:
        return HEAVY_FIRST.index(path)
    return len(HEAVY_FIRST) + (0 if path.endswith(".ipynb") else 1)


# torchvision (course_utils/extras.py): the tests of the lessons that import it, and tests marked
# ``vision``, get the ``vision`` marker. Where torchvision does not import (or does not go with this
# torch) they are deselected, not skipped, and the summary says so; CI runs them in a second
# environment that has it (``python -m pytest -m vision``, .ci/run and the README).
from course_utils import extras  # noqa: E402

_VISION_PROBLEM = extras.torchvision_problem()
_VISION_DESELECTED: list[str] = []


def pytest_ignore_collect(collection_path, config):
    """A lesson's own test file that imports torchvision is not even imported where torchvision is
    unusable (importing it would skip it, and under CI no test may skip); the summary line says so."""
    if (_VISION_PROBLEM is not None and collection_path.suffix == ".py"
            and any(stem in collection_path.name for stem in extras.TORCHVISION_LESSONS)):
        return True
    return None


def _needs_vision(item: pytest.Item) -> bool:
    return item.get_closest_marker("vision") is not None or any(
        stem in item.nodeid for stem in extras.TORCHVISION_LESSONS)


@pytest.hookimpl(tryfirst=True)  # before pytest's own `-m` selection, which reads the marker
def pytest_collection_modifyitems(config, items):
    kept, dropped = [], []
    for item in items:
        if _needs_vision(item):
            item.add_marker("vision")
            if _VISION_PROBLEM is not None:
                dropped.append(item)
                continue
        kept.append(item)
    if dropped:
        _VISION_DESELECTED.extend(i.nodeid for i in dropped)
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    _check_file_scopes(items)
    # Stable: each file keeps its own order. The scheduler below hands out units in this order
    # (``--no-loadscope-reorder``).
    items.sort(key=_rank)


# Every load-balancing mode keeps a unit (:func:`scope_of`) on one worker: a notebook split over
# two workers fails with NameError in every cell after the first one a worker gets. ``loadfile``
# and ``each`` are left to xdist (they keep a file on one worker already).
_BALANCING = ("load", "loadscope", "loadgroup", "worksteal")


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # optional: `-p no:xdist` has no such hook
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") not in _BALANCING:
        return None
    from xdist.scheduler import LoadScopeScheduling

    class CourseScheduling(LoadScopeScheduling):
        """xdist's scope scheduler with the course's units (the documented way to change
        scheduling: the ``pytest_xdist_make_scheduler`` hook)."""

        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return CourseScheduling(config, log)


# Under CI a skipped test fails the run: a skip proves nothing, so .ci/run installs what every
# test needs (Chromium, bubblewrap, npm packages) and the README promises a run with none skipped.
# An expected failure (xfail) is not a skip. Counted on the controller (or the only process).
_SKIPPED: list[str] = []


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        _SKIPPED.append(f"{report.nodeid}: {report.longrepr[-1] if isinstance(report.longrepr, tuple) else ''}")


def pytest_terminal_summary(terminalreporter):
    if _VISION_PROBLEM is not None and not hasattr(terminalreporter.config, "workerinput"):
        terminalreporter.write_line(
            f"torchvision: {_VISION_PROBLEM}, so the tests of {', '.join(extras.TORCHVISION_LESSONS)} and those "
            "marked `vision` were deselected here; run them where it imports with `python -m pytest -m vision` "
            "(.ci/run does, in a second environment: README, For contributors)")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    if hasattr(session.config, "workerinput") or not os.environ.get("CI") or not _SKIPPED:
        return
    print(f"\nCI: {len(_SKIPPED)} test(s) skipped; under CI every test must run "
          "(install what they need in .ci/run):\n  " + "\n  ".join(_SKIPPED[:20]), file=sys.stderr)
    if session.exitstatus == 0:
        session.exitstatus = 1
