# Sphinx configuration of the course website; website/build.py writes the pages next to a copy
# of this file and runs Sphinx. Everything it loads is local: the widget manager and MathJax
# are vendored from npm at build time (website/build.py), never fetched from a CDN.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # course_a11y.py, copied next to this file

project = "PyTorch from the ground up"
author = "the course authors"
copyright = "the course authors; lesson text CC BY 4.0, code MIT"
extensions = ["myst_nb", "course_a11y"]  # course_a11y: headings with a level, focusable code blocks
html_theme = "furo"
html_title = project
html_static_path = ["_static"]
html_css_files = ["course.css"]
# after MathJax (priority > 500, deferred like it): a MathJax 2 shim for the widget manager
html_js_files = [("course.js", {"priority": 900, "defer": "defer"})]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

# The stored outputs are the page: nothing runs while building.
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

# Widgets: @jupyter-widgets/html-manager's standalone bundle (standard controls), from npm.
nb_ipywidgets_js = {"widgets/embed.js": {}}
# Math: MathJax 3 from npm.
mathjax_path = "mathjax/tex-chtml.js"

# Lessons link to each other and to files of the repository that are not pages.
suppress_warnings = ["myst.xref_missing", "myst.header", "mystnb.unknown_mime_type", "misc.highlighting_failure"]
