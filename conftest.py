"""Shared test setup.

- Progress events written while testing go to a temporary log, never to the tester's home;
  notebook kernels inherit the variable (and ``OMP_NUM_THREADS=1``, see below).
- Learner notebooks: every check cell (tagged ``check:NAME`` by build, course_utils/cells.py)
  must report "not attempted" when nbval runs the untouched notebook: a stub that passes or
  fails a check is a broken exercise.
- Scheduling on the two xdist workers (``--dist loadgroup --no-loadscope-reorder``, set in
  pyproject.toml): see :func:`pytest_collection_modifyitems`.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_LOG_DIR = tempfile.mkdtemp(prefix="course-test-progress-")
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
    "tests/test_packaging.py",
    "tests/test_colab.py",
    "tests/test_browser.py",
    "tests/test_jupyterhub.py",
    "tests/test_ddp_launch.py",
)


def _group(item: pytest.Item) -> str | None:
    """The xdist group an item must share with others, or None when it can run anywhere.

    A notebook's cells run in order in one kernel: one group per notebook. Tests that use a
    module-scoped fixture (a graded batch, a built wheel, a browser) share one group per file so
    the fixture is built once; every other test is scheduled on its own."""
    path = item.nodeid.split("::")[0]
    if path.endswith(".ipynb"):
        return path
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {}) or {}
    if any(d.scope in ("module", "package", "session") for fds in defs.values() for d in fds
           if d.baseid.startswith("tests")):
        return path
    return None


def _rank(item: pytest.Item) -> int:
    path = item.nodeid.split("::")[0]
    if path in HEAVY_FIRST:
        return HEAVY_FIRST.index(path)
    return len(HEAVY_FIRST) + (0 if path.endswith(".ipynb") else 1)


@pytest.hookimpl(tryfirst=True)  # before xdist's worker hook turns groups into node ids
def pytest_collection_modifyitems(config, items):
    # Unconditional: an xdist worker's config says ``dist == "no"``, and the marks are inert
    # without ``--dist loadgroup`` (``-n 0``, the fast loop).
    for item in items:
        group = _group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=_rank)  # stable: each file keeps its own order
