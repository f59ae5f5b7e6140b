"""The README's syllabus and the instructor guide's agendas, live-code notes and stumbling points
have one source (course_utils/lesson_plan.py with lesson_times.py and the exercises' mistakes):
`build --check` fails on drift, and on a lesson named by a wrong number or title anywhere in
README.md and docs/."""

from __future__ import annotations

import dataclasses
import functools
import re
import shutil
from pathlib import Path

import pytest

from course_utils import build
from course_utils import lesson_plan as lp
from course_utils import lesson_times as lt

ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def exercises() -> tuple[lp.ExerciseDoc, ...]:
    docs = build.doc_exercises()
    assert docs
    return tuple(docs)


@pytest.fixture
def copy(tmp_path, monkeypatch):
    """README.md, CONTRIBUTING.md and docs/ copied, with lesson_plan pointed at the copy."""
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    shutil.copy(ROOT / "CONTRIBUTING.md", tmp_path / "CONTRIBUTING.md")
    monkeypatch.setattr(lp, "ROOT", tmp_path)
    monkeypatch.setattr(lp, "README", tmp_path / "README.md")
    monkeypatch.setattr(lp, "GUIDE", tmp_path / "docs" / "instructor_guide.md")
    monkeypatch.setattr(lp, "DOCS", tmp_path / "docs")
    assert lp.problems(list(exercises())) == []
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_repository_agrees_with_the_source():
    assert lp.problems(list(exercises())) == [], "run `python -m course_utils build`"
    assert set(lp.SUMMARY) == set(lt.LESSONS) == set(lp.LIVE_CODE), "one entry per lesson, keyed by stem"


def test_an_edited_agenda_fails_build_check_naming_the_guide(copy, monkeypatch, capsys):
    """The brief's case: a hand edit inside a generated block of the guide (a copy of it)."""
    guide = copy / "docs" / "instructor_guide.md"
    row = next(line for line in guide.read_text(encoding="utf-8").splitlines() if "**02 autograd**" in line)
    _edit(guide, row, row.replace("`dfdx`, ", ""))
    monkeypatch.setattr(build, "doc_exercises", lambda: list(exercises()))
    assert build.main(["--check", "01"]) == 1
    out = capsys.readouterr().out
    assert "docs/instructor_guide.md: a generated block" in out
    assert lp.write(list(exercises())) == [guide]
    assert lp.problems(list(exercises())) == []


@pytest.mark.parametrize("where, old, new", [
    ("README.md", "(notebooks/04_data.ipynb) | `Dataset`", "(notebooks/04_data.ipynb) | `Datasets`"),
    ("docs/instructor_guide.md", "- **03 nn.Module**: layers", "- **03 nn.Module**: modules"),
    ("docs/instructor_guide.md", "  - `inverted_ratio`: You multiplied", "  - `inverted_ratio`: You divided"),
])
def test_any_generated_block_edited_by_hand_fails(copy, where, old, new):
    _edit(copy / where, old, new)
    problems = lp.problems(list(exercises()))
    assert len(problems) == 1 and problems[0].startswith(f"{where}: a generated block"), problems
    lp.write(list(exercises()))
    assert lp.problems(list(exercises())) == []


def test_a_reworded_mistake_message_regenerates_the_guide(copy):
    """Before: the stumbling points were checked only by `python -m course_utils.instructor.guide`,
    so a reworded message left the guide stale under `build --check`. The live-code notes quote
    messages too."""
    new = "You used 5/9, the ratio of the other direction."
    reworded = {"inverted_ratio": new}
    docs = [dataclasses.replace(e, mistakes=tuple((mid, reworded.get(mid, msg)) for mid, msg in e.mistakes))
            if e.name == "celsius_to_fahrenheit" else e for e in exercises()]
    problems = lp.problems(docs)
    assert problems and all(p.startswith("docs/instructor_guide.md: a generated block") for p in problems)
    lp.write(docs)
    text = (copy / "docs" / "instructor_guide.md").read_text(encoding="utf-8")
    assert f"  - `inverted_ratio`: {new}" in text  # the stumbling points
    assert f"`inverted_ratio`: “{new}”" in text  # the live-code note of lesson 00
    assert lp.problems(docs) == []


def test_a_live_code_note_that_quotes_an_unknown_mistake_is_refused(copy, monkeypatch):
    monkeypatch.setitem(lp.LIVE_CODE, "00_start_here", "{mistake:celsius_to_fahrenheit.no_such_mistake}")
    problems = lp.problems(list(exercises()))
    assert len(problems) == 1 and "no_such_mistake" in problems[0] and "instructor_guide.md" in problems[0]


def _agenda_block(text: str, slug: str) -> str:
    body = text.split(lp.AGENDAS_MARK[0], 1)[1].split(lp.AGENDAS_MARK[1], 1)[0]
    return body.split(f"### {slug}\n", 1)[1].split("\n### ", 1)[0]


def _minutes(hm: str) -> int:
    m = re.fullmatch(r"(?:(\d+) h )?(\d+) min", hm)
    assert m, hm
    return int(m.group(1) or 0) * 60 + int(m.group(2))


@pytest.mark.parametrize("agenda", lp.AGENDAS, ids=lambda a: a.slug)
def test_agenda_totals_are_the_sum_of_lesson_times(agenda):
    """Each block is its lesson's estimate with only the exercises done in class
    (lesson_times), a block that keeps every exercise is the lesson's whole time, and the
    guide's clock, totals and homework add up to those figures."""
    for block in agenda.blocks:
        lesson = lt.LESSONS[block.stem]
        teaching = lesson.reading + lesson.examples + lesson.predictions
        raw = teaching + sum(lesson.exercises[e] for e in block.kept)
        assert block.minutes == lt.ROUND_TO * round(raw / lt.ROUND_TO)
        if set(block.kept) == set(lesson.exercises):
            assert block.minutes == lesson.minutes
    assert agenda.teaching_minutes == sum(b.minutes for b in agenda.blocks)

    text = _agenda_block(lp.GUIDE.read_text(encoding="utf-8"), agenda.slug)
    head = re.search(r"\*\*(.+?)\*\* on the clock.*?\((.+?) of lessons", text)
    assert head, text[:200]
    assert _minutes(head.group(1)) == agenda.minutes
    assert _minutes(head.group(2)) == agenda.teaching_minutes
    rows = [line.strip("|").split("|") for line in text.splitlines() if re.match(r"\|( \d+ \|)? \d+:\d\d–", line)]
    lessons = [r for r in rows if "**" in r[-3]]
    assert [re.search(r"\*\*(\d\d) ", r[-3]).group(1) for r in lessons] == [b.stem[:2] for b in agenda.blocks]
    assert sum(int(r[-2]) for r in lessons) == agenda.teaching_minutes
    assert sum(int(r[-2]) for r in rows) == agenda.minutes
    for row in rows:  # the clock of each row is its minutes
        a, b = (int(h) * 60 + int(m) for h, m in re.findall(r"(\d+):(\d\d)", row[-4]))
        assert b - a == int(row[-2]), row

    # in class plus homework is the whole course, each exercise once
    done = [(b.stem, e) for b in agenda.blocks for e in b.kept]
    left = [(stem, e) for stem, names in agenda.homework for e in names]
    every = [(stem, e) for stem, lesson in lt.LESSONS.items() for e in lesson.exercises]
    assert sorted(done + left) == sorted(every)
    if left:
        said = re.search(r"Homework, about (.+?) by the same estimates", text)
        assert said and _minutes(said.group(1)) == agenda.homework_minutes


def test_agendas_fit_their_promise():
    by_slug = {a.slug: a for a in lp.AGENDAS}
    assert by_slug["Half day"].minutes <= 4 * 60
    assert by_slug["Full day"].minutes <= 8 * 60
    course = by_slug["A course in sessions"]
    assert course.teaching_minutes == sum(lesson.minutes for lesson in lt.LESSONS.values()), "the whole course"
    assert not course.homework
    assert all(sum(item.minutes for item in s) <= 180 for s in course.sessions), "sessions of at most 3 hours"


STALE = [
    ("| 5:50–6:20 | **06 GPU, AMP, DDP** (tour) | devices |", "'**06 GPU, AMP, DDP**' is lesson 06"),
    ("| 6:20–6:30 | **07 saving** (tour) + wrap-up |", "'**07 saving**' is lesson 07"),
    ("07, 08 (convolutions) and 09 (capstone) as homework", "'09 (capstone)' gives lesson 09 the title of 12_capstone"),
    ("the capstone is lesson 19.", "names lesson 19, which does not exist"),
    ("see lessons 04, 05 and 19", "names lesson 19"),
    ("open `notebooks/06_gpu_amp.ipynb`", "'06_gpu_amp' is not a lesson"),
    ("lesson 07 saving and exporting", "gives lesson 07 the title of 09_persistence"),
]
FINE = [
    "| 0:25–1:20 | **01 tensors** | 55 |", "**05 the training loop**", "lesson 05 took 90–170 s", "08 (convolutions)",
    "`notebooks/03_nn_module.ipynb`", "`alice_01_tensors.ipynb`", "16 min, 10 (one) s", "lessons 00–07",
    "`course_utils.lesson_props.l05_training_lab`", "lesson 09, the `state_dict`", "**1.5 GB**",
]


@pytest.mark.parametrize("line, why", STALE, ids=[w for _, w in STALE])
def test_the_scan_finds_a_lesson_named_by_a_wrong_number_or_title(line, why):
    found = lp.stale_references(f"Some prose.\n\n{line}\n", "docs/x.md")
    assert len(found) == 1 and found[0].startswith("docs/x.md: ") and why in found[0], found


def test_the_scan_passes_right_references_and_ignores_generated_blocks():
    assert lp.stale_references("\n".join(FINE), "x") == []
    stale = STALE[0][0]
    for begin, end in (lp.AGENDAS_MARK, lp.LIVE_CODE_MARK, (lt.README_BEGIN, lt.README_END)):
        assert lp.stale_references(f"{begin}\n{stale}\n{end}\n", "x") == []
    assert len(lp.stale_references(f"{lp.AGENDAS_MARK[0]}\n{lp.AGENDAS_MARK[1]}\n{stale}\n", "x")) == 1


@pytest.mark.parametrize("where", ["README.md", "CONTRIBUTING.md", "docs/instructor_guide.md",
                                   "docs/design_reference_out_of_executor.md"])
def test_a_stale_reference_in_the_docs_fails_the_check_naming_the_file(copy, where):
    path = copy / where
    path.write_text(path.read_text(encoding="utf-8") + "\nThe DDP part is in **06 GPU, AMP, DDP**.\n", encoding="utf-8")
    problems = lp.problems(list(exercises()))
    assert len(problems) == 1 and problems[0].startswith(f"{where}: '**06 GPU, AMP, DDP**'"), problems


def test_a_section_of_the_readme_that_does_not_exist_fails_the_check(copy):
    """The guide sent instructors to "the README's *Quick start*", which the README does not have."""
    guide = copy / "docs" / "instructor_guide.md"
    _edit(guide, "the README's [*On your machine*](../README.md#on-your-machine)", "the README's *Quick start*")
    _edit(guide, "[*Where your work lives*](../README.md#where-your-work-lives-and-how-updates-arrive)",
          "[*Where your work lives*](../README.md#where-your-work-lives)")
    problems = lp.problems(list(exercises()))
    assert sorted(problems) == [
        "docs/instructor_guide.md: links to README.md#where-your-work-lives, a section README.md does not have",
        "docs/instructor_guide.md: names the README's section 'Quick start', which README.md does not have",
    ], problems


def test_a_link_to_a_heading_of_the_guide_that_does_not_exist_fails(copy):
    _edit(copy / "docs" / "instructor_guide.md", "[full day](#full-day)", "[full day](#full-day-65-hours)")
    assert lp.problems(list(exercises())) == [
        "docs/instructor_guide.md: links to #full-day-65-hours, which is no heading of this file"]


def test_a_renamed_lesson_title_regenerates_every_mention(copy, monkeypatch):
    old = lt.LESSONS["10_performance"]
    monkeypatch.setitem(lt.LESSONS, "10_performance", dataclasses.replace(old, title="speed"))
    problems = lp.problems(list(exercises()))
    assert {p.split(":")[0] for p in problems} == {"README.md", "docs/instructor_guide.md"}, problems
    lp.write(list(exercises()))
    readme = (copy / "README.md").read_text(encoding="utf-8")
    guide = (copy / "docs" / "instructor_guide.md").read_text(encoding="utf-8")
    assert "| 10 | [speed](notebooks/10_performance.ipynb) |" in readme
    assert "- **10 speed**: moving a model" in guide and "all of 10 speed" in guide
