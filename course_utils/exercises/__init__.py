"""Exercise definitions, one module per lesson: ``lNN_name.py`` holds the exercises of the
notebook ``NN_name``. Each module builds :class:`course_utils.grading.Exercise` values and
passes them to :func:`course_utils.grading.register`."""
