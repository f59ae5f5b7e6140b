"""Moved: lesson 04's DataLoader worker helpers are :mod:`course_utils.lesson_props.l04_data_workers`.

This name is an alias of that module (the same module object, so every name and every patch is
shared) only while ``course_utils/exercises/`` (being split into one file per exercise, issue 12)
still imports it; tests/test_architecture.py fails once nothing does. Import the new name."""

import sys

from .lesson_props import l04_data_workers

sys.modules[__name__] = l04_data_workers
