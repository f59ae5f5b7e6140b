"""Lesson times have one source (course_utils/lesson_times.py), and every lesson ends with a
recap and a reading list."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nbformat
import pytest

from course_utils import build
from course_utils import lesson_times as lt

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\]\((https?://[^)\s]+)\)")


@pytest.fixture
def copy(tmp_path, monkeypatch):
    """A copy of what lesson_times reads and writes (lesson 01's solution pair, README, guide),
    with the module pointed at it."""
    (tmp_path / "solutions").mkdir()
    (tmp_path / "docs").mkdir()
    for name in ("01_tensors.py", "01_tensors.ipynb"):
        shutil.copy(ROOT / "solutions" / name, tmp_path / "solutions" / name)
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    shutil.copy(ROOT / "docs" / "instructor_guide.md", tmp_path / "docs" / "instructor_guide.md")
    monkeypatch.setattr(lt, "ROOT", tmp_path)
    monkeypatch.setattr(lt, "SOLUTIONS", tmp_path / "solutions")
    monkeypatch.setattr(lt, "README", tmp_path / "README.md")
    monkeypatch.setattr(lt, "GUIDE", tmp_path / "docs" / "instructor_guide.md")
    assert lt.problems() == []
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_repository_agrees_with_the_source():
    assert lt.problems() == [], "run `python -m course_utils build`"
    assert sorted(lt.LESSONS) == build.solution_stems()
    header = "| # | lesson | what you learn | time |"
    assert header in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("where", ["solutions/01_tensors.py", "solutions/01_tensors.ipynb"])
def test_a_hand_edited_header_fails_the_check_and_build_repairs_it(copy, where):
    minutes = lt.LESSONS["01_tensors"].minutes
    _edit(copy / where, f"**Time: about {minutes} minutes**", "**Time: about 45 minutes**")
    problems = lt.problems()
    assert len(problems) == 1 and where in problems[0] and "about 45 minutes" in problems[0]
    before = (copy / where).read_text(encoding="utf-8")
    assert lt.write() == [copy / where]
    assert lt.problems() == []
    after = (copy / where).read_text(encoding="utf-8")
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    assert len(changed) == 1 and "about 45 minutes" in changed[0][0], "only the time line may change"


def test_a_header_without_its_time_line_fails_the_check(copy):
    text = (copy / "solutions/01_tensors.py").read_text(encoding="utf-8")
    text = re.sub(r"^# \*\*Time: .*\n", "", text, flags=re.MULTILINE)
    (copy / "solutions/01_tensors.py").write_text(text, encoding="utf-8")
    assert any("no `**Time: ...` line" in p for p in lt.problems())


def test_a_hand_edited_readme_time_fails_the_check(copy):
    minutes = lt.LESSONS["02_autograd"].minutes
    _edit(copy / "README.md", f"`gradcheck` | ~{minutes} min |", "`gradcheck` | ~60 min |")
    problems = lt.problems()
    assert len(problems) == 1 and "README.md" in problems[0]
    lt.write()
    assert lt.problems() == []


def test_a_hand_edited_guide_time_fails_the_check(copy):
    minutes = lt.LESSONS["05_training_loop"].minutes
    _edit(copy / "docs/instructor_guide.md", f"**~{minutes} min**", "**~70 min**")
    problems = lt.problems()
    assert len(problems) == 1 and "instructor_guide.md" in problems[0]
    lt.write()
    assert lt.problems() == []


def test_build_check_command_reports_a_disagreement(copy, capsys):
    """`python -m course_utils build --check` itself fails, naming the file."""
    minutes = lt.LESSONS["02_autograd"].minutes
    _edit(copy / "README.md", f"`gradcheck` | ~{minutes} min |", "`gradcheck` | ~60 min |")
    assert build.main(["--check", "01"]) == 1
    assert "README.md" in capsys.readouterr().out


def test_changing_the_source_changes_every_place(copy, monkeypatch):
    old = lt.LESSONS["01_tensors"]
    more = dict(old.exercises, pairwise_distances=old.exercises["pairwise_distances"] + 20)
    monkeypatch.setitem(lt.LESSONS, "01_tensors", lt.Lesson(old.title, old.run_all_s, old.reading, old.examples,
                                                             old.predictions, more))
    assert lt.LESSONS["01_tensors"].minutes == old.minutes + 20
    problems = lt.problems()
    for where in ("01_tensors.py", "01_tensors.ipynb", "README.md", "instructor_guide.md"):
        assert any(where in p for p in problems), (where, problems)
    lt.write()
    assert lt.problems() == []
    assert f"~{old.minutes + 20} min" in (copy / "README.md").read_text(encoding="utf-8")


def test_every_exercise_has_an_estimate():
    from course_utils.grading import registry

    for lesson in registry.lesson_modules():
        names = {ex.name for ex in registry.load_lesson(lesson)}
        listed = set(lt.LESSONS[lesson].exercises)
        assert names == listed, (f"{lesson}: course_utils/lesson_times.py lists {sorted(listed - names)} that are not "
                                 f"exercises and misses {sorted(names - listed)}; update it, then run build")


def test_run_all_figures_are_the_measured_ones():
    """The Run All seconds are the README Performance section's measurement, not a guess."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| each solution notebook, top to bottom"))
    measured = dict(re.findall(r"\b(\d\d) (\d+(?:\.\d+)?) s\b", row))
    assert set(measured) == {stem[:2] for stem in lt.LESSONS}, row
    for stem, lesson in lt.LESSONS.items():
        assert lesson.run_all_s == float(measured[stem[:2]]), stem


def test_reading_and_example_minutes_follow_the_notebooks():
    """The counted part of an estimate stays near what the learner notebook holds (words read at
    READ_WPM, example cells at EXAMPLE_MIN), so a lesson that grows a lot cannot keep its time."""
    for stem, lesson in lt.LESSONS.items():
        nb = nbformat.read(build.NOTEBOOKS / f"{stem}.ipynb", as_version=4)
        words = sum(len(re.findall(r"[A-Za-z0-9']+", c.source)) for c in nb.cells if c.cell_type == "markdown")
        code = [c for c in nb.cells if c.cell_type == "code"]
        checks = [c for c in code if re.search(r"^ex\.\w+\.check\(\w+\)\s*$", c.source, re.MULTILINE)]
        stubs = [c for c in code if "raise NotImplementedError(" in c.source]
        counted = words / lt.READ_WPM + (len(code) - len(checks) - len(stubs)) * lt.EXAMPLE_MIN
        estimate = lesson.reading + lesson.examples + lesson.predictions
        assert 0.67 * counted <= estimate <= 1.5 * counted, (stem, round(counted, 1), estimate)


def test_estimates_are_realistic():
    """Learners under-budgeted by about 40 % with the old headers (45-60 minutes a lesson)."""
    for stem, lesson in lt.LESSONS.items():
        if stem != "00_start_here":
            assert lesson.minutes >= 70, stem
        assert min(lesson.exercises.values()) >= 3


@pytest.mark.parametrize("stem", build.solution_stems())
def test_every_lesson_ends_with_a_recap_and_further_reading(stem):
    nb = nbformat.read(build.NOTEBOOKS / f"{stem}.ipynb", as_version=4)
    md = [c.source for c in nb.cells if c.cell_type == "markdown"]
    last = nb.cells[-1]
    assert last.cell_type == "markdown" and last.source.startswith("## Further reading"), "the last cell"
    links = set(LINK.findall(last.source))
    assert len(links) >= 3, links
    assert all(u.startswith("https://") for u in links), links
    assert any(u.startswith("https://docs.pytorch.org/docs/") for u in links), "an official docs page"
    assert any("pytorch.org" not in u for u in links), "external material"
    recaps = [i for i, src in enumerate(md) if src.startswith("## Recap")]
    assert len(recaps) == 1, "one `## Recap` cell"
    recap = md[recaps[0]]
    assert len(re.findall(r"^- ", recap, re.MULTILINE)) >= 3, "a recap of at least three points"
    cells = nb.cells
    last_check = max((i for i, c in enumerate(cells) if c.cell_type == "code" and ".check(" in c.source), default=-1)
    recap_at = next(i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("## Recap"))
    assert recap_at > last_check, "the recap comes after the last exercise"
