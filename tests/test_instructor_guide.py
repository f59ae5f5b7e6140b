"""docs/instructor_guide.md stays true: its generated sections match the graders, the
exercises its agendas name exist, and the commands and options it quotes exist."""

from __future__ import annotations

import importlib
import inspect
import re

from course_utils import lesson_plan
from course_utils.__main__ import COMMANDS
from course_utils.grading import registry
from course_utils.instructor import guide

TEXT = guide.GUIDE.read_text(encoding="utf-8")


def test_stumbling_points_match_the_graders():
    assert guide.render(TEXT) == TEXT, "run `python -m course_utils.instructor.guide` to regenerate"
    for ex in registry.all_exercises():
        assert f"**`{ex.name}`**" in TEXT
        for m in ex.mistakes:
            assert f"`{m.id}`" in TEXT


def test_agendas_name_real_exercises():
    names = {ex.name for ex in registry.all_exercises()}
    agendas = TEXT.split(lesson_plan.AGENDAS_MARK[0], 1)[1].split(lesson_plan.AGENDAS_MARK[1], 1)[0]
    rows = [ln for ln in agendas.splitlines() if ln.startswith("|") and "**" in ln]
    assert len(rows) == sum(len(a.blocks) for a in lesson_plan.AGENDAS) >= 15
    for row in rows:
        learners_do = row.rstrip(" |").rsplit("|", 1)[1]
        for name in re.findall(r"`(\w+)`", learners_do):
            assert name in names, f"the agenda names `{name}`, which is not an exercise: {row}"


def test_quoted_commands_and_options_exist():
    commands = re.findall(r"python -m course_utils (\w+)([^\n`]*)", TEXT)
    assert {c for c, _ in commands} >= {"doctor", "grade", "progress", "reset", "lab"}
    # a subcommand with its own options lives in its own module (the learner's `progress` command
    # hands `progress summary` to the instructor's room view)
    subcommands = {("progress", "summary"): "course_utils.instructor.room",
                   ("grade", "merge"): "course_utils.instructor.grade_merge"}
    for name, rest in commands:
        assert name in COMMANDS, name
        sub = rest.split()[0] if rest.split() else ""
        module = importlib.import_module(subcommands.get((name, sub), COMMANDS[name]))
        source = inspect.getsource(module)
        for option in re.findall(r"(--[a-z][a-z-]+)", rest):
            assert f'"{option}"' in source, f"`python -m course_utils {name}` has no option {option}"


def test_no_placeholders_left():
    assert "LESSON_TABLE_ROWS" not in TEXT and "GRADING_NUMBERS" not in TEXT
