"""What the exercises of 08_convolutions share: the lesson's name. (The rules "without the
built-in" of conv2d_by_hand and max_pool_by_hand are ``Exercise.forbid`` patterns, which the
grading framework enforces; see course_utils/grading/spec.py.)"""

LESSON = "08_convolutions"
