"""One source for every reference: the modules in course_utils/answers/ are
generated from the solution notebooks' answer cells (course_utils/references.py), and the
grader accepts each generated definition (the notebook and the grader agree)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import textwrap

import pytest

from course_utils import build, references
from course_utils.grading import registry
from course_utils.grading.runner import run_check

STEMS = build.solution_stems()


def _module(stem: str):
    return importlib.import_module(f"course_utils.answers.{references.module_name(stem)}")


@pytest.mark.parametrize("stem", STEMS)
def test_generated_module_is_a_fresh_extraction(stem):
    path = references.module_path(stem)
    text = references.module_text(stem)
    assert text is not None, f"solutions/{stem}.py has no answer cells"
    assert path.read_text() == text, f"{path.name} is stale: run `python -m course_utils build`"
    assert text.startswith(f'"""Generated from solutions/{stem}.py by `python -m course_utils build`; do not edit.')
    assert references.BEGIN not in text and references.END not in text


def test_the_package_init_is_generated():
    assert (references.PACKAGE / "__init__.py").read_text() == references.INIT_TEXT


def _imported_modules(path) -> set[str]:
    import ast

    out = set()
    for node in ast.parse(path.read_text()).body:  # module level: what importing runs
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
    return out


def test_modules_import_fast_with_no_output_and_no_files(tmp_path):
    """Importing a generated module runs no demo: it prints nothing, writes no file (in the
    working directory or the home folder) and takes a moment beyond its imports."""
    home, cwd = tmp_path / "home", tmp_path / "cwd"
    home.mkdir()
    cwd.mkdir()
    names = [f"course_utils.answers.{references.module_name(s)}" for s in STEMS]
    # what the answers import (torch, tensorboard, ...) is imported first and not timed
    files = [references.PACKAGE / f"{references.module_name(s)}.py" for s in STEMS]
    third_party = sorted({m for f in files for m in _imported_modules(f) if not m.startswith("course_utils")})
    code = textwrap.dedent(f"""
        import importlib, json, sys, time
        for name in {third_party!r}:
            importlib.import_module(name)
        import course_utils.datasets
        took = {{}}
        for name in {names!r}:
            start = time.perf_counter()
            importlib.import_module(name)
            took[name] = time.perf_counter() - start
        sys.__stderr__.write("TIMES" + json.dumps(took))
    """)
    env = {**os.environ, "HOME": str(home), "COURSE_PROGRESS_LOG": str(tmp_path / "log.jsonl"),
           "PYTHONPATH": str(build.ROOT), "MPLCONFIGDIR": str(tmp_path / "mpl")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == "", proc.stdout[:500]
    errors, _, times = proc.stderr.partition("TIMES")
    assert errors.strip() == "", errors[-1000:]
    assert list(cwd.iterdir()) == [] and list(home.iterdir()) == []
    assert not (tmp_path / "log.jsonl").exists()
    slow = {name: t for name, t in json.loads(times).items() if t > 1.0}
    assert not slow, f"importing a reference module should take well under a second: {slow}"


def _generated_answers() -> list[str]:
    out = []
    for ex in registry.all_exercises():
        if ex.lesson in STEMS and hasattr(_module(ex.lesson), ex.name):
            out.append(ex.id)
    return out


def test_every_exercise_has_its_answer_in_the_generated_module():
    missing = [ex.id for ex in registry.all_exercises() if not hasattr(_module(ex.lesson), ex.name)]
    assert not missing, f"exercises whose answer no solution notebook's answer cell defines: {missing}"


@pytest.mark.parametrize("exercise_id", _generated_answers())
def test_the_grader_accepts_the_notebooks_answer(exercise_id):
    """The notebook and the grader agree: the definition generated from the solution notebook's
    answer cell passes the exercise's check."""
    ex = registry.get(exercise_id)
    answer = getattr(_module(ex.lesson), ex.name)
    res = run_check(ex, answer, seed=3)
    assert res.status == "correct", res.text()


# ------------------------------------------------------------------ the extractor on its own


def _cells(*sources: str) -> list[tuple[str, str]]:
    return [("code", s) for s in sources]


def test_closure_takes_what_the_answer_needs_and_no_demo():
    cells = _cells(
        "import math\nimport torch\nfrom torch import nn, optim\n%matplotlib inline",
        "SCALE = 2 * 3\nLIMIT = SCALE + 1\nmodel = nn.Linear(2, 2)\nprint(model)",
        "def helper(x):\n    return math.sqrt(x) * SCALE\n\nhelper(4)",
        "def unused():\n    return optim",
        "def answer(x):\n    ### BEGIN SOLUTION\n    return helper(x) + LIMIT\n    ### END SOLUTION\n\n\nanswer(1)",
        "class Net(nn.Module):\n    def forward(self, x):\n        ### BEGIN SOLUTION\n"
        "        return torch.relu(x)\n        ### END SOLUTION",
        "torch.save(Net().state_dict(), 'x.pt')",
    )
    body = references.extract(cells, "nb")
    assert body is not None
    ns: dict = {}
    exec(compile(body, "<generated>", "exec"), ns)
    assert ns["answer"](4) == 2 * 6 + 7
    assert "Net" in ns and "helper" in ns
    for demo in ("print(", "helper(4)", "answer(1)", "torch.save", "model =", "unused", "optim", "%matplotlib"):
        assert demo not in body, demo
    assert "### BEGIN" not in body
    assert body.splitlines()[:3] == ["import math", "import torch", "from torch import nn"]


def test_a_later_helper_and_a_redefinition_resolve_like_the_notebook():
    cells = _cells(
        "def f():\n    return 1",
        "def answer():\n    ### BEGIN SOLUTION\n    return f() + g()\n    ### END SOLUTION",
        "def g():\n    return 10",
        "def f():\n    return 100",
    )
    body = references.extract(cells, "nb")
    assert body is not None
    assert "return 100" not in body and "return 10" in body


@pytest.mark.parametrize("definition", [
    "data = torch.randn(3)",  # a call: a demo value, not a constant
    "for data in range(3):\n    pass",
    "with open('f') as data:\n    pass",
])
def test_a_needed_name_defined_by_a_demo_statement_is_a_build_error(definition):
    cells = _cells("import torch", definition,
                   "def answer():\n    ### BEGIN SOLUTION\n    return data\n    ### END SOLUTION")
    with pytest.raises(references.ExtractError, match="uses `data`"):
        references.extract(cells, "nb")


def test_an_undefined_name_is_a_build_error():
    cells = _cells("def answer():\n    ### BEGIN SOLUTION\n    return nowhere\n    ### END SOLUTION")
    with pytest.raises(references.ExtractError, match="never defines"):
        references.extract(cells, "nb")


def test_a_notebook_without_answers_has_no_module():
    assert references.extract(_cells("import torch", "print(1)"), "nb") is None


def test_build_check_names_a_stale_or_leftover_module(tmp_path, monkeypatch):
    package = tmp_path / "course_utils" / "answers"
    package.mkdir(parents=True)
    for path, text in references.expected_files(STEMS).items():
        (package / path.name).write_text(text)
    monkeypatch.setattr(build, "ROOT", tmp_path)
    assert build.reference_problems(STEMS) == []
    stale = references.module_path(STEMS[1], package)
    stale.write_text(stale.read_text().replace("def ", "def edited_", 1))
    (package / "l99_gone.py").write_text('"""Generated from solutions/99_gone.py by ..."""')
    (package / "l98_mine.py").write_text("# not generated: never removed")
    problems = build.reference_problems(STEMS)
    assert len(problems) == 2
    assert stale.name in problems[0] and "is not what build generates" in problems[0]
    assert "l99_gone.py" in problems[1] and "no solution notebook" in problems[1]
    assert references.stale_modules(STEMS, package) == [package / "l99_gone.py"]  # what build removes


def test_a_course_folder_without_the_package_has_no_reference_modules(tmp_path, monkeypatch):
    monkeypatch.setattr(build, "ROOT", tmp_path)
    assert build.references_dir() is None and build.reference_files(STEMS) == {}


@pytest.mark.parametrize("stem", STEMS)
def test_solution_shows_the_notebooks_code(stem):
    """With its reference taken from the generated module, an exercise's ``solution()`` shows the
    answer cell's definition as the notebook has it (its lines, marker lines dropped)."""
    import dataclasses

    from course_utils.grading.notebook import solution_source

    cells = references.notebook_cells(stem)
    for ex in registry.load_lesson(stem):
        cell = next(text for kind, text in cells if kind == "code" and references.BEGIN in text
                    and (f"def {ex.name}(" in text or f"class {ex.name}(" in text or f"class {ex.name}:" in text))
        lines = cell.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith((f"def {ex.name}(", f"class {ex.name}")))
        end = next((i for i in range(start + 1, len(lines)) if lines[i] and not lines[i][0].isspace()), len(lines))
        written = "\n".join(line for line in lines[start:end] if line.strip() not in (references.BEGIN, references.END))
        shown = solution_source(dataclasses.replace(ex, reference=getattr(_module(stem), ex.name), solution=None))
        assert shown == written.strip(), ex.id
