"""Export the course as an nbgrader course: ``python -m course_utils build --nbgrader OUTDIR``.

For every lesson (or the ones named), writes ``OUTDIR/source/<lesson>/<lesson>.ipynb``: the
solution notebook with nbgrader cell metadata, ready for nbgrader's own
``nbgrader generate_assignment <lesson>`` and, after collection, ``nbgrader autograde <lesson>``
(run them in OUTDIR, which also gets an ``nbgrader_config.py``):

* code cells with ``### BEGIN SOLUTION`` / ``### END SOLUTION`` blocks become **solution
  cells** (nbgrader's own markers; ``generate_assignment`` turns them into stubs), ``grade_id``
  ``NAME_answer`` from the cell's ``answer:NAME`` tag;
* each check cell ``ex.NAME.check(ANSWER)`` becomes a locked **autograded test cell**
  ``_result = ex.NAME.check(ANSWER)`` then ``assert _result, ...`` (a ``Result`` is true only
  when correct) worth the exercise's ``points``, ``grade_id`` ``NAME``: a wrong answer fails
  with the named mistake and the grader's feedback as the ``AssertionError``'s message
  (``inverted_ratio: ❌ Incorrect: ...``), which nbgrader's feedback shows, not a bare
  ``AssertionError``;
* a locked first code cell sets PyTorch to one CPU thread (the course's policy,
  :mod:`course_utils.threads`; ``COURSE_TORCH_THREADS`` changes it), and ``nbgrader_config.py``
  sets the same for the kernels ``nbgrader autograde`` starts: many notebooks graded at once on
  a shared machine do not fight over cores;
* every other cell is **locked** (read-only, checksummed by nbgrader);
* cells tagged ``solution-only`` are dropped, as in the learner notebooks.

nbgrader runs the tests in the learner's kernel; the course's sandboxed ``grade`` command is
the stronger option (see the instructor guide). nbgrader itself is not a dependency of the
course: install it where you run it (``pip install nbgrader==0.9.6``).
"""

from __future__ import annotations

import argparse
import copy
import re
import sys
from pathlib import Path

import nbformat

from .. import build
from .. import cells as grammar
from .grade import expected_checks, split_check_cell

SCHEMA = 3
THREADS_ID = "course_threads"
THREADS_CELL = ("# One CPU thread for PyTorch, the course's policy (course_utils/threads.py): these tensors are tiny,\n"
                "# and several notebooks may run at once on a shared machine. COURSE_TORCH_THREADS changes it.\n"
                "from course_utils import threads as _threads\n"
                "\n"
                "_threads.apply_torch();")
CONFIG = (
    "# nbgrader course made by `python -m course_utils build --nbgrader`\n"
    "c = get_config()  # noqa: F821\n"
    "c.ExecutePreprocessor.timeout = 300\n"
    "c.ClearSolutions.code_stub = {'python': '# YOUR CODE HERE\\nraise NotImplementedError()'}\n"
    "# one PyTorch thread per kernel that autograde starts (course_utils/threads.py)\n"
    "from course_utils import threads  # noqa: E402\n"
    "threads.apply_env()\n"
)


def autograded_source(name: str, answer: str) -> str:
    """The autograded test of exercise ``name``: fails with the named mistake and the feedback."""
    return (f"_result = ex.{name}.check({answer})\n"
            f'assert _result, f"{{_result.mistake or _result.status}}: {{_result.text()}}"')


def _meta(grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = False,
          points: float | None = None) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": SCHEMA,
            "solution": solution, "task": False}
    if grade:
        meta["points"] = float(points or 0)
    return meta


def nbgrader_notebook(stem: str) -> nbformat.NotebookNode:
    """The nbgrader source version of ``solutions/<stem>.ipynb``."""
    from course_utils.grading import registry

    points = {ex.name: float(getattr(ex, "points", 1.0)) for ex in registry.load_lesson(stem)}
    expected = expected_checks(stem)
    nb = copy.deepcopy(nbformat.read(build.SOLUTIONS / f"{stem}.ipynb", as_version=4))
    cells = []
    used: set[str] = set()

    def unique(base: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_-]", "_", base)
        gid, n = base, 1
        while gid in used:
            n += 1
            gid = f"{base}_{n}"
        used.add(gid)
        return gid

    for i, cell in enumerate(nb.cells):
        tags = cell.get("metadata", {}).get("tags", [])
        if build.SOLUTION_ONLY in tags:
            continue
        cell = copy.deepcopy(cell)
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            # predict-the-output answers (ungraded practice) would be released as written: use `...`
            cell.source = build.prediction_stub("".join(cell.source), f"{stem} cell {i}")
        source = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        found = split_check_cell(source, expected) if cell.cell_type == "code" else None
        if found is not None:
            before, name, answer, after = found
            cell.source = "\n".join(p for p in (before, autograded_source(name, answer), after) if p.strip())
            cell.metadata["nbgrader"] = _meta(unique(name), grade=True, locked=True, points=points.get(name, 1.0))
        elif cell.cell_type == "code" and build.BEGIN in source:
            # the answer cell's identity (course_utils/cells.py: tag answer:NAME) names it
            answer_of = next((n for role, n in grammar.role_tags(cell) if role == grammar.ANSWER), None)
            gid = f"{answer_of}_answer" if answer_of else f"cell_{i}_solution"
            cell.metadata["nbgrader"] = _meta(unique(gid), solution=True)
        else:
            cell.metadata["nbgrader"] = _meta(unique(f"cell_{i}"), locked=True)
        cells.append(cell)
    first_code = next((i for i, c in enumerate(cells) if c.cell_type == "code"), len(cells))
    threads_cell = nbformat.v4.new_code_cell(THREADS_CELL)
    threads_cell.metadata["nbgrader"] = _meta(unique(THREADS_ID), locked=True)
    cells.insert(first_code, threads_cell)
    nb.cells = cells
    nb.metadata.setdefault("kernelspec", {"name": "python3", "display_name": "Python 3", "language": "python"})
    return nb


def export(outdir: str | Path, stems: list[str]) -> list[Path]:
    out = Path(outdir)
    written = []
    for stem in stems:
        path = out / "source" / stem / f"{stem}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nbgrader_notebook(stem), path)
        written.append(path)
    config = out / "nbgrader_config.py"
    if not config.exists():
        config.write_text(CONFIG, encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_utils build --nbgrader", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", metavar="OUTDIR")
    ap.add_argument("lessons", nargs="*", help="lesson stems or prefixes (default: all)")
    args = ap.parse_args(argv)
    stems = build._select(args.lessons)
    for path in export(args.outdir, stems):
        print(f"wrote {path}")
    print(f"\nnext: cd {args.outdir} && nbgrader generate_assignment {stems[0]}   (nbgrader 0.9: pip install nbgrader)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
