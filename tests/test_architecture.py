"""The package's layers point one way (ARCHITECTURE.md). Reads the source with `ast` (imports
nothing): every `import` of a course_utils module, at the top of a file or inside a function,
is an arrow between two parts of the package. A new import circle between parts fails here;
the circles that exist today are listed in KNOWN_CIRCLES, each by the arrow that closes it."""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "course_utils"

# Debts (ARCHITECTURE.md): the arrow that closes each circle. None left (issue 12 broke the last
# two: registry discovery by name, `build --nbgrader` routed by the command line); keep it so.
KNOWN_CIRCLES: set[tuple[str, str]] = set()
# The same inside a part: module -> module. None left (issue 12 item 5 broke the last two); keep it so.
KNOWN_MODULE_CIRCLES: set[tuple[str, str]] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def part_of(module: str) -> str:
    """The part of the package a module belongs to: a subpackage (grading, exercises,
    instructor) or a top-level module (progress, build...)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


@cache
def import_graph() -> dict[str, set[str]]:
    """course_utils module -> the course_utils modules it imports (anywhere in the file)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                targets = [f"{origin}.{a.name}" if f"{origin}.{a.name}" in modules else origin
                           for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def part_graph() -> dict[str, set[str]]:
    """A fresh copy each call (callers remove the known arrows from it)."""
    arrows: dict[str, set[str]] = defaultdict(set)
    for a, targets in import_graph().items():
        for b in targets:
            if part_of(a) != part_of(b):
                arrows[part_of(a)].add(part_of(b))
    return arrows


def find_circle(arrows: dict[str, set[str]]) -> list[str] | None:
    """One circle in the graph, as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(arrows.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(arrows):
        if start not in state and (found := visit(start)):
            return found
    return None


def test_the_walk_sees_known_arrows():
    # guards the walk itself: relative, absolute and function-level imports are all seen
    graph = import_graph()
    assert "course_utils.grading.spec" in graph["course_utils.grading.runner"]  # `from .spec import`
    assert "course_utils.progress" in graph["course_utils.grading.notebook"]  # `from .. import progress`
    assert "course_utils.grading.registry" in graph["course_utils.progress_view"]  # inside a function
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": {"c"}}) is None


def test_no_new_import_circle_between_parts_of_the_package():
    arrows = part_graph()
    for a, b in KNOWN_CIRCLES:
        arrows[a].discard(b)
    circle = find_circle(arrows)
    assert circle is None, (
        f"new import circle: {' -> '.join(circle)}. Layers point one way (ARCHITECTURE.md): move the "
        "shared code down a layer, or pass it in, instead of importing upwards.")


def test_known_circles_are_still_there():
    arrows, graph = part_graph(), import_graph()
    gone = sorted((a, b) for a, b in KNOWN_CIRCLES if b not in arrows.get(a, ()))
    present = {name for name in graph} | {b for targets in graph.values() for b in targets}
    gone += sorted((a, b) for a, b in KNOWN_MODULE_CIRCLES
                   if a in present and b not in graph.get(a, ()))  # (a module not merged yet is no debt)
    assert not gone, (f"{gone} no longer imported (a circle is gone): remove them from KNOWN_CIRCLES or "
                      "KNOWN_MODULE_CIRCLES in tests/test_architecture.py and from ARCHITECTURE.md's known debts")


def test_no_import_circle_between_modules_inside_a_part():
    # inside grading/ (and every other part) modules form a one-way chain too
    # A package's __init__ listing its own submodules (`from . import mlp, rms_norm`: a lesson
    # package registering its exercises in the notebook's order) is containment, not an arrow;
    # the submodules may import the package's constants (`from . import LESSON`).
    graph = import_graph()
    inner = {a: {b for b in targets if part_of(b) == part_of(a) and (a, b) not in KNOWN_MODULE_CIRCLES
                 and not b.startswith(a + ".")}
             for a, targets in graph.items()}
    circle = find_circle(inner)
    assert circle is None, f"import circle inside a part of the package: {' -> '.join(circle)}"


# The one module of the grading core that writes the progress log: the notebook-facing handles
# (``ex.NAME.check``, ``quiz.NAME(...)``). The checker (runner, predict, ...) gives a verdict and
# never writes the log, so grading/ can be used (by the grader, by tests) without logging.
LOG_WRITERS_IN_GRADING = {"course_utils.grading.notebook"}


def test_the_progress_log_imports_nothing_of_the_course():
    # progress is state: it does not know which exercises exist (callers pass them in)
    assert import_graph().get("course_utils.progress", set()) == set()


def test_only_the_notebook_handles_write_the_log():
    graph = import_graph()
    writers = {m for m, targets in graph.items()
               if part_of(m) == "grading" and "course_utils.progress" in targets}
    assert writers == LOG_WRITERS_IN_GRADING, (
        "only grading/notebook.py (the learner's handles) may import course_utils.progress; "
        "the checker returns a Result and the handle logs it")


SHARED_LESSON_MATERIAL = {"course_utils.datasets", "course_utils.plotting"}


def test_lesson_props_live_in_their_folder_named_by_lesson():
    props = sorted(p.stem for p in (PACKAGE / "lesson_props").glob("*.py") if p.stem != "__init__")
    assert props and all(name[0] == "l" and name[1:3].isdigit() and name[3] == "_" for name in props), props


def test_lesson_props_and_the_core_stay_apart():
    graph = import_graph()
    for module, targets in graph.items():
        if part_of(module) == "lesson_props":  # a prop uses only the shared material and other props
            assert all(part_of(t) == "lesson_props" or t in SHARED_LESSON_MATERIAL for t in targets), module
        if part_of(module) == "grading":  # the core never reaches up to a lesson's demos
            assert not {t for t in targets if part_of(t) == "lesson_props"}, module


# The layers of ARCHITECTURE.md's picture. An arrow may point down or stay in its layer (the
# circle test above keeps a layer one way); pointing up fails, except the known debts.
LAYERS = {
    6: {"course_utils", "__main__"},  # entry points: __main__ dispatches by name, with importlib
    5: {"build", "reset", "update", "doctor", "launch", "progress_cli", "instructor"},  # commands
    4: {"dashboard", "progress_view"},  # views
    3: {"exercises"},  # the declarations
    2: {"grading"},  # the core
    1: {"progress", "backups"},  # state
    0: {"links", "threads", "course_files", "colab", "lesson_times", "ddp_launch", "jupyter_settings",
        "cells", "references",  # the notebook cell grammar; answers extracted from the solutions
        "datasets", "plotting", "lesson_props"},  # leaves
}


def layer_of(part: str) -> int:
    for layer, parts in LAYERS.items():
        if part in parts:
            return layer
    raise AssertionError(f"{part!r} is in no layer: place it in LAYERS (tests/test_architecture.py) "
                         "and in ARCHITECTURE.md's picture")


def test_every_arrow_points_down_or_sideways():
    up = sorted((a, b) for a, targets in part_graph().items() for b in targets
                if layer_of(b) > layer_of(a) and (a, b) not in KNOWN_CIRCLES)
    assert not up, f"imports that point up a layer (ARCHITECTURE.md): {up}"
    for path in PACKAGE.rglob("*.py"):  # a part with no arrows at all is placed too
        layer_of(part_of(module_name(path)))


def test_an_exercise_is_one_short_file():
    """The exercise as the unit (CONTRIBUTING.md): a lesson is a package of exercise files, none
    over 300 lines."""
    exercises = PACKAGE / "exercises"
    lessons = sorted(p for p in exercises.iterdir() if p.name[:1] == "l" and p.name[1:3].isdigit())
    assert lessons and all(p.is_dir() for p in lessons), [p.name for p in lessons if not p.is_dir()]
    for lesson in lessons:
        for path in lesson.glob("*.py"):
            n = len(path.read_text(encoding="utf-8").splitlines())
            assert n <= 300, f"{path.relative_to(PACKAGE)} has {n} lines: split it, or move shared helpers to _kit.py"
