"""Sphinx extension of the course website: accessibility fixes of the HTML that Sphinx, Furo and
MyST-NB write, made in the page itself (no script needed), so that axe-core finds no critical or
serious violation (tests/test_website.py runs it on every page):

- the toctree captions ("Lessons", "Solutions") have ``role="heading"`` but no level
  (axe ``aria-required-attr``, critical): they get ``aria-level="2"``;
- code, output and traceback blocks scroll sideways when a line is long, and a keyboard cannot
  reach them (axe ``scrollable-region-focusable``, serious): every ``<pre>`` is focusable
  (``tabindex="0"``) and named for what it holds (``role="group"`` and an ``aria-label``:
  a plain ``<pre>`` may not carry a label); so is every table's wrapper, which scrolls when the
  table is wider than the page.

What the widget manager draws in the browser (sliders, images) is fixed by ``course.js``.
"""

from __future__ import annotations

import re
from typing import Any

HEADING_WITHOUT_LEVEL = re.compile(r'<(?P<tag>\w+)(?P<attrs>[^>]*\srole="heading"[^>]*)>')
PRE = re.compile(r'(?P<wrap><div class="(?P<cls>[^"]*)"><div class="highlight">)?<pre(?P<attrs>(?:\s[^>]*)?)>')
TABLE_WRAPPER = re.compile(r'<div class="(?P<cls>table-wrapper\b[^"]*)"(?P<attrs>[^>]*)>')
# The context values that hold page HTML: the page body and Furo's sidebar.
HTML_KEYS = ("body", "furo_navigation_tree")


def _level(m: re.Match[str]) -> str:
    if "aria-level" in m["attrs"]:
        return m[0]
    return f'<{m["tag"]}{m["attrs"]} aria-level="2">'


def block_label(classes: str) -> str:
    """What a ``<pre>`` holds, from the classes of the block around it."""
    names = classes.split()
    if "traceback" in names:
        return "Error traceback"
    if "stderr" in names:
        return "Standard error output"
    if "output" in names:
        return "Output"
    return "Code"


def _pre(m: re.Match[str]) -> str:
    if "tabindex" in m["attrs"]:
        return m[0]
    label = block_label(m["cls"] or "")
    return f'{m["wrap"] or ""}<pre{m["attrs"]} tabindex="0" role="group" aria-label="{label}">'


def _table(m: re.Match[str]) -> str:
    if "tabindex" in m["attrs"]:
        return m[0]
    return f'<div class="{m["cls"]}"{m["attrs"]} tabindex="0" role="group" aria-label="Table">'


def fix_html(html: str) -> str:
    """``html`` with every heading role given a level and every ``<pre>`` and table wrapper
    reachable by keyboard."""
    return TABLE_WRAPPER.sub(_table, PRE.sub(_pre, HEADING_WITHOUT_LEVEL.sub(_level, html)))


def _page_context(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    for key in HTML_KEYS:
        if isinstance(context.get(key), str):
            context[key] = fix_html(context[key])


def setup(app: Any) -> dict[str, Any]:
    # after Furo (priority 500), which computes the sidebar in the same event
    app.connect("html-page-context", _page_context, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
