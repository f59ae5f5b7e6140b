"""``python -m course_utils reset``: one exercise or a whole learner notebook back to what
``build`` generates, with a backup, keeping the rest of the learner's work."""

from __future__ import annotations

import os
from pathlib import Path

import jupytext
import nbformat
import pytest

from course_utils import build, reset

STEM = "99_demo"


def _solution() -> nbformat.NotebookNode:
    cells = [
        nbformat.v4.new_markdown_cell("# 99 demo"),
        nbformat.v4.new_code_cell("from course_utils.grading import exercises_for\nex = exercises_for('99_demo')"),
        nbformat.v4.new_markdown_cell("### Exercise 1\nWrite `double`."),
        nbformat.v4.new_code_cell("def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION"),
        nbformat.v4.new_code_cell("ex.double.check(double)"),
        nbformat.v4.new_markdown_cell("### Exercise 2\nBuild `table`."),
        nbformat.v4.new_code_cell("import torch"),
        nbformat.v4.new_code_cell("### BEGIN SOLUTION\ntable = torch.arange(3)\n### END SOLUTION"),
        nbformat.v4.new_code_cell("ex.table.check(table)"),
        nbformat.v4.new_markdown_cell("The end."),
    ]
    return nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": dict(build.KERNELSPEC)})


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A course folder with one solution (99_demo) and its generated learner notebook."""
    sol, nbs = tmp_path / "solutions", tmp_path / "notebooks"
    sol.mkdir()
    nbs.mkdir()
    (tmp_path / "jupytext.toml").write_text((build.ROOT / "jupytext.toml").read_text())
    nbformat.write(_solution(), sol / f"{STEM}.ipynb")
    (sol / f"{STEM}.py").write_text(build.py_text(_solution(), sol / f"{STEM}.py"))
    monkeypatch.setattr(build, "ROOT", tmp_path)
    monkeypatch.setattr(build, "SOLUTIONS", sol)
    monkeypatch.setattr(build, "NOTEBOOKS", nbs)
    build.write([STEM])
    return tmp_path


def _paths(course):
    return course / "notebooks" / f"{STEM}.ipynb", course / "notebooks" / f"{STEM}.py"


def _save_like_jupyterlab(nb, ipynb: Path):
    """Learner notebooks are not paired: JupyterLab writes the .ipynb only."""
    nbformat.write(nb, ipynb)


def _learner_work(course):
    """Both exercises answered, notes added, the first check cell deleted."""
    ipynb, _ = _paths(course)
    nb = nbformat.read(ipynb, as_version=4)
    nb.cells[3].source = "def double(x):\n    return x + x  # mine"
    nb.cells[3].outputs = [nbformat.v4.new_output("stream", text="x")]
    nb.cells[3].execution_count = 4
    del nb.cells[4]  # the check cell of `double`
    nb.cells.insert(3, nbformat.v4.new_markdown_cell("my notes on doubling"))
    i = next(i for i, c in enumerate(nb.cells) if c.source.startswith("# YOUR CODE HERE"))  # `table`
    nb.cells[i].source = "table = torch.arange(3)  # mine"
    nb.cells[i].metadata = {}
    nb.cells.append(nbformat.v4.new_code_cell("print('my experiment')"))
    _save_like_jupyterlab(nb, ipynb)
    return nb


def _sources(path: Path) -> list[str]:
    return [c.source for c in nbformat.read(path, as_version=4).cells]


def test_whole_notebook_reset_is_what_build_generates_and_keeps_a_backup(course, tmp_path):
    ipynb, py = _paths(course)
    fresh_ipynb = ipynb.read_text()
    assert not py.exists()  # learner notebooks have no text pair
    _learner_work(course)
    worked_ipynb = ipynb.read_text()
    res = reset.reset(ipynb, backup_to=tmp_path / "bk")
    assert ipynb.read_text() == fresh_ipynb and not py.exists()
    assert [p.suffix for p in res.backups] == [".ipynb"]
    backup = next(p for p in res.backups if p.suffix == ".ipynb")
    assert backup.read_text() == worked_ipynb and STEM in backup.name and backup.parent == tmp_path / "bk"


def test_reset_one_exercise_keeps_everything_else(course, tmp_path):
    ipynb, py = _paths(course)
    before = _learner_work(course)
    ids_before = {c.source: c.id for c in before.cells}
    res = reset.reset(ipynb, exercise="double", backup_to=tmp_path / "bk")
    src = _sources(ipynb)
    fresh_answer = ("def double(x):\n    # YOUR CODE HERE\n"
                    "    raise NotImplementedError(\"Replace this line with your code\")")
    i = src.index(fresh_answer)
    assert src[i + 1] == "ex.double.check(double)"  # the deleted check cell is back, after the answer
    assert "my notes on doubling" in src and "print('my experiment')" in src
    assert "table = torch.arange(3)  # mine" in src  # the other exercise's answer is untouched
    assert not any("# mine" in s and "double" in s for s in src)
    nb = nbformat.read(ipynb, as_version=4)
    assert nb.cells[i].outputs == [] and nb.cells[i].execution_count is None
    assert nb.cells[i].id == ids_before["def double(x):\n    return x + x  # mine"]  # same cell, same id
    assert any("put back" in c for c in res.changes) and any("restored" in c for c in res.changes)
    assert len(res.backups) == 1 and not py.exists()
    assert res.source == f"read {STEM}.ipynb"


def test_reset_finds_an_exercise_cells_by_their_tags_when_nothing_else_is_left(course, tmp_path):
    """The learner rewrote both cells of `double` beyond recognition (no `def double`, no check
    statement); build's ``answer:double`` / ``check:double`` tags still say which cells they are."""
    ipynb, _ = _paths(course)
    nb = nbformat.read(ipynb, as_version=4)
    answer, check = (next(c for c in nb.cells if f"{role}:double" in c.metadata.get("tags", []))
                     for role in ("answer", "check"))
    answer.source, check.source = "# thinking about it", "print('later')"
    ids = [c.id for c in nb.cells]
    _save_like_jupyterlab(nb, ipynb)
    res = reset.reset(ipynb, exercise="double", backup_to=tmp_path / "bk")
    after = nbformat.read(ipynb, as_version=4)
    assert [c.id for c in after.cells] == ids  # restored in place: nothing put back, nothing moved
    assert after.cells == nbformat.read(build.NOTEBOOKS / f"{STEM}.ipynb", as_version=4).cells
    assert not any("put back" in c for c in res.changes)


def test_reset_top_level_stub_restores_its_tag(course, tmp_path):
    ipynb, _ = _paths(course)
    _learner_work(course)
    reset.reset(ipynb, exercise="99_demo.table", backup_to=tmp_path / "bk")
    nb = nbformat.read(ipynb, as_version=4)
    cell = next(c for c in nb.cells if c.source.startswith("# YOUR CODE HERE"))
    assert "raises-exception" in cell.metadata.get("tags", [])
    assert "def double(x):\n    return x + x  # mine" in _sources(ipynb)


def _old_text_pair(ipynb: Path, nb=None) -> Path:
    """A learner notebook from an older clone still has its jupytext .py pair next to it."""
    py = ipynb.with_suffix(".py")
    py.write_text(build.py_text(nb or nbformat.read(ipynb, as_version=4), py))
    return py


def _age(path: Path, seconds: float) -> None:
    st = path.stat()
    os.utime(path, (st.st_atime - seconds, st.st_mtime - seconds))


def test_reset_reads_the_ipynb_when_it_is_newer_than_a_stale_py(course, tmp_path):
    """The issue's bug: after an .ipynb-only edit, reset read the stale .py and said 'already fresh'."""
    ipynb, _ = _paths(course)
    py = _old_text_pair(ipynb)  # fresh stubs
    _age(py, 60)
    nb = nbformat.read(ipynb, as_version=4)
    i = next(i for i, c in enumerate(nb.cells) if c.source.startswith("def double"))
    nb.cells[i].source = "def double(x):\n    return x + x  # edited in VS Code"
    nbformat.write(nb, ipynb)  # a tool without jupytext: only the .ipynb changes
    res = reset.reset(ipynb, exercise="double", backup_to=tmp_path / "bk")
    assert res.written and "already" not in " ".join(res.changes)
    assert res.source == f"read {STEM}.ipynb, which is newer than {STEM}.py"
    backed = next(p for p in res.backups if p.suffix == ".ipynb")
    assert "edited in VS Code" in backed.read_text()  # the learner's work is in the named backup
    assert "edited in VS Code" not in ipynb.read_text() + py.read_text()
    assert [c.source for c in jupytext.read(py).cells] == _sources(ipynb)  # the pair agrees now


def test_reset_reads_a_py_that_is_newer_and_says_so(course, tmp_path, capsys):
    ipynb, _ = _paths(course)
    stub = '    # YOUR CODE HERE\n    raise NotImplementedError("Replace this line with your code")'
    _age(ipynb, 60)
    py = _old_text_pair(ipynb)
    text = py.read_text()
    py.write_text(text.replace('# YOUR CODE HERE\nraise NotImplementedError("Replace this line with your code")',
                               "table = torch.arange(3)  # from the py")
                  .replace(stub, "    return x * 2  # from the py"))
    assert reset.main([str(ipynb), "-e", "double", "--backup-dir", str(tmp_path / "bk")]) == 0
    out = capsys.readouterr().out
    assert f"read {STEM}.py, which is newer than {STEM}.ipynb" in out
    assert "table = torch.arange(3)  # from the py" in _sources(ipynb)
    assert "return x * 2" not in ipynb.read_text() + py.read_text()
    assert any("return x * 2" in p.read_text() for p in (tmp_path / "bk").iterdir())


def test_reset_refuses_solution_notebooks(course, tmp_path):
    sol = course / "solutions" / f"{STEM}.ipynb"
    before = sol.read_text()
    for target in (sol, sol.with_suffix(".py")):
        with pytest.raises(reset.ResetError, match="solution notebook"):
            reset.reset(target, backup_to=tmp_path / "bk")
        with pytest.raises(reset.ResetError, match="solution notebook"):
            reset.reset(target, exercise="double", backup_to=tmp_path / "bk")
    assert sol.read_text() == before and not (tmp_path / "bk").exists()
    assert reset.main([str(sol)]) == 2


def test_already_fresh_changes_nothing(course, tmp_path):
    ipynb, _ = _paths(course)
    res = reset.reset(ipynb, exercise="double", backup_to=tmp_path / "bk")
    assert not res.backups and "nothing changed" in res.changes[0]
    res = reset.reset(ipynb, backup_to=tmp_path / "bk")
    assert not res.backups and not (tmp_path / "bk").exists()


def test_dry_run_writes_nothing(course, tmp_path):
    ipynb, _ = _paths(course)
    _learner_work(course)
    text = ipynb.read_text()
    res = reset.reset(ipynb, exercise="double", backup_to=tmp_path / "bk", dry_run=True)
    assert res.changes and ipynb.read_text() == text and not (tmp_path / "bk").exists()


def test_errors_name_the_problem(course, tmp_path):
    ipynb, _ = _paths(course)
    with pytest.raises(reset.ResetError, match="double, table"):
        reset.reset(ipynb, exercise="triple")
    other = tmp_path / "holiday.ipynb"
    other.write_text("{}")
    with pytest.raises(reset.ResetError, match="not a lesson notebook"):
        reset.reset(other)
    ipynb.write_text("{ corrupt")
    with pytest.raises(reset.ResetError, match="reset the whole notebook instead"):
        reset.reset(ipynb, exercise="double")
    res = reset.reset(ipynb, backup_to=tmp_path / "bk")  # the whole notebook can always be reset
    assert nbformat.read(ipynb, as_version=4).cells and any(p.read_text() == "{ corrupt" for p in res.backups)


def test_cli(course, tmp_path, capsys):
    ipynb, _ = _paths(course)
    assert reset.main([str(ipynb), "--list"]) == 0
    assert "double, table" in capsys.readouterr().out
    _learner_work(course)
    assert reset.main([str(ipynb), "-e", "double", "--backup-dir", str(tmp_path / "bk")]) == 0
    out = capsys.readouterr().out
    assert "Reset exercise `double`" in out and "backup:" in out and "Reload Notebook from Disk" in out
    assert reset.main([str(ipynb), "-e", "nope"]) == 2
    assert "no exercise 'nope'" in capsys.readouterr().err


def test_default_backup_folder_is_next_to_the_progress_log(monkeypatch, tmp_path):
    monkeypatch.setenv("COURSE_PROGRESS_LOG", str(tmp_path / "logs" / "progress.jsonl"))
    assert reset.backup_dir() == tmp_path / "logs" / "backups"


def test_real_lesson_round_trip(tmp_path):
    """Lesson 00 as shipped: answer the exercise, reset it, get the generated notebook back."""
    ipynb = tmp_path / "00_start_here.ipynb"
    ipynb.write_text((build.NOTEBOOKS / "00_start_here.ipynb").read_text())
    nb = nbformat.read(ipynb, as_version=4)
    i = next(i for i, c in enumerate(nb.cells) if c.source.startswith("def celsius_to_fahrenheit"))
    nb.cells[i].source = "def celsius_to_fahrenheit(c):\n    return c * 9 / 5 + 32"
    nbformat.write(nb, ipynb)
    reset.reset(ipynb, exercise="celsius_to_fahrenheit", backup_to=tmp_path / "bk")
    assert ipynb.read_text() == (build.NOTEBOOKS / "00_start_here.ipynb").read_text()
