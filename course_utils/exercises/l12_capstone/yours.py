"""Bring the learner's own answers of lessons 04, 05 and 09 into the capstone.

:func:`your_pieces` reads the learner's notebooks next to the capstone (``04_data.ipynb``,
``05_training_loop.ipynb``, ``09_persistence.ipynb``), takes the cells tagged ``answer:NAME``
for each piece the capstone uses (:data:`course_utils.lesson_props.l12_capstone.PIECES`; the
cell grammar is :mod:`course_utils.cells`'s), runs them in a fresh namespace holding the
imports the lesson's answers use, and checks each piece with its own lesson's grader. A piece
that is missing, still a stub, raises when its cell runs, or fails its check is replaced by the
course's version, and the table says which and why.

What this can and cannot do: the pieces feed the capstone's *pipeline* (the notebook's demos).
The capstone's *graded* parts are always checked with the course's pieces
(``lesson_props.l12_capstone.course_pieces``), so an earlier answer, right or wrong, cannot
make a capstone check pass or fail. A notebook graded on its own (the instructor's grader
runs a submitted capstone without the learner's other notebooks) gets the course's pieces,
and the table says so.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from course_utils import cells
from course_utils.grading import check
from course_utils.lesson_props.l12_capstone import PIECES, course_pieces

__all__ = ["Pieces", "Row", "is_stub", "your_pieces", "yours_or_course"]

YOURS, COURSE = "yours", "the course's"
N_RANDOM = 3
"""Random cases per piece's check (its fixed cases always run): enough to tell an unfinished or
wrong piece, and quick, since :func:`your_pieces` checks eight pieces when the notebook opens."""
_STUB_MESSAGE = cells.STUB.partition('("')[2].rpartition('")')[0]  # "Replace this line with your code"


@dataclass(frozen=True)
class Row:
    piece: str
    lesson: str
    whose: str  # YOURS or COURSE
    why: str


class Pieces:
    """The pieces (``pieces.stratified_split``, ...) and the table of whose each one is."""

    def __init__(self, objects: dict[str, Any], rows: list[Row]):
        self.__dict__.update(objects)
        self.rows = rows

    def mine(self) -> list[str]:
        return [r.piece for r in self.rows if r.whose == YOURS]

    def table(self) -> str:
        width = max(len(r.piece) for r in self.rows)
        lines = [f"{'piece':{width}}  {'lesson':17} {'whose':12} why"]
        lines += [f"{r.piece:{width}}  {r.lesson:17} {r.whose:12} {r.why}" for r in self.rows]
        n = len(self.mine())
        lines.append(f"{n} of {len(self.rows)} pieces are yours; the pipeline below runs on this mix.")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.table()

    def _repr_markdown_(self) -> str:
        lines = ["| piece | lesson | whose | why |", "|---|---|---|---|"]
        lines += [f"| `{r.piece}` | {r.lesson} | **{r.whose}** | {r.why} |" for r in self.rows]
        lines.append(f"\n{len(self.mine())} of {len(self.rows)} pieces are yours; the pipeline below runs on this mix.")
        return "\n".join(lines)


def _notebook(folder: Path, lesson: str) -> Path | None:
    exact = folder / f"{lesson}.ipynb"
    if exact.is_file():
        return exact
    found = sorted(p for p in folder.glob(f"*{lesson}*.ipynb") if ".ipynb_checkpoints" not in p.parts)
    return found[0] if len(found) == 1 else None


def _namespace(lesson: str) -> dict[str, Any]:
    """The imports the lesson's answers use (the generated reference module's globals, without
    the answers themselves)."""
    module = importlib.import_module(f"course_utils.answers.l{lesson}")
    own = {k for k, v in vars(module).items() if getattr(v, "__module__", None) == module.__name__}
    ns = {k: v for k, v in vars(module).items() if k not in own and not k.startswith("__")}
    ns["__name__"] = f"your_{lesson}"
    return ns


def _load_lesson(path: Path, lesson: str, names: list[str]) -> dict[str, tuple[Any, str]]:
    """``{name: (object or None, why)}`` for the pieces of one lesson notebook."""
    import nbformat

    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception as exc:  # noqa: BLE001 - a corrupt or unreadable notebook
        return {n: (None, f"could not read {path.name} ({type(exc).__name__})") for n in names}
    ns = _namespace(lesson)
    out: dict[str, tuple[Any, str]] = {}
    for name in names:
        found = cells.cells_of(nb, cells.ANSWER, name)
        if not found:
            out[name] = (None, f"no cell tagged answer:{name} in {path.name}")
            continue
        text = "\n\n".join(cells.source(nb.cells[i]) for i in found)
        if any(line.strip() == cells.STUB for line in text.splitlines()):
            out[name] = (None, "not attempted yet (the stub is still there)")
            continue
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                exec(compile(text, f"<{path.name}: answer:{name}>", "exec"), ns)  # noqa: S102 - the learner's own code, in their own kernel
        except BaseException as exc:  # noqa: BLE001 - the learner's cell; KeyboardInterrupt too
            if isinstance(exc, KeyboardInterrupt):
                raise
            out[name] = (None, f"its cell raised {type(exc).__name__} when run here")
            continue
        if name not in ns:
            out[name] = (None, f"its cell does not define `{name}`")
            continue
        out[name] = (ns[name], "")
    return out


def your_pieces(folder: str | Path | None = None) -> Pieces:
    """Your answers of lessons 04, 05 and 09 where they pass their lesson's check, the course's
    otherwise; ``folder`` holds your notebooks (default: the current folder, which is the
    notebook's own in Jupyter)."""
    folder = Path.cwd() if folder is None else Path(folder)
    course = vars(course_pieces())
    rng = (torch.get_rng_state(), random.getstate(), np.random.get_state())
    objects: dict[str, Any] = {}
    rows: list[Row] = []
    try:
        for lesson in dict.fromkeys(PIECES.values()):
            names = [n for n, owner in PIECES.items() if owner == lesson]
            path = _notebook(folder, lesson)
            if path is None:
                loaded = {n: (None, f"{lesson}.ipynb is not next to this notebook (graded on its own?)")
                          for n in names}
            else:
                loaded = _load_lesson(path, lesson, names)
            for name in names:
                obj, why = loaded[name]
                if obj is not None:
                    res = check(f"{lesson}.{name}", obj, n_random=N_RANDOM)
                    if res.passed:
                        objects[name] = obj
                        rows.append(Row(name, lesson, YOURS, f"passes its check ({path.name if path else ''})"))
                        continue
                    why = ("not attempted yet" if res.status == "not_attempted"
                           else f"fails its check ({res.mistake or res.status})")
                objects[name] = course[name]
                rows.append(Row(name, lesson, COURSE, why))
    finally:
        torch.set_rng_state(rng[0])
        random.setstate(rng[1])
        np.random.set_state(rng[2])
    return Pieces(objects, rows)


def is_stub(answer: Any) -> bool:
    """Is ``answer`` still the learner notebook's stub (a function, or a class with a method,
    whose code raises the stub's ``NotImplementedError``)?"""
    functions = [answer] if callable(answer) and not isinstance(answer, type) else []
    if isinstance(answer, type):
        functions = [v for v in vars(answer).values() if callable(v)]
    for fn in functions:
        todo = [getattr(fn, "__code__", None)]
        while todo:
            code = todo.pop()
            if code is None:
                continue
            if _STUB_MESSAGE in code.co_consts:
                return True
            todo.extend(c for c in code.co_consts if hasattr(c, "co_consts"))
    return False


def yours_or_course(answer: Any, exercise_id: str) -> Any:
    """``answer`` for the notebook's demos, or the course's answer while yours is still the stub
    (so *Run All* works before you have written everything); says which."""
    from course_utils.grading import reference

    name = exercise_id.rpartition(".")[2]
    if is_stub(answer):
        print(f"{name}: the course's (yours is not written yet)")
        return reference(exercise_id)
    print(f"{name}: yours")
    return answer
