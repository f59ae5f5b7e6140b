"""Generated from solutions/00_start_here.py by `python -m course_utils build`; do not edit.

The answer definitions of the lesson's solution notebook (marker lines dropped) and the
notebook-level names they use; the exercises of 00_start_here take their references from here."""

# ruff: noqa

def celsius_to_fahrenheit(celsius):
    return celsius * 9 / 5 + 32
