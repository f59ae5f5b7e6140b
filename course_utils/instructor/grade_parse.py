"""Parsing a submission, step 1 of ``grade`` (:mod:`.grade`): which notebooks a PATH names, which
lesson and student each is, which exercises its check cells check (``ex.NAME.check(ANSWER)``;
the cell grammar is course_utils/cells.py).

Nothing here runs a notebook; :mod:`.grade_run` does, in a sandbox."""

from __future__ import annotations

import os
import re
import stat
import warnings
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat

from .. import cells
from ..cells import check_statement, split_check_cell  # noqa: F401  (the grader's names for them)
from .grade_report import shown

if TYPE_CHECKING:
    from ..exercise_index import IndexedExercise

ROOT = Path(__file__).resolve().parents[2]
MAX_NOTEBOOK_BYTES = 50 * 1024**2
# JSON values a submitted notebook may hold: the course's biggest holds about 2,300. Parsing costs
# the grader's own (unsandboxed) memory, ~0.4 kB per empty object: 800,000 of them in 2.4 MB cost
# it a gigabyte (a review found it); 100,000 cost at most ~45 MB. Counted before parsing.
MAX_JSON_VALUES = 100_000
# A jupytext script has no JSON to count, and two bombs of its own: jupytext's cost grows faster
# than its cells (10,000 one-line cells took 26 s on a busy machine, 350,000 in 1 MB did not end in
# 2 min) and a YAML header with aliases expands when it is copied (nine levels of ten hung the
# grader). The course's longest script has 990 lines; a script over the limit, or whose header
# holds an alias, is refused unparsed.
MAX_SCRIPT_LINES = 10_000
# And PyYAML's time grows with the square of a header's nesting (a review: 8,000 `[` took 51 s,
# with SIGTERM waiting): a header is a few hundred bytes (the course's: ~300); longer or deeper
# than these is refused before YAML reads it. A script is at most a megabyte (the longest: 43 kB).
MAX_SCRIPT_BYTES = 1024**2
MAX_HEADER_BYTES = 8 * 1024
MAX_HEADER_DEPTH = 16
_JSON_TOKEN = re.compile(rb'[,{[]|"[^"\\]*(?:\\.[^"\\]*)*"')  # a comma, an opening bracket or a whole string


def lesson_stems() -> list[str]:
    """Every lesson with exercises, in course order, from the generated exercise index: the host
    process of ``grade`` never imports the graders (nor torch); the judge does, in its sandbox."""
    from ..exercise_index import EXERCISES

    return list(dict.fromkeys(e.lesson for e in EXERCISES))


def lesson_exercises(lesson: str) -> list[IndexedExercise]:
    """A lesson's exercises in course order, from the exercise index (no grader imported)."""
    from ..exercise_index import EXERCISES

    return [e for e in EXERCISES if e.lesson == lesson]


def identify_lesson(path: Path, nb: nbformat.NotebookNode | None, stems: list[str]) -> str | None:
    """The lesson of a submitted notebook: from its file name, else the lesson build recorded in
    its metadata, else its ``exercises_for`` call (course_utils/cells.py)."""
    return cells.lesson_of(path, nb, stems)


def _name_part(path: Path, lesson: str | None) -> str:
    """The student a file name names: what comes before the lesson (``alice`` in
    ``alice_01_tensors.ipynb``); what follows it is never a name (``01_tensors-Copy1``: Jupyter's
    copy, whose ``Copy1`` a review's student folder ``copy1`` took for its own name, voiding
    alice's work). A name without the lesson in it is a name as a whole."""
    stem = shown(path.stem)
    if lesson and lesson in stem:
        stem = stem.split(lesson, 1)[0]
    return stem.strip(" _-.")


def _folder_student(path: Path, root: Path | None) -> str | None:
    """The first folder below ``root`` that holds ``path`` (``root/alice/week1/x.ipynb``: alice)."""
    if root is None or not root.is_dir():
        return None
    try:
        rel = path.parent.resolve().relative_to(root.resolve())
    except ValueError:
        return None
    return shown(rel.parts[0]) if rel.parts else None


def identity(path: Path, lesson: str | None, root: Path | None,
             known: Collection[str] = ()) -> tuple[str, str | None]:
    """``(student, refusal)``. In a student's folder, the folder names the student; a file name
    there that names another ``known`` student is refused (``refusal`` says why) and credited to
    no one. Outside a folder: the file name, else the folder the file is in."""
    folder = _folder_student(path, root)
    named = _name_part(path, lesson)
    if folder is not None:
        others = {k.casefold() for k in known} - {folder.casefold()}
        if named and named.casefold() in others:
            return folder, (f"the file name names {named!r}, but the file is in {folder!r}'s folder: "
                            "credited to no one (move or rename it, then grade again)")
        return folder, None
    if named:
        return named, None
    return shown(path.resolve().parent.name or path.stem), None


def known_students(items: Iterable[tuple[Path, Path | None]], stems: list[str]) -> set[str]:
    """Every student a batch names: its student folders, and the file names outside them."""
    known: set[str] = set()
    for path, root in items:
        lesson = cells.lesson_of(path, None, stems)
        folder = _folder_student(path, root)
        name = folder if folder is not None else (_name_part(path, lesson) if lesson else "")
        if name:
            known.add(name)
    return known


def student_of(path: Path, lesson: str | None, root: Path | None, known: Collection[str] = ()) -> str:
    return identity(path, lesson, root, known)[0]


def expected_checks(lesson: str) -> dict[str, str]:
    """Exercise name -> the answer name its check cell passes: ``ex.NAME.check(NAME)`` (the cell
    grammar, course_utils/cells.py; no solution notebook is read at grade time)."""
    return {ex.name: ex.name for ex in lesson_exercises(lesson)}


def find_notebooks(paths: Iterable[str | os.PathLike[str]],
                   hidden: list[Path] | None = None) -> list[tuple[Path, Path | None]]:
    """``(notebook, root)`` for every notebook under ``paths``; ``root`` is the folder given.
    Notebooks in hidden folders (``.name``) are left out and, when ``hidden`` is a list, added
    to it (Jupyter's ``.ipynb_checkpoints`` silently). A link to a folder (or a dangling link)
    below a folder given is listed as an item of its own, never followed: grading it gives a
    ``not_regular_file`` row instead of silence."""
    out: list[tuple[Path, Path | None]] = []
    seen: set[Path] = set()
    for p in map(Path, paths):
        if p.is_dir():
            items: list[tuple[Path, Path | None]] = []
            for q in _walk(p):
                parts = q.relative_to(p).parts
                if ".ipynb_checkpoints" in parts:
                    continue
                if any(part.startswith(".") for part in parts):
                    if hidden is not None:
                        hidden.append(q)
                    continue
                items.append((q, p))
        else:
            items = [(p, None)]
        for q, root in items:
            key = q.parent.resolve() / q.name
            if key not in seen:
                seen.add(key)
                out.append((q, root))
    return out


def _walk(top: Path) -> list[Path]:
    """Every ``*.ipynb`` below ``top`` (whatever its type) and every link that is not one but
    leads to a folder or nowhere, sorted; links are never followed (``Path.rglob`` skipped a
    linked student folder without a word)."""
    found: list[Path] = []
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            path = folder / e.name
            if e.name.endswith(".ipynb"):
                found.append(path)
            elif e.is_symlink() and (e.is_dir() or not os.path.exists(path)):  # a linked folder, or a link to nothing
                found.append(path)
            if e.is_dir(follow_symlinks=False):
                stack.append(path)
    return sorted(found)


NOT_REGULAR_FOLDER = "not a regular folder (a link: nothing in it is read; copy the folder in instead)"


class NotRegularFile(OSError):
    """A submission that is a symlink, FIFO, device, socket or folder: never opened or read."""


def read_bytes(path: Path, limit: int = MAX_NOTEBOOK_BYTES) -> bytes:
    """The bytes of a submitted file, if it is a regular file of at most ``limit`` bytes.
    Never follows a symlink or blocks on a FIFO: the type is checked with ``lstat`` before the
    file is opened (``O_NOFOLLOW | O_NONBLOCK``) and again on the opened descriptor."""
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode) and path.suffix != ".ipynb" and (path.is_dir() or not path.exists()):
        raise NotRegularFile(NOT_REGULAR_FOLDER)
    if not stat.S_ISREG(mode):
        raise NotRegularFile("not a regular file (a symlink, FIFO, device, socket or folder)")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile("not a regular file (a symlink, FIFO, device, socket or folder)")
        if st.st_size > limit:
            raise ValueError(f"larger than {limit // 1024**2} MB")
        chunks, n = [], 0
        while block := os.read(fd, 1 << 20):
            n += len(block)
            if n > limit:
                raise ValueError(f"larger than {limit // 1024**2} MB")
            chunks.append(block)
    finally:
        os.close(fd)
    return b"".join(chunks)


def json_values(data: bytes, stop: int = MAX_JSON_VALUES) -> int:
    """An upper bound on the values (objects, arrays, strings, numbers, ...) a JSON parser would
    build from ``data`` before it stops, counted up to just past ``stop``: each value is a
    container or follows a comma (strings are skipped whole: their commas and brackets are
    text). Constant memory, one match at a time: ~40 ms for the course's biggest notebook."""
    n = 1
    for m in _JSON_TOKEN.finditer(data):
        if data[m.start()] != 0x22:  # not a string
            n += 1
            if n > stop:
                break
    return n


def check_script(text: str) -> None:
    """Refuse (``ValueError``) a jupytext script jupytext should not read: longer than
    :data:`MAX_SCRIPT_LINES`, or with a YAML alias in the header jupytext reads (its first lines,
    between two ``# ---``)."""
    if len(text) > MAX_SCRIPT_BYTES:
        raise ValueError(f"script too long to read (more than {MAX_SCRIPT_BYTES:,} characters, the limit): not parsed")
    lines = text.splitlines()
    if len(lines) > MAX_SCRIPT_LINES:
        raise ValueError(f"script too long to read (more than {MAX_SCRIPT_LINES:,} lines, the limit): not parsed")
    header = _yaml_header(lines)
    if header is None:
        return
    if len(header) > MAX_HEADER_BYTES or _depth(header) > MAX_HEADER_DEPTH:
        raise ValueError(f"the script's header is too long or too deeply nested to read (limits: "
                         f"{MAX_HEADER_BYTES:,} characters, {MAX_HEADER_DEPTH} levels): not parsed")
    import yaml  # type: ignore[import-untyped]  # PyYAML, a jupytext dependency, ships no types

    try:
        for event in yaml.parse(header):
            if isinstance(event, yaml.AliasEvent):
                raise ValueError("the script's header repeats a YAML anchor (an alias, `*name`): not parsed")
    except yaml.YAMLError as exc:
        raise ValueError(f"the script's header is no YAML: {str(exc).splitlines()[0]}") from None


def _depth(text: str) -> int:
    """An upper bound on a YAML text's nesting: brackets (counted in strings too) plus indentation."""
    depth = deepest = 0
    for ch in text:
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    indent = max((len(line) - len(line.lstrip(" ")) for line in text.splitlines()), default=0)
    return deepest + indent // 2


def _yaml_header(lines: list[str]) -> str | None:
    """The text of a script's YAML header as jupytext finds it (after a ``#!`` line and an
    encoding line, between two ``# ---`` lines of comments), uncommented; ``None`` without one."""
    start = 0
    while start < min(2, len(lines)) and (lines[start].startswith("#!") or re.match(r"^[ \t\f]*#.*?coding[:=]",
                                                                                   lines[start])):
        start += 1
    if start >= len(lines) or lines[start].rstrip() != "# ---":
        return None
    body = []
    for line in lines[start + 1:]:
        if not line.startswith("#") or line.rstrip() == "# ---":
            break
        body.append(line[2:] if line.startswith("# ") else line[1:])
    return "\n".join(body)


def parse_notebook(path: Path, data: bytes) -> nbformat.NotebookNode:
    """A submitted notebook from its bytes: UTF-8, valid JSON, valid nbformat 4 (every cell's
    ``source`` a string or a list of strings, ...), else an exception saying why."""
    values = json_values(data) if path.suffix != ".py" else 0
    if values > MAX_JSON_VALUES:
        raise ValueError(f"notebook too complex to read (more than {MAX_JSON_VALUES:,} JSON values, the limit): "
                         "not parsed")
    text = data.decode("utf-8")
    if path.suffix == ".py":
        import jupytext

        check_script(text)

        nb = jupytext.reads(text, fmt="py")
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a missing cell id is repaired, not an error
            nb = nbformat.reads(text, as_version=4)
    if not isinstance(nb.get("cells"), list):
        raise ValueError("no list of cells")
    nbformat.validate(nb)
    return nb
