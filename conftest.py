"""Shared test setup.

- Progress events written while testing go to a temporary log, never to the tester's home;
  notebook kernels inherit the variable (and ``OMP_NUM_THREADS=1``, see below).
- Learner notebooks: every check cell (tagged ``check:NAME`` by build, course_utils/cells.py)
  must report "not attempted" when nbval runs the untouched notebook: a stub that passes or
  fails a check is a broken exercise.
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
