"""``python -m course_utils update`` and the sequences a learner goes through over days of a
course, each in a temporary git repository (an "upstream" course and a learner's clone):
solve then pull, solve then update with and without conflicts, and the move from the old
layout (learner notebooks paired with a .py) to the new one."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import jupytext
import nbformat
import pytest

from course_utils import build, update

STEM = "99_demo"
ANSWER = "def double(x):\n    return x + x  # my answer"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _solution(intro="Write `double`.", double_doc=None, extra_first=None):
    doc = f'    """{double_doc}"""\n' if double_doc else ""
    cells = [nbformat.v4.new_markdown_cell("# 99 demo")]
    if extra_first:
        cells.append(nbformat.v4.new_markdown_cell(extra_first))
    cells += [
        nbformat.v4.new_code_cell("from course_utils.grading import exercises_for\nex = exercises_for('99_demo')"),
        nbformat.v4.new_markdown_cell(f"### Exercise 1\n{intro}"),
        nbformat.v4.new_code_cell(f"def double(x):\n{doc}    ### BEGIN SOLUTION\n"
                                  "    return 2 * x\n    ### END SOLUTION"),
        nbformat.v4.new_code_cell("ex.double.check(double)"),
        nbformat.v4.new_markdown_cell("The end."),
    ]
    return nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": dict(build.KERNELSPEC)})


def _git(cwd, *args):
    proc = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=cwd,
                          capture_output=True, text=True)
    return proc


def _author_build(root: Path, monkeypatch, solutions: dict[str, nbformat.NotebookNode], message: str):
    """The course author writes solutions, runs build, commits."""
    (root / "solutions").mkdir(parents=True, exist_ok=True)
    (root / "notebooks").mkdir(exist_ok=True)
    shutil.copy(build.ROOT / "jupytext.toml", root / "jupytext.toml")
    for stem, nb in solutions.items():
        nbformat.write(nb, root / "solutions" / f"{stem}.ipynb")
        (root / "solutions" / f"{stem}.py").write_text(build.py_text(nb, root / "solutions" / f"{stem}.py"))
    with monkeypatch.context() as m:
        m.setattr(build, "ROOT", root)
        m.setattr(build, "SOLUTIONS", root / "solutions")
        m.setattr(build, "NOTEBOOKS", root / "notebooks")
        res = build.write(list(solutions))
        assert not res.refused
    assert _git(root, "add", "-A").returncode == 0
    assert _git(root, "commit", "-qm", message).returncode == 0


@pytest.fixture
def clone(tmp_path, monkeypatch):
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    _git(upstream, "init", "-q", "-b", "main")
    (upstream / "README.md").write_text("course\n")
    _author_build(upstream, monkeypatch, {STEM: _solution()}, "v1")
    learner = tmp_path / "learner"
    assert _git(tmp_path, "clone", "-q", str(upstream), str(learner)).returncode == 0
    return upstream, learner


def _nb(path):
    return nbformat.read(path, as_version=4)


def _sources(path):
    return [c.source for c in _nb(path).cells]


def _solve(learner: Path):
    """The learner answers `double`, adds a note and an experiment, saves (JupyterLab)."""
    path = learner / "notebooks" / f"{STEM}.ipynb"
    nb = _nb(path)
    i = next(i for i, c in enumerate(nb.cells) if c.source.startswith("def double"))
    nb.cells[i].source = ANSWER
    nb.cells[i].outputs = [nbformat.v4.new_output("stream", text="ran")]
    nb.cells[i].execution_count = 3
    nb.cells.insert(i + 2, nbformat.v4.new_markdown_cell("my notes"))
    nb.cells.append(nbformat.v4.new_code_cell("print('my experiment')"))
    nbformat.write(nb, path)
    return path


def _valid(path):
    nb = _nb(path)
    nbformat.validate(nb)
    ids = [c.id for c in nb.cells]
    assert len(ids) == len(set(ids)), ids
    return nb


# ---------------------------------------------------------------------- merging, pure


def test_merge_takes_untouched_cells_from_upstream_and_keeps_edited_ones():
    base = build.learner_notebook(_solution(), STEM)
    theirs = build.learner_notebook(_solution(intro="Write `double` (fixed).", extra_first="New intro"), STEM)
    mine = json.loads(nbformat.writes(base))
    mine["cells"][3]["source"] = ANSWER  # the learner's answer
    del mine["cells"][5]  # and they deleted "The end."
    mine["cells"].insert(2, nbformat.v4.new_markdown_cell("my note after the import"))
    mine["cells"][2]["id"] = "abc123"
    res = update.merge_notebook(mine, json.loads(nbformat.writes(theirs)))
    src = [c.source for c in res.notebook.cells]
    assert src == ["# 99 demo", "New intro", base.cells[1].source, "my note after the import",
                   "### Exercise 1\nWrite `double` (fixed).", ANSWER, "ex.double.check(double)"]
    assert res.conflicts == 0 and res.added == 1 and res.updated == ["### Exercise 1"]
    ids = [c.id for c in res.notebook.cells]
    assert len(set(ids)) == len(ids) and "abc123" in ids
    # the next update sees the new course version as the base: the answer still counts as edited
    assert build.generated_cells(res.notebook) == build.generated_cells(theirs)
    assert build.edited(res.notebook)
    nbformat.validate(res.notebook)


def test_merge_conflict_keeps_the_learner_cell():
    base = build.learner_notebook(_solution(), STEM)
    theirs = build.learner_notebook(_solution(double_doc="Twice x."), STEM)
    mine = json.loads(nbformat.writes(base))
    mine["cells"][3]["source"] = ANSWER
    res = update.merge_notebook(mine, json.loads(nbformat.writes(theirs)))
    assert ANSWER in [c.source for c in res.notebook.cells]
    assert res.conflicts == 1 and "kept your `def double(x):`" in res.kept[0]


def test_with_the_base_file_an_edited_cell_is_told_from_an_inserted_one():
    """The course fixes a typo in a cell AND inserts a cell before it: with the base text at
    hand (git), the fix is matched to its cell, so the learner's edit of another cell and the
    new cell both come through without a conflict."""
    base = build.learner_notebook(_solution(), STEM)
    theirs = build.learner_notebook(_solution(intro="Write `double`, fixed.", extra_first="New intro"), STEM)
    th = json.loads(nbformat.writes(theirs))
    th["cells"].insert(2, nbformat.v4.new_markdown_cell("Another new cell"))
    th["cells"][2]["id"] = "new-cell"
    mine = json.loads(nbformat.writes(base))
    mine["cells"][3]["source"] = ANSWER
    res = update.merge_notebook(mine, th, json.loads(nbformat.writes(base)))
    src = [c.source for c in res.notebook.cells]
    assert res.conflicts == 0, res.kept
    assert "New intro" in src and "Another new cell" in src and "### Exercise 1\nWrite `double`, fixed." in src
    assert ANSWER in src and src.index(ANSWER) == src.index("### Exercise 1\nWrite `double`, fixed.") + 1


def test_similar_pairs():
    assert update._similar_pairs(["abc def", "xyz"], ["new", "abc deg", "xyz!"]) == [(0, 1), (1, 2)]
    assert update._similar_pairs(["a"], ["zzzz"]) == []


def test_merge_without_any_record_is_refused():
    nb = json.loads(nbformat.writes(_solution()))
    with pytest.raises(update.UpdateError, match="no record"):
        update.merge_notebook(nb, nb)


# ---------------------------------------------------------------------- sequences in git


def test_solve_then_git_pull_never_loses_the_answer(clone, monkeypatch):
    upstream, learner = clone
    path = _solve(learner)
    solved = path.read_text()
    # upstream changes another file only: git pull works and the work is untouched
    (upstream / "README.md").write_text("course v2\n")
    _git(upstream, "commit", "-qam", "readme")
    assert _git(learner, "pull", "-q").returncode == 0
    assert path.read_text() == solved
    # upstream changes the lesson: git pull refuses (it would overwrite), the work is untouched
    _author_build(upstream, monkeypatch, {STEM: _solution(intro="Write `double` (fixed).")}, "fix")
    pulled = _git(learner, "pull", "-q")
    assert pulled.returncode != 0 and "would be overwritten" in pulled.stderr
    assert path.read_text() == solved


def test_update_merges_around_edits_with_a_conflict(clone, monkeypatch, tmp_path):
    upstream, learner = clone
    path = _solve(learner)
    solved = path.read_text()
    (learner / "README.md").write_text("my own readme notes\n")  # a non-notebook edit, too
    _author_build(upstream, monkeypatch, {
        STEM: _solution(intro="Write `double` (fixed).", double_doc="Twice x.", extra_first="New intro"),
        "98_new": _solution(intro="A whole new lesson."),
    }, "v2")
    (upstream / "README.md").write_text("course v2\n")
    _git(upstream, "commit", "-qam", "readme v2")

    rep = update.update(learner, backup_to=tmp_path / "bk")
    text = "\n".join(rep.lines)
    nb = _valid(path)
    src = [c.source for c in nb.cells]
    assert ANSWER in src and "my notes" in src and "print('my experiment')" in src  # the learner's work
    assert "New intro" in src and "### Exercise 1\nWrite `double` (fixed)." in src  # upstream fixes
    # the conflict: the learner's answer is kept, upstream's version of the notebook saved beside it
    assert len(rep.beside) == 2
    side = next(p for p in rep.beside if p.suffix == ".ipynb")
    assert side.name.startswith(f"{STEM}.upstream-") and side.parent == path.parent
    assert any('"""Twice x."""' in c.source for c in _nb(side).cells)
    assert f"conflict: kept your `{ANSWER.splitlines()[0]}`" in text and side.name in text
    # the non-notebook file: the learner's version stays, upstream's beside it
    assert (learner / "README.md").read_text() == "my own readme notes\n"
    assert next(p for p in rep.beside if p.suffix == ".md").read_text() == "course v2\n"
    # backups of everything the update touched, named in the output
    assert any(b.read_text() == solved for b in rep.backups) and str(rep.backups[0]) in text
    # the new lesson arrived; the learner's clone is at upstream's commit
    assert (learner / "notebooks" / "98_new.ipynb").exists() and "new: notebooks/98_new.ipynb" in text
    assert _git(learner, "rev-parse", "HEAD").stdout == _git(upstream, "rev-parse", "HEAD").stdout
    # a second update has nothing to do and changes nothing
    again = update.update(learner, backup_to=tmp_path / "bk")
    assert again.lines == ["Already up to date with origin/main."] and path.read_text() == _nb_text(path)


def _nb_text(path):
    return path.read_text()


def test_update_without_learner_edits_is_a_plain_fast_forward(clone, monkeypatch, tmp_path):
    upstream, learner = clone
    _author_build(upstream, monkeypatch, {STEM: _solution(intro="v2")}, "v2")
    rep = update.update(learner, backup_to=tmp_path / "bk")
    assert not rep.backups and not rep.beside
    assert ((learner / "notebooks" / f"{STEM}.ipynb").read_text()
            == (upstream / "notebooks" / f"{STEM}.ipynb").read_text())


def test_update_refuses_with_a_message_when_it_cannot_help(clone, tmp_path):
    upstream, learner = clone
    _solve(learner)
    _git(learner, "commit", "-qam", "my work")
    (upstream / "README.md").write_text("v2\n")
    _git(upstream, "commit", "-qam", "v2")
    with pytest.raises(update.UpdateError, match="commits of its own"):
        update.update(learner)
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(update.UpdateError, match="not a git clone"):
        update.update(plain)


def test_moving_from_the_old_text_pair_layout(tmp_path, monkeypatch):
    """A learner cloned the course when notebooks/ had .py pairs and worked in JupyterLab (both
    files saved); the new release drops the pair and stamps the notebooks."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    _git(upstream, "init", "-q", "-b", "main")
    _author_build(upstream, monkeypatch, {STEM: _solution()}, "v1")
    ipynb = upstream / "notebooks" / f"{STEM}.ipynb"
    old = _nb(ipynb)
    old.metadata.pop(build.META)  # the old build had no record
    nbformat.write(old, ipynb)
    (upstream / "notebooks" / f"{STEM}.py").write_text(build.py_text(old, upstream / "notebooks" / f"{STEM}.py"))
    _git(upstream, "add", "-A")
    _git(upstream, "commit", "-qm", "old layout")
    learner = tmp_path / "learner"
    _git(tmp_path, "clone", "-q", str(upstream), str(learner))
    path = _solve(learner)
    py = path.with_suffix(".py")
    py.write_text(build.py_text(_nb(path), py))  # jupytext saved the pair
    # the new release: no .py, notebooks stamped, a fix
    (upstream / "notebooks" / f"{STEM}.py").unlink()
    _author_build(upstream, monkeypatch, {STEM: _solution(intro="Write `double` (fixed).")}, "new layout")
    rep = update.update(learner, backup_to=tmp_path / "bk")
    text = "\n".join(rep.lines)
    src = _sources(path)
    assert ANSWER in src and "### Exercise 1\nWrite `double` (fixed)." in src
    assert not py.exists() and "no .py pair any more" in text
    assert any(b.suffix == ".py" and "my answer" in b.read_text() for b in rep.backups)
    assert not [p for p in path.parent.iterdir() if ".upstream-" in p.name]  # no conflict


def test_cli_dry_run(clone, monkeypatch, capsys):
    upstream, learner = clone
    path = _solve(learner)
    solved = path.read_text()
    _author_build(upstream, monkeypatch, {STEM: _solution(intro="v2")}, "v2")
    monkeypatch.setattr(build, "ROOT", learner)
    assert update.main(["--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "would merge around your edits: notebooks/99_demo.ipynb" in out and path.read_text() == solved


def test_old_text_pair_cells_are_read_as_jupytext_writes_them():
    nb = build.learner_notebook(_solution(), STEM)
    cells = jupytext.reads(build.py_text(nb, Path("x.py")), fmt="py:percent").cells
    assert [build.cell_hash(c) for c in cells] == [build.cell_hash(c) for c in nb.cells]


# ---------------------------------------------------------------------- the merge never loses an edit

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _stamped(sources: list[str]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources],
                                  metadata={"kernelspec": dict(build.KERNELSPEC)})
    for i, c in enumerate(nb.cells):
        c["id"] = f"cell-{i:03d}"
    build.stamp(nb, STEM)
    return nb


_ops = st.lists(st.tuples(st.sampled_from(["edit", "delete", "insert"]), st.integers(0, 30)), max_size=8)


def _apply(cells: list[dict], ops, tag: str) -> list[str]:
    """Apply edit/delete/insert operations; returns the sources this side wrote."""
    written = []
    for k, (op, at) in enumerate(ops):
        if op == "insert" or not cells:
            new = nbformat.v4.new_code_cell(f"{tag}-added-{k}")
            new["id"] = f"{tag}{k}"
            cells.insert(at % (len(cells) + 1), new)
            written.append(new.source)
        elif op == "edit":
            cell = cells[at % len(cells)]
            cell["source"] = f"{tag}-edit-{k}"
            written.append(cell["source"])
        else:
            cells.pop(at % len(cells))
    return written


@settings(max_examples=200, deadline=None, database=None)
@given(n=st.integers(0, 12), mine_ops=_ops, their_ops=_ops, with_base=st.booleans())
def test_fuzz_merge_keeps_every_learner_edit_and_every_new_course_cell(n, mine_ops, their_ops, with_base):
    base = _stamped([f"base-{i}" for i in range(n)])
    mine = json.loads(nbformat.writes(base))
    mine["cells"] = [nbformat.from_dict(c) for c in mine["cells"]]
    for c in mine["cells"]:
        c["source"] = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
    mine_written = _apply(mine["cells"], mine_ops, "mine")
    theirs_cells = [nbformat.from_dict(json.loads(json.dumps(c))) for c in base.cells]
    their_written = _apply(theirs_cells, their_ops, "theirs")
    theirs = _stamped([c["source"] for c in theirs_cells])
    res = update.merge_notebook(json.loads(json.dumps(mine)), json.loads(nbformat.writes(theirs)),
                                json.loads(nbformat.writes(base)) if with_base else None)
    merged = res.notebook
    nbformat.validate(merged)
    sources = [c.source for c in merged.cells]
    ids = [c.id for c in merged.cells]
    assert len(ids) == len(set(ids))
    final_mine = {c["source"] for c in mine["cells"]}
    for s in mine_written:  # every edit of the learner that is still in their notebook survives
        if s in final_mine:
            assert s in sources, (s, sources)
    new_course = [s for s in their_written if s.startswith("theirs-added") and s in {c.source for c in theirs.cells}]
    if not res.conflicts:  # every new cell of the course arrives (with a conflict, update saves
        for s in new_course:  # the course's whole notebook beside the learner's)
            assert s in sources
    # learner cells keep their relative order
    kept = [s for s in sources if s in final_mine and s.startswith("mine")]
    assert kept == [c["source"] for c in mine["cells"] if c["source"].startswith("mine") and c["source"] in kept]
    # nothing the learner did not write and the course does not have appears from nowhere
    allowed = final_mine | {c.source for c in theirs.cells}
    assert set(sources) <= allowed
