"""What the exercises of 12_capstone share."""

LESSON = "12_capstone"
