"""The learner notebooks are generated from the solutions, and stay so."""

from __future__ import annotations

import nbformat
import pytest

from course_utils import build


def test_learner_notebooks_match_their_solutions():
    problems = build.check(build.solution_stems())
    assert not problems, "\n".join(problems)


def test_every_solution_has_a_learner_twin_and_exercises():
    from course_utils.grading import registry

    stems = build.solution_stems()
    assert "00_start_here" in stems
    for stem in stems:
        assert (build.NOTEBOOKS / f"{stem}.ipynb").exists()
    assert set(registry.lesson_modules()) <= set(stems), "exercise modules without a lesson"


def test_stub_replaces_solution_and_keeps_the_rest():
    src = 'def f(x):\n    """doc"""\n    ### BEGIN SOLUTION\n    y = x + 1\n    return y\n    ### END SOLUTION\n\nprint(1)'
    out, top = build.stub_source(src)
    assert "y = x + 1" not in out and "raise NotImplementedError" in out
    assert '"""doc"""' in out and "print(1)" in out
    assert not top
    compile(out, "<stub>", "exec")
    ns: dict = {}
    exec(out.replace("print(1)", ""), ns)
    with pytest.raises(NotImplementedError):
        ns["f"](1)


def test_top_level_stub_is_tagged_to_raise():
    sol = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("### BEGIN SOLUTION\nanswer = 42\n### END SOLUTION"),
        nbformat.v4.new_code_cell("secret = 1", metadata={"tags": ["solution-only"]}),
        nbformat.v4.new_markdown_cell("text"),
    ])
    sol.cells[0].outputs = [nbformat.v4.new_output("stream", text="x")]
    sol.cells[0].execution_count = 3
    learner = build.learner_notebook(sol)
    assert len(learner.cells) == 2
    code = learner.cells[0]
    assert "answer = 42" not in code.source and code.outputs == [] and code.execution_count is None
    assert "raises-exception" in code.metadata["tags"]


@pytest.mark.parametrize("bad", [
    "### BEGIN SOLUTION\nx = 1",
    "x = 1\n### END SOLUTION",
    "### BEGIN SOLUTION\n### BEGIN SOLUTION\n### END SOLUTION",
])
def test_unbalanced_markers_are_errors(bad):
    with pytest.raises(build.BuildError):
        build.stub_source(bad)


def test_check_reports_a_hand_edited_learner_notebook(tmp_path, monkeypatch):
    stem = "00_start_here"
    for folder in ("solutions", "notebooks"):
        (tmp_path / folder).mkdir()
    for ext in ("ipynb", "py"):
        (tmp_path / "solutions" / f"{stem}.{ext}").write_text((build.SOLUTIONS / f"{stem}.{ext}").read_text())
        (tmp_path / "notebooks" / f"{stem}.{ext}").write_text((build.NOTEBOOKS / f"{stem}.{ext}").read_text())
    (tmp_path / "jupytext.toml").write_text((build.ROOT / "jupytext.toml").read_text())
    monkeypatch.setattr(build, "ROOT", tmp_path)
    monkeypatch.setattr(build, "SOLUTIONS", tmp_path / "solutions")
    monkeypatch.setattr(build, "NOTEBOOKS", tmp_path / "notebooks")
    assert build.check([stem]) == []
    p = tmp_path / "notebooks" / f"{stem}.py"
    p.write_text(p.read_text().replace("Replace this line", "Replace that line"))
    assert any("notebooks/00_start_here.py" in s for s in build.check([stem]))
    s = tmp_path / "solutions" / f"{stem}.py"
    s.write_text(s.read_text() + "\n# %%\nprint('new cell')\n")
    assert any("stale" in s for s in build.check([stem]))
