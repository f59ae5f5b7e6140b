"""The notebook cell grammar (course_utils/cells.py) and the identity tags build writes from it:
``answer:NAME``, ``check:NAME``, ``predict:NAME`` in the solution pair and the learner notebook."""

from __future__ import annotations

from pathlib import Path

import jupytext
import nbformat
import pytest

from course_utils import build, cells
from course_utils.grading import registry

STEMS = build.solution_stems()


def _nb(*sources: str, **tags: list[str]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    for i, t in tags.items():
        nb.cells[int(i[1:])].metadata["tags"] = t
    return nb


@pytest.mark.parametrize("source, name", [
    ("ex.f.check(f)", "f"),
    ("x = 1\nex.f.check(f)\nprint(x)", "f"),
    ("ex.f.check(g, seed=3)", "f"),              # any top-level check call names its exercise
    ("def broken(:\nex.f.check(f)", "f"),       # a learner's half-written cell: its lines
    ("print('ex.f.check(f)')", None),
    ("# ex.f.check(f)", None),
    ("if True:\n    ex.f.check(f)", None),
    ("grading.check('00.f', f)", None),
])
def test_checked_name(source, name):
    assert cells.checked_name(source) == name


def test_predicted_name_and_answer_cells():
    solved = "quiz.int_div(\n    ### BEGIN PREDICTION\n    1\n    ### END PREDICTION\n)"
    assert cells.predicted_name(solved) == "int_div"
    assert cells.predicted_name(f"quiz.int_div(\n    {cells.PREDICT_STUB}\n)") == "int_div"
    assert cells.predicted_name("quiz = predictions_for('01')") is None
    assert cells.is_answer("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION")
    assert cells.is_answer(f"def f():\n    # YOUR CODE HERE\n    {cells.STUB}")
    assert not cells.is_answer("print('### BEGIN SOLUTION')")


def test_roles_follow_the_check_cells():
    nb = _nb(
        "import torch",                                                          # 0
        "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION",   # 1 answer of f
        "ex.f.check(f)",                                                         # 2
        "class G:\n    ### BEGIN SOLUTION\n    pass\n    ### END SOLUTION",        # 3 answer of g
        "def helper():\n    ### BEGIN SOLUTION\n    pass\n    ### END SOLUTION",   # 4 answer of g
        "quiz.q(\n    ### BEGIN PREDICTION\n    1\n    ### END PREDICTION\n)",     # 5
        "ex.g.check(G)",                                                         # 6
        "### BEGIN SOLUTION\nleft = 1\n### END SOLUTION",                        # 7 no check after it
    )
    assert cells.roles(nb.cells) == [[], ["answer:f"], ["check:f"], ["answer:g"], ["answer:g"],
                                     ["predict:q"], ["check:g"], []]


def test_tag_notebook_keeps_other_tags_and_replaces_stale_ones():
    nb = _nb("def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION", "ex.f.check(f)", "print(1)",
             c0=["raises-exception", "check:old"], c2=["answer:gone", "mine:keep", "solution-only"])
    assert cells.tag_notebook(nb)
    assert [c.metadata.get("tags") for c in nb.cells] == [
        ["raises-exception", "answer:f"], ["check:f"], ["mine:keep", "solution-only"]]
    assert not cells.tag_notebook(nb)  # idempotent
    assert cells.cells_of(nb, cells.ANSWER, "f") == [0] and cells.names(nb) == ["f"]


def test_tags_survive_the_jupytext_round_trip():
    nb = _nb("def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION", "ex.f.check(f)")
    cells.tag_notebook(nb)
    path = build.SOLUTIONS / "00_start_here.py"  # the repository's jupytext config
    text = build.py_text(nb, path)
    assert '# %% tags=["answer:f"]' in text and '# %% tags=["check:f"]' in text
    back = jupytext.reads(text, fmt="py:percent")
    assert [cells.tags(c) for c in back.cells] == [["answer:f"], ["check:f"]]
    assert build.py_text(back, path) == text


def test_lesson_of():
    stems = ["00_start_here", "01_tensors"]
    assert cells.lesson_of(Path("alice_01_tensors.ipynb"), None, stems) == "01_tensors"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('ex = exercises_for("00_start_here")')])
    assert cells.lesson_of(Path("homework.ipynb"), nb, stems) == "00_start_here"
    nb.metadata["course"] = {"lesson": "01_tensors"}  # what build records in a learner notebook
    assert cells.lesson_of(Path("homework.ipynb"), nb, stems) == "01_tensors"
    assert cells.lesson_of(Path("homework.ipynb"), None, stems) is None


# ------------------------------------------------------------------ the course's notebooks


def _tag_list(nb) -> list[list[str]]:
    return [[f"{r}:{n}" for r, n in cells.role_tags(c)] for c in nb.cells]


@pytest.mark.parametrize("stem", STEMS)
def test_solution_pair_and_learner_notebook_carry_the_identity_of_every_exercise(stem):
    py = jupytext.read(build.SOLUTIONS / f"{stem}.py")
    ipynb = nbformat.read(build.SOLUTIONS / f"{stem}.ipynb", as_version=4)
    learner = nbformat.read(build.NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    assert _tag_list(py) == _tag_list(ipynb), "the .py and the .ipynb disagree on tags"
    assert _tag_list(ipynb) == cells.roles(ipynb.cells), "stale tags: run `python -m course_utils build`"
    names = [ex.name for ex in registry.load_lesson(stem)]
    for nb, where in ((ipynb, "solution"), (learner, "learner")):
        assert sorted(cells.names(nb, cells.CHECK)) == sorted(names), where  # every exercise, once
        for name in names:
            (check,) = cells.cells_of(nb, cells.CHECK, name)
            answers = cells.cells_of(nb, cells.ANSWER, name)
            assert answers and max(answers) <= check, (where, name)
            assert cells.split_check_cell(cells.source(nb.cells[check]), {name: name}), (where, name)
            marker = cells.BEGIN if where == "solution" else cells.STUB
            assert all(marker in nb.cells[i].source for i in answers), (where, name)
    from course_utils.grading import predictions_for

    asked = cells.names(learner, cells.PREDICT)
    assert asked == cells.names(ipynb, cells.PREDICT)
    assert set(asked) <= set(dir(predictions_for(stem)))


def test_build_check_names_a_solution_with_stale_tags(tmp_path, monkeypatch):
    stem = "00_start_here"
    (tmp_path / "solutions").mkdir()
    for ext in ("py", "ipynb"):
        (tmp_path / "solutions" / f"{stem}.{ext}").write_text((build.SOLUTIONS / f"{stem}.{ext}").read_text())
    (tmp_path / "jupytext.toml").write_text((build.ROOT / "jupytext.toml").read_text())
    monkeypatch.setattr(build, "SOLUTIONS", tmp_path / "solutions")
    assert build.untagged_solutions([stem]) == []
    py = tmp_path / "solutions" / f"{stem}.py"
    py.write_text(py.read_text().replace('tags=["check:celsius_to_fahrenheit"]', 'tags=["check:other"]'))
    assert build.untagged_solutions([stem]) == [py]
    assert build.tag_solutions([stem]) == [py]
    assert py.read_text() == (build.SOLUTIONS / f"{stem}.py").read_text()


def test_the_grader_reads_no_solution_notebook(monkeypatch):
    """Which answer each check cell passes comes from the exercise's own name (the grammar's
    ``ex.NAME.check(NAME)``), not from solutions/ at grade time."""
    from course_utils.instructor import grade

    def no_reading(*args, **kwargs):
        raise AssertionError("read a notebook")

    monkeypatch.setattr(nbformat, "read", no_reading)
    monkeypatch.setattr(jupytext, "read", no_reading)
    for stem in STEMS:
        names = [ex.name for ex in registry.load_lesson(stem)]
        assert grade.expected_checks(stem) == {n: n for n in names}
