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
    src = ('def f(x):\n    """doc"""\n    ### BEGIN SOLUTION\n    y = x + 1\n    return y\n'
           '    ### END SOLUTION\n\nprint(1)')
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


@pytest.fixture
def course_copy(tmp_path, monkeypatch):
    """Lesson 00 (solution pair and learner notebook) in a temporary course folder."""
    stem = "00_start_here"
    for folder in ("solutions", "notebooks"):
        (tmp_path / folder).mkdir()
    for ext in ("ipynb", "py"):
        (tmp_path / "solutions" / f"{stem}.{ext}").write_text((build.SOLUTIONS / f"{stem}.{ext}").read_text())
    (tmp_path / "notebooks" / f"{stem}.ipynb").write_text((build.NOTEBOOKS / f"{stem}.ipynb").read_text())
    (tmp_path / "jupytext.toml").write_text((build.ROOT / "jupytext.toml").read_text())
    monkeypatch.setattr(build, "SOLUTIONS", tmp_path / "solutions")
    monkeypatch.setattr(build, "NOTEBOOKS", tmp_path / "notebooks")
    real_refs = build.references_dir()
    assert real_refs is not None
    refs = tmp_path / "course_utils" / "answers"
    refs.mkdir(parents=True)
    for name in ("__init__.py", f"l{stem}.py"):
        (refs / name).write_text((real_refs / name).read_text())
    monkeypatch.setattr(build, "ROOT", tmp_path)
    return tmp_path


def test_check_reports_a_hand_edited_learner_notebook(course_copy):
    stem = "00_start_here"
    assert build.check([stem]) == []
    p = course_copy / "notebooks" / f"{stem}.ipynb"
    p.write_text(p.read_text().replace("Replace this line", "Replace that line"))
    problems = build.check([stem])
    assert any("notebooks/00_start_here.ipynb has edits that build did not make" in s for s in problems)
    assert any("Learners: don't run it" in s and "course_utils update" in s for s in problems)
    s = course_copy / "solutions" / f"{stem}.py"
    s.write_text(s.read_text() + "\n# %%\nprint('new cell')\n")
    problems = build.check([stem])
    assert any("solutions/00_start_here.py is newer than 00_start_here.ipynb" in s
               and "build --execute 00_start_here" in s for s in problems), problems


def test_learner_notebooks_have_no_text_pair_and_carry_their_cell_hashes():
    assert not list(build.NOTEBOOKS.glob("*.py"))
    for stem in build.solution_stems():
        nb = nbformat.read(build.NOTEBOOKS / f"{stem}.ipynb", as_version=4)
        record = build.generated_cells(nb)
        assert record == [(c.id, build.cell_hash(c)) for c in nb.cells]
        assert not build.edited(nb)


def _solve(path):
    nb = nbformat.read(path, as_version=4)
    i = next(i for i, c in enumerate(nb.cells) if c.source.startswith("def celsius_to_fahrenheit"))
    nb.cells[i].source = "def celsius_to_fahrenheit(c):\n    return c * 9 / 5 + 32  # my answer"
    nb.cells[i].outputs = [nbformat.v4.new_output("stream", text="ran")]
    nbformat.write(nb, path)


def test_solve_then_build_is_refused(course_copy, capsys, tmp_path):
    stem = "00_start_here"
    sol = course_copy / "solutions" / f"{stem}.py"
    sol.write_text(sol.read_text().replace("# 00 · Start here", "# 00 · Start here (v2)"))
    nb = nbformat.read(course_copy / "solutions" / f"{stem}.ipynb", as_version=4)
    nb.cells[0].source = nb.cells[0].source.replace("# 00 · Start here", "# 00 · Start here (v2)")
    nbformat.write(nb, course_copy / "solutions" / f"{stem}.ipynb")
    mine = course_copy / "notebooks" / f"{stem}.ipynb"
    _solve(mine)
    solved = mine.read_text()
    assert build.main([stem, "--backup-dir", str(tmp_path / "bk")]) == 1
    err = capsys.readouterr().err
    assert "refused, nothing written" in err and "notebooks/00_start_here.ipynb" in err
    assert "Learners: don't run it" in err and "--force" in err
    assert mine.read_text() == solved and not (tmp_path / "bk").exists()
    # build --check says the same
    assert build.main([stem, "--check"]) == 1
    assert "has edits that build did not make" in capsys.readouterr().out


def test_solve_then_build_force_backs_up_first(course_copy, capsys, tmp_path):
    stem = "00_start_here"
    mine = course_copy / "notebooks" / f"{stem}.ipynb"
    _solve(mine)
    solved = mine.read_text()
    assert build.main([stem, "--force", "--backup-dir", str(tmp_path / "bk")]) == 0
    out = capsys.readouterr().out
    backups = list((tmp_path / "bk").iterdir())
    assert len(backups) == 1 and backups[0].read_text() == solved  # the work is in the backup
    assert f"backup of the edited file: {backups[0]}" in out
    assert mine.read_text() == (build.NOTEBOOKS / f"{stem}.ipynb").read_text()
    assert build.check([stem]) == []


def test_running_cells_without_editing_them_is_not_an_edit(course_copy, tmp_path):
    stem = "00_start_here"
    mine = course_copy / "notebooks" / f"{stem}.ipynb"
    nb = nbformat.read(mine, as_version=4)
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="ran")] if nb.cells[1].cell_type == "code" else []
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7"}  # what JupyterLab adds on save
    nbformat.write(nb, mine)
    assert not build.edited(nbformat.read(mine, as_version=4))
    res = build.write([stem], backup_to=tmp_path / "bk")
    assert res.written == [mine] and not res.refused and not res.backups


def test_leftover_text_pairs_are_removed_unless_edited(course_copy, tmp_path):
    stem = "00_start_here"
    mine = course_copy / "notebooks" / f"{stem}.ipynb"
    py = mine.with_suffix(".py")
    py.write_text(build.py_text(nbformat.read(mine, as_version=4), py))
    assert any("left over from the old text pairing" in p for p in build.check([stem]))
    res = build.write([stem], backup_to=tmp_path / "bk")
    assert res.removed == [py] and not py.exists() and not res.backups
    py.write_text(build.py_text(nbformat.read(mine, as_version=4), py).replace("Replace this line", "my answer"))
    assert build.write([stem], backup_to=tmp_path / "bk").refused == [py] and py.exists()
    res = build.write([stem], force=True, backup_to=tmp_path / "bk")
    assert not py.exists() and "my answer" in res.backups[0].read_text()


def test_execute_grades_against_references_written_from_the_edited_source(course_copy, monkeypatch):
    """A changed answer in ``solutions/NN.py``: ``build --execute`` writes the answers module
    before it runs the notebook, whose check cells grade against it (helpers found the first
    ``--execute`` after a change showed Incorrect, the second none)."""
    stem = "00_start_here"
    src = course_copy / "solutions" / f"{stem}.py"
    src.write_text(src.read_text().replace("celsius * 9 / 5 + 32", "celsius * 1.8 + 32"))
    module = course_copy / "course_utils" / "answers" / f"l{stem}.py"
    seen = []

    def execute(s, timeout=600):
        seen.append(module.read_text())
        raise SystemExit(0)

    monkeypatch.setattr(build, "execute", execute)
    with pytest.raises(SystemExit):
        build.main(["--execute", stem])
    assert seen and "celsius * 1.8 + 32" in seen[0]
