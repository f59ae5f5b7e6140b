"""Exercise definitions: one package per lesson, one file per exercise.

``lNN_name/`` holds the exercises of the notebook ``NN_name``: its ``__init__`` imports them in
the notebook's order (the registration order), ``_kit.py`` holds ``LESSON`` and what two or more
of them share, and each exercise file reads reference, cases, run and probes, wrong answers,
declaration (:func:`course_utils.grading.register`). The references are the solution notebooks'
answers, which ``build`` generates into ``course_utils/answers/`` (a package below both the
exercises and the lesson props, never written by hand; CONTRIBUTING.md, "Exercise definitions")."""
