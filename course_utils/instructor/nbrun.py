"""Run one learner notebook, inside the sandbox, and hand its answers to the host.

``python -m course_utils.instructor.nbrun JOB_JSON`` (started by :mod:`.grade` inside
``bwrap``) runs ``/submission/notebook.ipynb`` cell by cell in a fresh Jupyter kernel
(nbclient), with a per-cell timeout. Cells that raise do not stop the run. At each valid check
cell ``ex.NAME.check(ANSWER)`` it runs :func:`course_utils.instructor.kernel.export` instead,
and sends the exported answer to the host as a frame on stdout (:mod:`.frames`). At the end it
sends a ``done`` frame with the cell problems it saw. It decides no grade: everything it sends
is treated by the host as untrusted (answers are judged elsewhere, problems are only notes).
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
import os
import re
import subprocess
import sys
from typing import Any, BinaryIO

from .frames import write_frame
from .kernel import ANSWERS

# This module is a process of its own, started once per graded notebook. nbformat imports
# jsonschema, which imports rfc3987_syntax when it is installed (Jupyter's packages install it)
# only to check the "iri" string format; that import builds an Earley parser: 1.1 s of this
# process's 1.7 s start. nbformat never checks a string format, so the parser is never used.
# A None entry makes jsonschema's optional import fail as if the package were not there.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

import nbformat  # noqa: E402

PROBE_TIMEOUT = 15.0
# Before the first cell the kernel imports what every lesson imports (torch, the grading
# framework, the lesson's exercises), under this limit and not a cell's: a time limit must
# never interrupt an import (under load `import torch` alone can take longer than a cell may,
# and an interrupt inside a C extension's import is not taken until it ends).
WARM_UP_TIMEOUT = 120.0
MEMORY_ERRORS = ("MemoryError", "can't allocate memory", "std::bad_alloc", "Cannot allocate memory")


def _first_line(text: str) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(text)).strip()
    return text.splitlines()[-1][:200] if text else ""


def _error_of(cell: nbformat.NotebookNode) -> str | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return f"{out.get('ename', 'Error')}: {_first_line(out.get('evalue', ''))}".rstrip(": ")
    return None


def _whole_seconds(seconds: float) -> int:
    return max(1, math.ceil(seconds))


class Stuck(Exception):
    pass


class Runner:
    def __init__(self, nb: nbformat.NotebookNode, lesson: str, expected: dict[str, str], timeout: float,
                 out: BinaryIO, memory: str):
        from nbclient import NotebookClient

        self.nb, self.lesson, self.expected, self.timeout, self.out = nb, lesson, expected, timeout, out
        self.memory = memory
        self.problems: list[str] = []
        self.cell_no = 0
        self._timed_out = False
        self.executed = nbformat.v4.new_notebook(metadata=copy.deepcopy(nb.get("metadata", {})))
        self.client = NotebookClient(
            self.executed, timeout=_whole_seconds(timeout), kernel_name="python3", allow_errors=True,
            record_timing=False, interrupt_on_timeout=True,
            error_on_timeout={"ename": "CellTimeout", "evalue": "cell timed out", "traceback": []},
            resources={"metadata": {"path": os.getcwd()}},
        )
        self.client.on_cell_error = self._on_error

    def _on_error(self, cell: Any = None, cell_index: Any = None, execute_reply: Any = None, **_: Any) -> None:
        if (execute_reply or {}).get("content", {}).get("ename") == "CellTimeout":
            self._timed_out = True

    async def _exec(self, source: str, timeout: float | None = None, history: bool = False,
                    metadata: dict | None = None) -> tuple[nbformat.NotebookNode, bool]:
        cell = nbformat.v4.new_code_cell(source, metadata=copy.deepcopy(dict(metadata or {})))
        self.executed.cells.append(cell)
        self._timed_out = False
        self.client.timeout = _whole_seconds(timeout or self.timeout)
        try:
            await self.client.async_execute_cell(cell, len(self.executed.cells) - 1, store_history=history)
        finally:
            self.client.timeout = _whole_seconds(self.timeout)
        # outputs are never kept (a notebook printing 100 MB must not pile up here), but the
        # entries stay so that nbclient can still update a display made by an earlier cell
        error = _error_of(cell)
        for out in cell.get("outputs", []):
            for key, empty in (("text", ""), ("data", {}), ("traceback", []), ("evalue", "")):
                if key in out:
                    out[key] = empty
        cell["_error"] = error
        return cell, self._timed_out

    async def _responsive(self) -> bool:
        _, timed_out = await self._exec("pass", timeout=max(PROBE_TIMEOUT, self.timeout))
        return not timed_out

    async def _warm_up(self) -> None:
        """Import what the notebook will import, outside the cells' time limit; an import that
        fails here fails again, with its message, in the learner's own cell."""
        package = f"course_utils.exercises.l{self.lesson}"
        code = ("import importlib\n"
                f"for _m in ('torch', 'course_utils.grading', {package!r}):\n"
                "    try:\n"
                "        importlib.import_module(_m)\n"
                "    except Exception:\n"
                "        pass\n"
                "del _m, importlib\n")
        await self._exec(code, timeout=max(WARM_UP_TIMEOUT, self.timeout))

    async def _export(self, name: str, answer: str) -> None:
        ex_id = f"{self.lesson}.{name}"
        path = os.path.join(ANSWERS, f"{ex_id}")
        try:
            os.unlink(path)
        except OSError:
            pass
        code = (f"__import__('course_utils.instructor.kernel', fromlist=['export'])"
                f".export({ex_id!r}, {answer!r}, {path!r})")
        cell, timed_out = await self._exec(code)
        header: dict[str, Any] = {"type": "answer", "exercise": ex_id, "cell": self.cell_no}
        data = b""
        if timed_out:
            header["error"] = "exporting the answer timed out"
        else:
            try:
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError:
                header["error"] = f"the answer could not be exported ({cell.get('_error') or 'no file'})"
        write_frame(self.out, header, data)
        if timed_out and not await self._responsive():
            raise Stuck(f"the kernel did not recover after exporting {ex_id} timed out")

    async def _learner_cell(self, index: int, cell: nbformat.NotebookNode, source: str) -> None:
        if not source.strip():
            return
        run, timed_out = await self._exec(source, history=True, metadata=cell.get("metadata", {}))
        tags = cell.get("metadata", {}).get("tags", [])
        if timed_out:
            self.problems.append(f"cell {index}: timed out after {self.timeout:g} s and was interrupted")
            if not await self._responsive():
                raise Stuck(f"the kernel did not recover after cell {index} timed out")
            return
        err = run.get("_error")
        if err and any(m in err for m in MEMORY_ERRORS):
            self.problems.append(f"cell {index}: memory limit {self.memory} ({err[:120]})")
        elif err and "raises-exception" not in tags and not err.startswith("NotImplementedError"):
            self.problems.append(f"cell {index}: {err}")

    async def run(self) -> None:
        from ..cells import split_check_cell

        async with self.client.async_setup_kernel(cwd=os.getcwd(), env=dict(os.environ),
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
            await self._warm_up()
            for index, cell in enumerate(self.nb.cells):
                if cell.get("cell_type") != "code":
                    continue
                self.cell_no = index
                source = cell.get("source", "")
                if isinstance(source, list):
                    source = "".join(source)
                found = split_check_cell(source, self.expected)
                if found is None:
                    await self._learner_cell(index, cell, source)
                    continue
                before, name, answer, after = found
                await self._learner_cell(index, cell, before)
                await self._export(name, answer)
                await self._learner_cell(index, cell, after)


async def _main(job: dict[str, Any], out: BinaryIO) -> None:
    nb = nbformat.read(job["notebook"], as_version=4)
    runner = Runner(nb, job["lesson"], job["expected"], float(job["timeout"]), out, job.get("memory", ""))
    error = mistake = None
    try:
        await asyncio.wait_for(runner.run(), float(job["notebook_timeout"]))
    except asyncio.TimeoutError:
        error, mistake = f"the notebook did not finish within {float(job['notebook_timeout']):g} s", "notebook_timeout"
    except Stuck as exc:
        error, mistake = str(exc), "kernel_unresponsive"
    except Exception as exc:  # noqa: BLE001
        if type(exc).__name__ == "DeadKernelError":
            error, mistake = f"the kernel died (at cell {runner.cell_no})", "kernel_died"
        else:
            error, mistake = (f"grading failed at cell {runner.cell_no} ({type(exc).__name__}: "
                              f"{_first_line(str(exc))})"), "grading_failed"
    write_frame(out, {"type": "done", "problems": runner.problems[:200], "error": error, "mistake": mistake})


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    job = json.loads(argv[0])
    out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # nothing else may write into the frame stream by accident
    loop = asyncio.new_event_loop()

    def quiet(loop: asyncio.AbstractEventLoop, context: dict) -> None:
        pass  # nbclient's background kernel poll after a kernel died: already reported

    loop.set_exception_handler(quiet)
    try:
        loop.run_until_complete(_main(job, out))
    finally:
        out.flush()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
