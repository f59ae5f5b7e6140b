"""What the exercises of 09_capstone share."""

LESSON = "09_capstone"
