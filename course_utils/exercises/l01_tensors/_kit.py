"""What the exercises of 01_tensors share."""

LESSON = "01_tensors"
