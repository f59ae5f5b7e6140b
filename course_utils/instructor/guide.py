"""Keep the generated parts of ``docs/instructor_guide.md`` in line with the exercises.

``python -m course_utils build`` does the same (and ``build --check`` fails on drift); this
command is the guide alone. The content is declared in ``course_utils/lesson_plan.py``.

The guide's "common stumbling points" section lists, per lesson, every exercise and the named
mistakes its grader recognises (``Mistake`` declarations in ``course_utils/exercises/``):
the things learners actually get wrong, in the words the grader uses with them.

    python -m course_utils.instructor.guide           # rewrite the generated section
    python -m course_utils.instructor.guide --check   # exit 1 if it is out of date (tests)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from course_utils import lesson_plan

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "instructor_guide.md"
BEGIN, END = lesson_plan.STUMBLING_MARK


def _exercises() -> list[lesson_plan.ExerciseDoc]:
    from course_utils.grading import registry

    return lesson_plan.exercise_docs(registry.all_exercises())


def stumbling_points() -> str:
    """Markdown: per lesson, per exercise, the named mistakes and what the grader tells learners."""
    return lesson_plan.stumbling_points(_exercises())


def render(text: str) -> str:
    """``text`` with every generated block of the guide (agendas, live-code notes, stumbling
    points) replaced by the current one."""
    return lesson_plan.render_guide(text, _exercises())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m course_utils.instructor.guide", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="exit 1 if the guide is out of date")
    args = ap.parse_args(argv)
    text = GUIDE.read_text(encoding="utf-8")
    new = render(text)
    if args.check:
        if new != text:
            print(f"{GUIDE.relative_to(ROOT)} is out of date: run `python -m course_utils.instructor.guide`.")
            return 1
        print(f"{GUIDE.relative_to(ROOT)}: stumbling points up to date.")
        return 0
    if new != text:
        GUIDE.write_text(new, encoding="utf-8")
        print(f"wrote {GUIDE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
