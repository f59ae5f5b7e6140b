"""What the exercises of 15_small_gpt share."""

from __future__ import annotations

LESSON = "15_small_gpt"
