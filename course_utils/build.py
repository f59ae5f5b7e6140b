"""Generate learner notebooks from solution notebooks: one source for both versions.

``build`` is an AUTHORING command: course authors run it after editing ``solutions/``.
Learners do not need it: the notebooks in ``notebooks/`` are yours to work in, and
``python -m course_utils update`` brings in course updates around your edits
(``reset`` starts an exercise again). ``build`` refuses to replace a learner notebook that
differs from what it generated last (someone's work); ``--force`` replaces it after writing a
timestamped backup to ~/.pytorch_course/backups/ and naming it.

``solutions/NN_name.py`` (jupytext percent) is the source an author edits; its paired
``solutions/NN_name.ipynb`` holds the executed outputs that nbval compares. From the solution
notebook, ``build`` writes ``notebooks/NN_name.ipynb`` (no text pair: each lesson shows once in
JupyterLab's file browser), with a hash of every generated cell in its metadata so that
``build`` and ``update`` can tell the learner's edits from the generated cells:

- code between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` becomes a stub that parses and
  raises ``NotImplementedError`` (a stub at the top level of a cell tags the cell
  ``raises-exception`` so Run All and nbval go on);
- a ``### BEGIN PREDICTION`` / ``### END PREDICTION`` block (a predict-the-output answer)
  becomes ``...``, which its check reads as "not attempted";
- cells tagged ``solution-only`` are dropped;
- outputs and execution counts are cleared.

It also writes ``course_utils/answers/lNN_name.py``: the answer definitions of
each solution notebook (course_utils/references.py), which the exercises take their references
from, so that each reference is written once, in the notebook. And it writes
``course_utils/exercise_index.py``: every exercise's id, lesson, name, title, mistake ids, points,
timeout and where its reference is defined, from the registry, so that the room view, ``progress
show``, the dashboard and ``grade``'s own process list the exercises without importing the
graders (``--check`` fails when it drifts from the lesson packages).

Commands::

    python -m course_utils build                 # regenerate learner notebooks (authors)
    python -m course_utils build --check         # exit 1 if anything is out of date
    python -m course_utils build --execute 01    # run solution 01 (from its .py), store outputs
    python -m course_utils build --force         # also replace edited learner notebooks (backup first)
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from . import cells as grammar  # the notebook cell grammar: markers, check cells, identity tags

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
BEGIN, END = grammar.BEGIN, grammar.END
SOLUTION_ONLY = grammar.SOLUTION_ONLY
RAISES = grammar.RAISES
STUB = grammar.STUB
META = "course"  # notebook metadata key: {"lesson", "generated", "cells": ["id:hash", ...]}
WHO = ("`build` is for course authors (after editing solutions/). Learners: don't run it - your "
       "notebooks are yours; `python -m course_utils update` brings course updates in around your edits.")


class BuildError(ValueError):
    pass


def _replace_blocks(source: str, begin: str, end: str, replacement: list[str], where: str) -> tuple[str, list[str]]:
    """Replace every ``begin`` ... ``end`` block of ``source`` with the ``replacement`` lines,
    indented like the ``begin`` marker. Returns the new source and the indents of the blocks."""
    out: list[str] = []
    indents: list[str] = []
    inside = False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == begin:
            if inside:
                raise BuildError(f"{where}: nested {begin}")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            indents.append(indent)
            out.extend(f"{indent}{r}" for r in replacement)
        elif stripped == end:
            if not inside:
                raise BuildError(f"{where}: {end} without {begin}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise BuildError(f"{where}: {begin} without {end}")
    return "\n".join(out), indents


def stub_source(source: str, where: str = "cell") -> tuple[str, bool]:
    """Replace every solution block in ``source`` with a stub.

    Returns ``(new_source, top_level)`` where ``top_level`` says a stub sits at indentation 0
    (so running the cell raises)."""
    text, indents = _replace_blocks(source, BEGIN, END, ["# YOUR CODE HERE", STUB], where)
    return text, "" in indents


PREDICT_BEGIN, PREDICT_END, PREDICT_STUB = grammar.PREDICT_BEGIN, grammar.PREDICT_END, grammar.PREDICT_STUB


def prediction_stub(source: str, where: str = "cell") -> str:
    """Replace each ``### BEGIN PREDICTION`` ... ``### END PREDICTION`` block (the answer to a
    predict-the-output question, course_utils/grading/predict.py) with ``...``, which the check
    reads as "not attempted". The block sits inside the call's parentheses, so ``...`` keeps
    the cell valid Python and running it raises nothing."""
    if PREDICT_BEGIN not in source and PREDICT_END not in source:
        return source
    return _replace_blocks(source, PREDICT_BEGIN, PREDICT_END, [PREDICT_STUB], where)[0]


def learner_notebook(solution: nbformat.NotebookNode, name: str = "notebook") -> nbformat.NotebookNode:
    """The learner version of a solution notebook (pure: no file access)."""
    nb = copy.deepcopy(solution)
    grammar.tag_notebook(nb)  # answer:/check:/predict: tags, as in a built solution
    cells = []
    for i, cell in enumerate(nb.cells):
        tags = list(cell.get("metadata", {}).get("tags", []))
        if SOLUTION_ONLY in tags:
            continue
        cell.metadata = {"tags": tags} if tags else {}
        if cell.cell_type == "code":
            src, top = stub_source(prediction_stub(cell.source, f"{name} cell {i}"), f"{name} cell {i}")
            if src != cell.source:
                cell.source = src
                if top and RAISES not in tags:
                    cell.metadata["tags"] = tags + [RAISES]
            cell.outputs = []
            cell.execution_count = None
        elif BEGIN in cell.source:
            raise BuildError(f"{name} cell {i}: solution markers are only allowed in code cells")
        cell.pop("attachments", None) if cell.cell_type != "markdown" else None
        cells.append(cell)
    from . import colab  # a lesson of this course: the Colab badge and setup cell

    if colab.is_course_lesson(name):
        cells = colab.setup_cells(cells, name)
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i:03d}"
    nb.cells = cells
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    stamp(nb, name)
    return nb


# ---------------------------------------------------------------------- what build generated


def cell_hash(cell: dict) -> str:
    """A short hash of what a person edits in a cell: its type and source."""
    src = cell.get("source", "")
    src = "".join(src) if isinstance(src, list) else str(src)
    return hashlib.sha256(json.dumps([cell.get("cell_type"), src]).encode()).hexdigest()[:16]


def _inputs_hash(hashes: list[str]) -> str:
    return hashlib.sha256(" ".join(hashes).encode()).hexdigest()[:16]


def stamp(nb: nbformat.NotebookNode, lesson: str) -> None:
    """Record in ``nb.metadata["course"]`` what build generated: every cell's id and hash."""
    hashes = [cell_hash(c) for c in nb.cells]
    nb.metadata[META] = {"lesson": lesson, "generated": _inputs_hash(hashes),
                         "cells": [f"{c.get('id', '')}:{h}" for c, h in zip(nb.cells, hashes)]}


def generated_cells(nb: dict) -> list[tuple[str, str]] | None:
    """``[(id, hash), ...]`` of the cells build generated for ``nb`` (from its metadata), or
    ``None`` when it has no valid record (older build, or metadata stripped by a tool)."""
    meta = (nb.get("metadata") or {}).get(META)
    if not isinstance(meta, dict) or not isinstance(meta.get("cells"), list):
        return None
    out = []
    for item in meta["cells"]:
        if not isinstance(item, str) or ":" not in item:
            return None
        cell_id, _, h = item.rpartition(":")
        out.append((cell_id, h))
    return out


def edited(nb: dict, fresh: nbformat.NotebookNode | None = None) -> bool:
    """Does ``nb`` (a learner notebook) hold edits build did not make? Cell inputs count
    (added, deleted, moved or changed cells); outputs of cells run as shipped do not. Without a
    record in its metadata, ``nb`` counts as unedited only if its inputs equal ``fresh``'s."""
    mine = [cell_hash(c) for c in nb.get("cells", [])]
    record = generated_cells(nb)
    if record is not None:
        return mine != [h for _, h in record]
    return fresh is None or mine != [cell_hash(c) for c in fresh.cells]


def _jupytext_config(path: Path):
    from jupytext.config import load_jupytext_config

    return load_jupytext_config(str(path))


def py_text(nb: nbformat.NotebookNode, path: Path) -> str:
    """The percent-format text jupytext pairs with ``nb`` under the repository's config."""
    import jupytext

    return jupytext.writes(nb, "py:percent", config=_jupytext_config(path))


def read_py(path: Path) -> nbformat.NotebookNode:
    import jupytext

    nb = jupytext.read(path, config=_jupytext_config(path))
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:03d}"
    return nb


def solution_stems() -> list[str]:
    return sorted(p.stem for p in SOLUTIONS.glob("[0-9][0-9]_*.py"))


def expected_files(stem: str) -> dict[Path, str]:
    """Every generated file for lesson ``stem`` with the text it should have."""
    sol_ipynb = SOLUTIONS / f"{stem}.ipynb"
    if not sol_ipynb.exists():
        raise BuildError(f"{sol_ipynb.relative_to(ROOT)} is missing: "
                         f"run `python -m course_utils build --execute {stem}`")
    solution = nbformat.read(sol_ipynb, as_version=4)
    learner = learner_notebook(solution, stem)
    return {NOTEBOOKS / f"{stem}.ipynb": nbformat.writes(learner) + "\n"}


def _age(path: Path, other: Path) -> str:
    """``"solutions/x.py is newer (by 3 s)"``: which of two files was modified last."""
    a, b = path.stat().st_mtime, other.stat().st_mtime
    newer, older = (path, other) if a >= b else (other, path)
    return f"{newer.relative_to(ROOT)} is newer than {older.name} (by {abs(a - b):.0f} s)"


def pair_problem(stem: str) -> str | None:
    """Do ``solutions/<stem>.py`` (the source) and its ``.ipynb`` (executed) disagree? Says which
    is newer and how to fix each case; never picks one itself."""
    sol_py, sol_ipynb = SOLUTIONS / f"{stem}.py", SOLUTIONS / f"{stem}.ipynb"
    if not sol_py.exists():
        return (f"solutions/{stem}.py (the source) is missing: recreate it from the notebook with "
                f"`jupytext --to py:percent solutions/{stem}.ipynb`.")
    solution = nbformat.read(sol_ipynb, as_version=4)
    if py_text(solution, sol_py) == sol_py.read_text():
        return None
    return (f"solutions/{stem}.py and solutions/{stem}.ipynb differ: {_age(sol_py, sol_ipynb)}. "
            f"If the .py has the edits you want (the usual case: you edited the source), run "
            f"`python -m course_utils build --execute {stem}` to store fresh outputs. If the .ipynb has "
            f"them (saved by a tool without jupytext), run `jupytext --to py:percent solutions/{stem}.ipynb` "
            f"first. JupyterLab refuses to open a pair whose .py is older than its .ipynb and differs.")


def stale_text_pairs() -> list[Path]:
    """``notebooks/NN_lesson.py`` left over from when learner notebooks had a jupytext text pair
    (only lessons' names: any other script is not build's to touch)."""
    lessons = set(solution_stems())
    return sorted(p for p in NOTEBOOKS.glob("[0-9][0-9]_*.py") if p.is_file() and p.stem in lessons)


def _tagged_py(path: Path) -> str:
    """``solutions/<stem>.py`` with its cells' identity tags set (the text unchanged otherwise)."""
    import jupytext

    nb = jupytext.read(path, config=_jupytext_config(path))
    grammar.tag_notebook(nb)
    return jupytext.writes(nb, "py:percent", config=_jupytext_config(path))


def untagged_solutions(stems: list[str]) -> list[Path]:
    """Solution files (``.py`` source or ``.ipynb``) whose cells lack their identity tags
    (``answer:NAME``, ``check:NAME``, ``predict:NAME``; course_utils/cells.py) or carry stale ones."""
    out = []
    for stem in stems:
        py, ipynb = SOLUTIONS / f"{stem}.py", SOLUTIONS / f"{stem}.ipynb"
        if py.exists() and _tagged_py(py) != py.read_text():
            out.append(py)
        if ipynb.exists() and grammar.tag_notebook(nbformat.read(ipynb, as_version=4)):
            out.append(ipynb)
    return out


def tag_solutions(stems: list[str]) -> list[Path]:
    """Write the identity tags into the solution pairs (each file on its own, like the lesson
    times: only tags change, so an edited ``.py`` is never replaced by its older ``.ipynb``)."""
    written = []
    for path in untagged_solutions(stems):
        if path.suffix == ".py":
            path.write_text(_tagged_py(path))
        else:
            nb = nbformat.read(path, as_version=4)
            grammar.tag_notebook(nb)
            nbformat.write(nb, path)
        written.append(path)
    return written


def check(stems: list[str], orphans: bool = True) -> list[str]:
    """Problems that make the repository out of date (empty when everything is in sync)."""
    problems = []
    for stem in stems:
        try:
            files = expected_files(stem)
        except BuildError as exc:
            problems.append(str(exc))
            continue
        pair = pair_problem(stem)
        if pair:
            problems.append(pair)
        for path in untagged_solutions([stem]):
            problems.append(f"{path.relative_to(ROOT)}: its cells' identity tags (answer:NAME, check:NAME, "
                            "predict:NAME) are missing or stale. Run `python -m course_utils build`.")
        for path, text in files.items():
            if path.exists() and path.read_text() == text:
                continue
            rel = path.relative_to(ROOT)
            if path.exists() and _is_edited(path):
                problems.append(f"{rel} has edits that build did not make (a learner's work?). Authors: move "
                                f"the change into solutions/{stem}.py, then `python -m course_utils build --force` "
                                f"(backs up the edited notebook first). {WHO}")
            else:
                problems.append(f"{rel} is not what build generates from solutions/{stem}. Authors: run "
                                f"`python -m course_utils build`. {WHO}")
    for py in stale_text_pairs():
        problems.append(f"{py.relative_to(ROOT)} is left over from the old text pairing (learner notebooks are "
                        "only .ipynb now): `python -m course_utils build` removes it, "
                        "or keeps a backup if it was edited.")
    # (a name with a dot is a copy: `update`'s NN_name.upstream-<time>.ipynb, a learner's own)
    extra = sorted({p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb") if "." not in p.stem}
                   - set(solution_stems())) if orphans else []
    for stem in extra:
        problems.append(f"notebooks/{stem}.ipynb has no solution notebook in solutions/.")
    problems += reference_problems(stems, orphans)
    problems += index_problems()  # the exercise list the room view and dashboard read
    from . import links  # README badges follow course_utils/links.py (COURSE_REPO)

    if links.readme_out_of_date():
        problems.append("README.md's badges do not match course_utils/links.py. Run `python -m course_utils build`.")

    # lesson headers, README syllabus and guide take their times from one source
    from . import lesson_times

    problems += lesson_times.problems()
    # the docs' syllabus, agendas, live-code notes, stumbling points and lesson references
    from . import lesson_plan

    problems += lesson_plan.problems(doc_exercises())
    return problems


def write_docs() -> None:
    """Lesson times into the solution headers (.py and .ipynb), README and guide; the README's
    syllabus and the guide's agendas, live-code notes and stumbling points."""
    from . import lesson_plan, lesson_times

    for path in lesson_times.write():
        print(f"wrote {path.relative_to(ROOT)} (lesson times)")
    for path in lesson_plan.write(doc_exercises()):
        print(f"wrote {path.relative_to(ROOT)} (syllabus, agendas, live-code notes, stumbling points)")


def doc_exercises() -> list | None:
    """The exercises and their named mistakes, for the docs' generated blocks (``None`` for a
    course folder without the lesson packages: those blocks are then left as they are)."""
    if index_path() is None:
        return None
    from . import lesson_plan
    from .grading import registry  # lazy: only build and its check pay for the graders

    return lesson_plan.exercise_docs(registry.all_exercises())


def references_dir() -> Path | None:
    """Where the generated reference modules go: ``course_utils/answers`` of the course folder
    (``None`` for a course folder without the package, e.g. a test's)."""
    return ROOT / "course_utils" / "answers" if (ROOT / "course_utils").is_dir() else None


def reference_files(stems: list[str]) -> dict[Path, str]:
    """The generated reference modules (course_utils/references.py) for ``stems``."""
    from . import references

    package = references_dir()
    if package is None:
        return {}
    try:
        return references.expected_files(stems, SOLUTIONS, package)
    except references.ExtractError as exc:
        raise BuildError(str(exc)) from exc


def _rel(path: Path) -> str:
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def reference_problems(stems: list[str], orphans: bool = True) -> list[str]:
    """Generated reference modules that are missing, stale, or left over."""
    from . import references

    try:
        files = reference_files(stems)
    except BuildError as exc:
        return [str(exc)]
    problems = []
    for path, text in files.items():
        if not path.exists() or path.read_text() != text:
            problems.append(f"{_rel(path)} is not what build generates from solutions/ (the answer "
                            "cells). Run `python -m course_utils build`; never edit it by hand.")
    package = references_dir()
    for path in references.stale_modules(solution_stems(), package) if orphans and package else []:
        problems.append(f"{_rel(path)} has no solution notebook: `python -m course_utils build` removes it.")
    return problems


# ---------------------------------------------------------------------- the exercise index

INDEX_HEADER = '''"""Every exercise of the course, in course order: GENERATED by `python -m course_utils build` from
the lesson packages (course_utils/exercises/); never edit by hand (`build --check` fails on drift).

The room view, `progress show`, the dashboard and the host process of `grade` list exercises from
here, so they never import the graders (nor torch) just to know the exercises' names.
"""

# ruff: noqa: E501

from __future__ import annotations

from typing import NamedTuple


class IndexedExercise(NamedTuple):
    id: str  # "<lesson>.<name>"
    lesson: str
    name: str
    title: str
    mistakes: tuple[str, ...]  # the ids of its named mistakes
    points: float  # what a correct answer is worth in the gradebook
    timeout: float  # seconds its check gives the learner's code, all cases together
    reference: str  # "module:name" where a lesson package defines its reference at top level, else ""


EXERCISES: tuple[IndexedExercise, ...] = (
'''


def index_path() -> Path | None:
    """Where the generated exercise index goes (``None`` for a course folder without the lesson
    packages, e.g. a test's copy of one lesson)."""
    folder = ROOT / "course_utils"
    if not any(p.is_dir() for p in (folder / "exercises").glob("l[0-9][0-9]_*")):
        return None
    return folder / "exercise_index.py"


def _reference_at(ref: object) -> str:
    """``"module:name"`` of a reference a lesson package (course_utils/exercises/) defines at top
    level, the ones the grader's staged course cuts (instructor/sandbox.py); ``""`` for the others
    (the generated answers/ modules, which the staged course cuts by reading them)."""
    module, name = getattr(ref, "__module__", None) or "", getattr(ref, "__name__", None)
    if not name or not module.startswith("course_utils.exercises."):
        return ""
    return f"{module}:{name}" if getattr(sys.modules.get(module), name, None) is ref else ""


def index_text() -> str:
    """The exercise index as the lesson packages declare it (imports every lesson's graders)."""
    from .grading import registry  # lazy: only build and its check pay for the graders

    lines = [INDEX_HEADER]
    for e in registry.all_exercises():
        fields = (repr(e.id), repr(e.lesson), repr(e.name), repr(e.title),
                  repr(tuple(m.id for m in e.mistakes)), repr(float(e.points)), repr(float(e.timeout)),
                  repr(_reference_at(e.reference)))
        lines.append(f"    IndexedExercise({', '.join(fields)}),\n")
    lines.append(")\n")
    return "".join(lines)


def index_problems() -> list[str]:
    path = index_path()
    if path is None:
        return []
    if not path.exists() or path.read_text() != index_text():
        return [f"{_rel(path)} (the exercise index) does not list the exercises the lesson packages declare. "
                "Run `python -m course_utils build`; never edit it by hand."]
    return []


def write_index() -> Path | None:
    path = index_path()
    if path is None:
        return None
    text = index_text()
    if path.exists() and path.read_text() == text:
        return None
    path.write_text(text)
    return path


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _fresh(stem: str) -> nbformat.NotebookNode:
    return learner_notebook(nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4), stem)


def _is_edited(path: Path) -> bool:
    nb = _read(path)
    if nb is None or not isinstance(nb.get("cells"), list):
        return True  # unreadable: maybe a half-saved notebook with work in it; never assume not
    stem = path.stem
    try:
        fresh = _fresh(stem) if (SOLUTIONS / f"{stem}.ipynb").exists() else None
    except BuildError:
        fresh = None
    if not edited(nb, fresh):
        return False
    # no record (a notebook from before build stored one): exactly as committed is nobody's
    # uncommitted work, and git keeps it anyway
    return generated_cells(nb) is not None or not _as_committed(path)


def _as_committed(path: Path) -> bool:
    import subprocess

    try:
        rel = path.resolve().relative_to(ROOT.resolve()).as_posix()
        proc = subprocess.run(["git", "show", f"HEAD:{rel}"], cwd=ROOT, capture_output=True, timeout=30)
    except (OSError, ValueError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0 and proc.stdout == path.read_bytes()


def _text_pair_edited(py: Path) -> bool:
    """Does a leftover ``notebooks/NN.py`` hold anything the generated notebook does not?"""
    import jupytext

    stem = py.stem
    if not (SOLUTIONS / f"{stem}.ipynb").exists():
        return True
    try:
        cells = jupytext.read(py, fmt="py:percent").cells
    except Exception:  # noqa: BLE001 - unreadable text: keep it
        return True
    return [cell_hash(c) for c in cells] != [cell_hash(c) for c in _fresh(stem).cells]


@dataclass
class BuildResult:
    written: list[Path] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    refused: list[Path] = field(default_factory=list)  # edited files left alone (no --force)
    backups: list[Path] = field(default_factory=list)


def write(stems: list[str], force: bool = False, backup_to: Path | None = None) -> BuildResult:
    """Write the learner notebooks of ``stems`` and remove leftover text pairs. A file with edits
    build did not make is left alone (``refused``) unless ``force``, which backs it up first.
    Nothing is written when anything is refused, so a build is never half done."""
    from .backups import backup_files

    write_docs()  # before the learner notebooks: the solution headers carry the lesson times
    for path in tag_solutions(stems):
        print(f"wrote {path.relative_to(ROOT)} (cell identity tags)")
    res = BuildResult()
    todo: list[tuple[Path, str | None]] = []  # (path, new text or None to remove)
    for stem in stems:
        for path, text in expected_files(stem).items():
            if not path.exists() or path.read_text() != text:
                todo.append((path, text))
        py = NOTEBOOKS / f"{stem}.py"
        if py.is_file():
            todo.append((py, None))
    # generated reference modules: "do not edit" files, rewritten without a backup (git has them)
    from . import references

    generated: list[tuple[Path, str | None]] = [
        (p, t) for p, t in reference_files(stems).items() if not p.exists() or p.read_text() != t]
    package = references_dir()
    generated += [(p, None) for p in references.stale_modules(solution_stems(), package)] if package else []
    risky = [p for p, text in todo if p.exists() and (_text_pair_edited(p) if text is None else _is_edited(p))]
    if risky and not force:
        res.refused = risky
        return res
    NOTEBOOKS.mkdir(exist_ok=True)
    from . import links  # README badges follow course_utils/links.py (COURSE_REPO)

    if links.write_readme():
        print("wrote README.md (badges)")
    for path, new_text in generated:
        if new_text is None:
            path.unlink()
            res.removed.append(path)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(new_text)
            res.written.append(path)
    index = write_index()
    if index is not None:
        res.written.append(index)
    for path, new_text in todo:
        if path in risky:
            res.backups += backup_files([path], backup_to)
        if new_text is None:
            path.unlink()
            res.removed.append(path)
        else:
            path.write_text(new_text)
            res.written.append(path)
    return res


def refresh_references(stems: list[str]) -> list[Path]:
    """Write the generated reference modules of ``stems`` from their ``.py`` sources where they
    differ (before the solutions run: a check cell grades against them, and an old module made
    the first ``--execute`` after a changed answer show Incorrect). Returns the files written."""
    written = []
    for path, text in reference_files(stems).items():
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            written.append(path)
    return written


def execute_all(stems: list[str]) -> None:
    """``build --execute``: the reference modules first, then each solution, saying how long."""
    for path in refresh_references(stems):  # the notebooks' checks grade against these
        print(f"wrote {path.relative_to(ROOT)}")
    for stem in stems:
        took = execute(stem)
        print(f"executed solutions/{stem} in {took:.1f} s")


def execute(stem: str, timeout: int = 600) -> float:
    """Run ``solutions/<stem>.py`` top to bottom in a fresh kernel and store the outputs in
    ``solutions/<stem>.ipynb`` (and the normalised ``.py``). Returns seconds taken."""
    from nbclient import NotebookClient

    sol_py = SOLUTIONS / f"{stem}.py"
    nb = read_py(sol_py)
    grammar.tag_notebook(nb)
    # Executing solutions is not learner progress; one thread per kernel, as under the tests
    # (conftest.py), so thread-count-dependent numbers in the stored outputs match nbval's run.
    from . import threads

    env = {"COURSE_PROGRESS_LOG": "", **threads.kernel_env({})}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    start = time.perf_counter()
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                       resources={"metadata": {"path": str(SOLUTIONS)}}).execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    took = time.perf_counter() - start
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"},
                   **({"widgets": nb.metadata["widgets"]} if "widgets" in nb.metadata else {})}
    nbformat.write(nb, SOLUTIONS / f"{stem}.ipynb")
    sol_py.write_text(py_text(nb, sol_py))
    return took


def _select(prefixes: list[str]) -> list[str]:
    stems = solution_stems()
    if not prefixes:
        return stems
    chosen = [s for s in stems if any(s == p or s.startswith(p) for p in prefixes)]
    if not chosen:
        raise SystemExit(f"no solution notebook matches {prefixes}; have {stems}")
    return chosen


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_utils build", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lessons", nargs="*", help="lesson stems or prefixes (default: all)")
    ap.add_argument("--check", action="store_true", help="exit 1 if any generated file is out of date")
    ap.add_argument("--execute", action="store_true", help="execute the selected solutions first")
    ap.add_argument("--force", action="store_true",
                    help="also replace learner notebooks with edits build did not make, after a timestamped backup")
    ap.add_argument("--backup-dir", metavar="DIR",
                    help="where --force puts backups (default ~/.pytorch_course/backups)")
    ap.add_argument("--nbgrader", metavar="OUTDIR", help="write an nbgrader course (source notebooks with "
                                                           "nbgrader cell metadata) to OUTDIR and stop")
    args = ap.parse_args(argv)
    if args.nbgrader:  # reached only as `python -m course_utils.build`: the course's command line
        # routes `build --nbgrader` to course_utils/instructor/nbgrader_export.py, so that build (an
        # author's command) never imports instructor/, which uses build
        print("run `python -m course_utils build --nbgrader OUTDIR [LESSON...]`", file=sys.stderr)
        return 2
    stems = _select(args.lessons)
    if args.check:
        problems = check(stems)
        for problem in problems:
            print(f"OUT OF DATE: {problem}")
        if not problems:
            print(f"build --check: {len(stems)} lessons, learner notebooks, reference modules, the exercise "
                  "index and solution pairs in sync.")
        return 1 if problems else 0
    if args.execute:
        execute_all(stems)
    for stem in stems:
        pair = pair_problem(stem) if (SOLUTIONS / f"{stem}.ipynb").exists() else None
        if pair:
            print(f"warning: {pair}", file=sys.stderr)
    try:
        res = write(stems, force=args.force, backup_to=Path(args.backup_dir) if args.backup_dir else None)
    except BuildError as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 1
    if res.refused:
        print("build: refused, nothing written. These files have edits build did not make "
              "(a learner's work?):", file=sys.stderr)
        for p in res.refused:
            print(f"  {p.relative_to(ROOT)}", file=sys.stderr)
        print(f"{WHO}\nAuthors who mean to replace them: `python -m course_utils build --force` writes a "
              "timestamped backup of each first and names it.", file=sys.stderr)
        return 1
    for b in res.backups:
        print(f"backup of the edited file: {b}")
    for p in res.written:
        print(f"wrote {p.relative_to(ROOT)}")
    for p in res.removed:
        why = "no solution notebook" if p.suffix == ".py" and p.parent.name == "answers" else \
            "learner notebooks have no text pair any more"
        print(f"removed {p.relative_to(ROOT)} ({why})")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
