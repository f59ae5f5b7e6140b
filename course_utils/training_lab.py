"""Moved: lesson 05's training helpers are :mod:`course_utils.lesson_props.l05_training_lab`.

This name is an alias of that module (the same module object, so every name and every patch is
shared) only while ``course_utils/exercises/`` (being split into one file per exercise, issue 12)
still imports it; tests/test_architecture.py fails once nothing does. Import the new name."""

import sys

from .lesson_props import l05_training_lab

sys.modules[__name__] = l05_training_lab
