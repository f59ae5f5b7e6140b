"""What the exercises of 00_start_here share."""

LESSON = "00_start_here"
