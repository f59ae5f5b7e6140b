"""Shared test setup.

- Progress events written while testing go to a temporary log, never to the tester's home;
  notebook kernels inherit the variable (and ``OMP_NUM_THREADS=1``, see below).
- Learner notebooks: every check cell (``ex.NAME.check(ANSWER)``) must report "not
  attempted" when nbval runs the untouched notebook: a stub that passes or fails a check is a
  broken exercise.
"""

from __future__ import annotations

import os
import re
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

CHECK_CELL = re.compile(r"^ex\.(\w+)\.check\((\w+)\)\s*$", re.M)


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
    match = CHECK_CELL.search(cell.source)
    if not match:
        return
    text = _outputs_text(getattr(item, "test_outputs", None))
    if "Not attempted yet" not in text:
        raise AssertionError(
            f"{path.name}: the check of the untouched stub `{match.group(2)}` should report "
            f"'Not attempted yet', but printed:\n{text[:500]}"
        )
