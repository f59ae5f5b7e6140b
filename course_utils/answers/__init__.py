"""Reference answers generated from the solution notebooks by `python -m course_utils build`;
do not edit (edit solutions/NN_name.py and run the build). One module per lesson:
``lNN_name.py`` from ``solutions/NN_name.py``."""
