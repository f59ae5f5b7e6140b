"""``python -m course_utils reset NOTEBOOK [--exercise NAME]``: start an exercise, or a whole
notebook, again.

    python -m course_utils reset notebooks/01_tensors.ipynb --exercise normalize_rows
    python -m course_utils reset notebooks/01_tensors.ipynb          # the whole notebook
    python -m course_utils reset notebooks/01_tensors.ipynb --list   # its exercises

The fresh version is what ``python -m course_utils build`` generates from the lesson's
solution notebook (:func:`course_utils.build.learner_notebook`), so a reset notebook is
exactly the one the course ships.

With ``--exercise``, only that exercise's cells change: the cells where you write your answer
(the ones that hold ``raise NotImplementedError`` in the fresh notebook) and its check cell,
found by cell id or, when ids changed, by what they define; a deleted check cell is put back
after the answer. Every other cell, including your notes and experiments, stays as it is.

``reset`` works on what you see: the ``.ipynb``. If a ``.py`` of the same name sits next to it
(a text pair from an older version of the course), the newer of the two is read, and the
output says which one that was; both are backed up and both are rewritten, so neither can
later win over the other. ``reset`` refuses to run on ``solutions/`` (those are the course's
sources: restore them with git).

Before writing, the current notebook (and its ``.py``, if any) is copied to a timestamped
backup, by default in ``~/.pytorch_course/backups/`` (next to the progress log; ``--backup-dir``
picks another folder). If the notebook is open in JupyterLab, close it first or use *File →
Reload Notebook from Disk* afterwards (do not save the open copy over the reset one).
"""

from __future__ import annotations

import argparse
import ast
import copy
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from . import backups, build
from . import cells as grammar  # the cell grammar: identity tags, check cells

STUB_MARK = grammar.STUB


@dataclass
class ResetResult:
    notebook: Path
    lesson: str
    exercise: str | None
    changes: list[str] = field(default_factory=list)
    backups: list[Path] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    source: str = ""  # which file the learner's cells were read from, and why


class ResetError(ValueError):
    pass


# ---------------------------------------------------------------------- finding things


def lesson_of(path: Path) -> str:
    stems = build.solution_stems()
    lesson = grammar.lesson_of(path, None, stems)
    if lesson is not None:
        return lesson
    raise ResetError(f"{path.name} is not a lesson notebook of this course (lessons: {', '.join(stems)})")


def pristine(lesson: str) -> nbformat.NotebookNode:
    """The learner notebook exactly as ``build`` generates it."""
    sol = build.SOLUTIONS / f"{lesson}.ipynb"
    if not sol.exists():
        raise ResetError(f"{sol} is missing, so the fresh notebook cannot be generated")
    return build.learner_notebook(nbformat.read(sol, as_version=4), lesson)


def _tagged(cell: nbformat.NotebookNode, role: str) -> str | None:
    return next((name for r, name in grammar.role_tags(cell) if r == role), None)


def _check_of(cell: nbformat.NotebookNode) -> str | None:
    """The exercise a code cell checks: its ``check:NAME`` tag (which survives a learner's edit
    of the statement), else its ``ex.NAME.check(...)`` statement."""
    if cell.get("cell_type") != "code":
        return None
    return _tagged(cell, grammar.CHECK) or grammar.checked_name(grammar.source(cell))


def exercise_names(nb: nbformat.NotebookNode) -> list[str]:
    """The exercises of a fresh notebook, in order (from its identity tags)."""
    return grammar.names(nb, grammar.CHECK)


def exercise_cells(nb: nbformat.NotebookNode, name: str) -> list[int]:
    """Indexes of the cells of exercise ``name`` in a fresh notebook (tagged ``answer:NAME`` and
    ``check:NAME`` by build): its answer cells, then its check cell."""
    mine = sorted(set(grammar.cells_of(nb, grammar.ANSWER, name)) | set(grammar.cells_of(nb, grammar.CHECK, name)))
    if not grammar.cells_of(nb, grammar.CHECK, name):
        raise ResetError(f"no exercise {name!r}; this lesson has: {', '.join(exercise_names(nb))}")
    return mine


def _defined_names(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a learner's half-written cell: fall back to the text
        return set(re.findall(r"^(?:def|class)\s+(\w+)", source, re.M)) | set(
            re.findall(r"^(\w+)\s*=", source, re.M))
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _first_line(source: str) -> str:
    return next((ln.strip() for ln in source.splitlines() if ln.strip()), "")


def _similar(fresh: nbformat.NotebookNode, mine: nbformat.NotebookNode) -> bool:
    """Is ``mine`` (a learner's cell) the learner's version of ``fresh``?"""
    if fresh.cell_type != mine.get("cell_type"):
        return False
    if _check_of(fresh):
        return _check_of(mine) == _check_of(fresh)
    answer = _tagged(fresh, grammar.ANSWER)
    if answer and _tagged(mine, grammar.ANSWER) == answer:
        return True
    if fresh.source == mine.get("source"):
        return True
    defined = _defined_names(fresh.source)
    if defined and defined & _defined_names(mine.get("source", "")):
        return True
    return _first_line(fresh.source) == _first_line(mine.get("source", "")) != ""


def _locate(learner: nbformat.NotebookNode, fresh: nbformat.NotebookNode, t: int,
            expected_at: int, taken: set[int]) -> int | None:
    target = fresh.cells[t]
    for i, cell in enumerate(learner.cells):
        if i not in taken and cell.get("id") == target.get("id") and _similar(target, cell):
            return i
    candidates = [i for i, cell in enumerate(learner.cells) if i not in taken and _similar(target, cell)]
    if not candidates:
        return None
    return min(candidates, key=lambda i: (abs(i - expected_at), i))


def _anchor(learner: nbformat.NotebookNode, fresh: nbformat.NotebookNode, t: int) -> int:
    """Where cell ``t`` of the fresh notebook belongs in the learner's: after the nearest
    earlier fresh cell found unchanged (by id and source, or by source)."""
    for k in range(t - 1, -1, -1):
        ref = fresh.cells[k]
        for i, cell in enumerate(learner.cells):
            if cell.get("id") == ref.get("id") and cell.get("source") == ref.source:
                return i + 1
        for i, cell in enumerate(learner.cells):
            if cell.get("cell_type") == ref.cell_type and cell.get("source") == ref.source and ref.source.strip():
                return i + 1
    return 0


def _fresh_copy(cell: nbformat.NotebookNode) -> nbformat.NotebookNode:
    new = copy.deepcopy(cell)
    if new.cell_type == "code":
        new.outputs = []
        new.execution_count = None
    return new


def reset_exercise(learner: nbformat.NotebookNode, fresh: nbformat.NotebookNode,
                   name: str) -> tuple[nbformat.NotebookNode, list[str]]:
    """A copy of ``learner`` with exercise ``name``'s cells as in ``fresh``; and what changed."""
    nb = copy.deepcopy(learner)
    changes: list[str] = []
    taken: set[int] = set()
    last = None
    for t in exercise_cells(fresh, name):
        target = fresh.cells[t]
        expected_at = last + 1 if last is not None else _anchor(nb, fresh, t)
        i = _locate(nb, fresh, t, expected_at, taken)
        label = _first_line(target.source)[:60]
        if i is None:
            ids = {c.get("id") for c in nb.cells}
            new = _fresh_copy(target)
            if new.get("id") in ids:
                new["id"] = f"{new['id']}-reset-{int(time.time())}"
            nb.cells.insert(expected_at, new)
            taken = {j + 1 if j >= expected_at else j for j in taken}
            i = expected_at
            changes.append(f"put back cell {i} (`{label}`), which was missing")
        else:
            cell = nb.cells[i]
            before = (cell.get("source"), cell.get("metadata", {}).get("tags", []))
            cell.source = target.source
            tags = target.get("metadata", {}).get("tags", [])
            cell.setdefault("metadata", {})
            if tags:
                cell.metadata["tags"] = list(tags)
            else:
                cell.metadata.pop("tags", None)
            if cell.cell_type == "code":
                had_outputs = bool(cell.get("outputs"))
                cell.outputs = []
                cell.execution_count = None
            else:
                had_outputs = False
            if before != (target.source, list(tags)) or had_outputs:
                changes.append(f"restored cell {i} (`{label}`)")
        taken.add(i)
        last = i
    return nb, changes


# ---------------------------------------------------------------------- files


def read_current(path: Path) -> tuple[nbformat.NotebookNode, str]:
    """The learner's notebook as they see it, and a sentence saying which file it came from.

    The ``.ipynb`` is what every tool opens (JupyterLab, VS Code, Colab). A ``.py`` next to it
    (an old text pair) is read instead only when it is newer than the ``.ipynb`` (someone edited
    the text); its inputs are then combined with the ``.ipynb``'s outputs and cell ids."""
    ipynb, py = path.with_suffix(".ipynb"), path.with_suffix(".py")
    nb_ipynb = nbformat.read(ipynb, as_version=4) if ipynb.exists() else None
    if not py.exists():
        if nb_ipynb is None:
            raise ResetError(f"{path} does not exist")
        return nb_ipynb, f"read {ipynb.name}"
    import jupytext
    from jupytext.combine import combine_inputs_with_outputs

    if nb_ipynb is not None and ipynb.stat().st_mtime >= py.stat().st_mtime:
        return nb_ipynb, f"read {ipynb.name}, which is newer than {py.name}"
    nb_py = jupytext.read(py, fmt="py:percent")
    if nb_ipynb is None:
        return nb_py, f"read {py.name} ({ipynb.name} is missing)"
    return (combine_inputs_with_outputs(nb_py, nb_ipynb, fmt="py:percent"),
            f"read {py.name}, which is newer than {ipynb.name} (edited as text)")


def backup_dir() -> Path:
    return backups.backup_dir()


def backup(path: Path, folder: Path | None = None) -> list[Path]:
    return backups.backup_files([path.with_suffix(".ipynb"), path.with_suffix(".py")], folder, stem=path.stem)


def _unchanged(path: Path, fresh: nbformat.NotebookNode) -> bool:
    ipynb, py = path.with_suffix(".ipynb"), path.with_suffix(".py")
    try:
        same = ipynb.read_text(encoding="utf-8") == nbformat.writes(fresh) + "\n"
        if py.exists():
            same = same and py.read_text(encoding="utf-8") == build.py_text(fresh, py)
    except OSError:
        return False
    return same


def write_pair(nb: nbformat.NotebookNode, path: Path, with_py: bool) -> list[Path]:
    ipynb = path.with_suffix(".ipynb")
    ipynb.write_text(nbformat.writes(nb) + "\n", encoding="utf-8")
    written = [ipynb]
    if with_py:
        py = path.with_suffix(".py")
        py.write_text(build.py_text(nb, py), encoding="utf-8")
        written.append(py)
    return written


def _refuse_solutions(path: Path) -> None:
    try:
        inside = path.resolve().is_relative_to(build.SOLUTIONS.resolve())
    except OSError:
        inside = False
    if inside or path.resolve().parent.name == "solutions":
        raise ResetError(f"{path} is a solution notebook, the course's source: reset only works on learner "
                         "notebooks (notebooks/). To undo changes to a solution, use git "
                         f"(`git restore {path}`).")


def reset(path: str | Path, exercise: str | None = None, backup_to: str | Path | None = None,
          dry_run: bool = False) -> ResetResult:
    """Reset one exercise (``exercise``) or the whole notebook at ``path`` (backup first)."""
    path = Path(path)
    if path.suffix not in (".ipynb", ".py"):
        raise ResetError(f"{path}: give a notebook (.ipynb)")
    _refuse_solutions(path)
    if not path.with_suffix(".ipynb").exists() and not path.with_suffix(".py").exists():
        raise ResetError(f"{path} does not exist")
    lesson = lesson_of(path)
    fresh = pristine(lesson)
    name = exercise.split(".", 1)[1] if exercise and exercise.startswith(lesson + ".") else exercise
    result = ResetResult(path.with_suffix(".ipynb"), lesson, name)
    if name is None:
        new = fresh
        if _unchanged(path, fresh):
            result.changes.append(f"the notebook is already the fresh {lesson}; nothing changed")
            return result
        result.changes.append(f"the whole notebook is back to the fresh {lesson}")
    else:
        try:
            current, result.source = read_current(path)
        except ResetError:
            raise
        except Exception as exc:  # noqa: BLE001 - corrupt JSON: only a full reset can help
            raise ResetError(f"{path} cannot be read ({type(exc).__name__}: {exc}); "
                             "reset the whole notebook instead (without --exercise)") from exc
        new, changes = reset_exercise(current, fresh, name)
        result.changes += changes or [f"`{name}` was already as fresh; nothing changed"]
        if not changes:
            return result
    if dry_run:
        return result
    had_py = path.with_suffix(".py").exists()
    result.backups = backup(path, Path(backup_to) if backup_to else None)
    result.written = write_pair(new, path, with_py=had_py)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_utils reset", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("notebook", help="a learner notebook, e.g. notebooks/01_tensors.ipynb")
    ap.add_argument("--exercise", "-e", metavar="NAME", help="reset only this exercise (default: the whole notebook)")
    ap.add_argument("--backup-dir", metavar="DIR", help=f"where backups go (default {backup_dir()})")
    ap.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")
    ap.add_argument("--list", action="store_true", help="list the notebook's exercises")
    args = ap.parse_args(argv)
    try:
        if args.list:
            lesson = lesson_of(Path(args.notebook))
            print(f"Exercises of {lesson}: " + ", ".join(exercise_names(pristine(lesson))))
            return 0
        res = reset(args.notebook, args.exercise, args.backup_dir, args.dry_run)
    except ResetError as exc:
        print(f"reset: {exc}", file=sys.stderr)
        return 2
    what = f"exercise `{res.exercise}` of {res.notebook}" if res.exercise else str(res.notebook)
    print(("Would reset " if args.dry_run else "Reset ") + what + ":")
    if res.source:
        print(f"  ({res.source})")
    for c in res.changes:
        print(f"  - {c}")
    for b in res.backups:
        print(f"  backup: {b}")
    if res.written:
        print("If the notebook is open in JupyterLab: File → Reload Notebook from Disk "
              "(don't save the open copy first).")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
