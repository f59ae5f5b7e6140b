"""Generate learner notebooks from solution notebooks: one source for both versions.

``solutions/NN_name.py`` (jupytext percent) is the source an author edits; its paired
``solutions/NN_name.ipynb`` holds the executed outputs that nbval compares. From the solution
notebook, ``build`` writes ``notebooks/NN_name.ipynb`` and its ``.py`` pair:

- code between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` becomes a stub that parses and
  raises ``NotImplementedError`` (a stub at the top level of a cell tags the cell
  ``raises-exception`` so Run All and nbval go on);
- cells tagged ``solution-only`` are dropped;
- outputs and execution counts are cleared.

Commands::

    python -m course_utils build                 # regenerate learner notebooks
    python -m course_utils build --check         # exit 1 if anything is out of date
    python -m course_utils build --execute 01    # run solution 01 (from its .py), store outputs
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
SOLUTION_ONLY = "solution-only"
RAISES = "raises-exception"
STUB = 'raise NotImplementedError("Replace this line with your code")'


class BuildError(ValueError):
    pass


def stub_source(source: str, where: str = "cell") -> tuple[str, bool]:
    """Replace every solution block in ``source`` with a stub.

    Returns ``(new_source, top_level)`` where ``top_level`` says a stub sits at indentation 0
    (so running the cell raises)."""
    out: list[str] = []
    top_level = False
    inside = False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == BEGIN:
            if inside:
                raise BuildError(f"{where}: nested {BEGIN}")
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            top_level = top_level or indent == ""
            out.append(f"{indent}# YOUR CODE HERE")
            out.append(f"{indent}{STUB}")
        elif stripped == END:
            if not inside:
                raise BuildError(f"{where}: {END} without {BEGIN}")
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise BuildError(f"{where}: {BEGIN} without {END}")
    return "\n".join(out), top_level


def learner_notebook(solution: nbformat.NotebookNode, name: str = "notebook") -> nbformat.NotebookNode:
    """The learner version of a solution notebook (pure: no file access)."""
    nb = copy.deepcopy(solution)
    cells = []
    for i, cell in enumerate(nb.cells):
        tags = list(cell.get("metadata", {}).get("tags", []))
        if SOLUTION_ONLY in tags:
            continue
        cell.metadata = {"tags": tags} if tags else {}
        if cell.cell_type == "code":
            src, top = stub_source(cell.source, f"{name} cell {i}")
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
    for i, cell in enumerate(cells):
        cell["id"] = f"cell-{i:03d}"
    nb.cells = cells
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    return nb


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
        raise BuildError(f"{sol_ipynb.relative_to(ROOT)} is missing: run `python -m course_utils build --execute {stem}`")
    solution = nbformat.read(sol_ipynb, as_version=4)
    learner = learner_notebook(solution, stem)
    return {
        NOTEBOOKS / f"{stem}.ipynb": nbformat.writes(learner) + "\n",
        NOTEBOOKS / f"{stem}.py": py_text(learner, NOTEBOOKS / f"{stem}.py"),
    }


def check(stems: list[str], orphans: bool = True) -> list[str]:
    """Problems that make the repository out of date (empty when everything is in sync)."""
    problems = []
    for stem in stems:
        sol_py = SOLUTIONS / f"{stem}.py"
        try:
            files = expected_files(stem)
        except BuildError as exc:
            problems.append(str(exc))
            continue
        solution = nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4)
        if py_text(solution, sol_py) != sol_py.read_text():
            problems.append(
                f"solutions/{stem}.py and solutions/{stem}.ipynb differ: the stored outputs are stale. "
                f"Run `python -m course_utils build --execute {stem}`."
            )
        for path, text in files.items():
            if not path.exists() or path.read_text() != text:
                problems.append(f"{path.relative_to(ROOT)} is not what build generates from solutions/{stem}. "
                                "Run `python -m course_utils build` (never edit learner notebooks by hand).")
    extra = sorted({p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.*")} - set(solution_stems())) if orphans else []
    for stem in extra:
        problems.append(f"notebooks/{stem}.* has no solution notebook in solutions/.")
    return problems


def write(stems: list[str]) -> None:
    NOTEBOOKS.mkdir(exist_ok=True)
    for stem in stems:
        for path, text in expected_files(stem).items():
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
                print(f"wrote {path.relative_to(ROOT)}")


def execute(stem: str, timeout: int = 600) -> float:
    """Run ``solutions/<stem>.py`` top to bottom in a fresh kernel and store the outputs in
    ``solutions/<stem>.ipynb`` (and the normalised ``.py``). Returns seconds taken."""
    from nbclient import NotebookClient

    sol_py = SOLUTIONS / f"{stem}.py"
    nb = read_py(sol_py)
    # Executing solutions is not learner progress; one thread per kernel, as under the tests
    # (conftest.py), so thread-count-dependent numbers in the stored outputs match nbval's run.
    env = {"COURSE_PROGRESS_LOG": "", "OMP_NUM_THREADS": "1"}
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
    ap.add_argument("--nbgrader", metavar="OUTDIR", help="write an nbgrader course (source notebooks with "
                                                           "nbgrader cell metadata) to OUTDIR and stop")
    args = ap.parse_args(argv)
    if args.nbgrader:  # its own module: course_utils/instructor/nbgrader_export.py
        from .instructor import nbgrader_export

        return nbgrader_export.main([args.nbgrader, *args.lessons])
    stems = _select(args.lessons)
    if args.check:
        problems = check(stems)
        for p in problems:
            print(f"OUT OF DATE: {p}")
        if not problems:
            print(f"build --check: {len(stems)} lessons, learner notebooks and pairs in sync.")
        return 1 if problems else 0
    if args.execute:
        for stem in stems:
            took = execute(stem)
            print(f"executed solutions/{stem} in {took:.1f} s")
    try:
        write(stems)
    except BuildError as exc:
        print(f"build failed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
