"""Exercises of 00_start_here: one warm-up (Celsius to Fahrenheit) to learn how checking works."""

from . import celsius_to_fahrenheit  # noqa: E402, F401  (the notebook's order is the registration order)
