"""The learner's progress dashboard: plain functions, the widget, and auto-refresh after a
check (with a fake shell, a real IPython shell, and a real kernel)."""

from __future__ import annotations

import nbformat
import pytest

from course_utils import dashboard as dash
from course_utils import progress
from course_utils import progress_view as view

EXS = [
    ("99_demo.first", "99_demo", "first", "The first one"),
    ("99_demo.second", "99_demo", "second", "The second one"),
    ("98_other.third", "98_other", "third", "Another lesson's"),
]


def _events():
    return [
        {"event": "check", "exercise": "99_demo.first", "status": "incorrect", "mistake": "wrong_dim"},
        {"event": "hint", "exercise": "99_demo.first"},
        {"event": "check", "exercise": "99_demo.first", "status": "correct"},
        {"event": "check", "exercise": "99_demo.second", "status": "incorrect", "mistake": "off_by_one"},
        {"event": "solution", "exercise": "99_demo.second"},
        {"event": "check", "exercise": "77_gone.old", "status": "correct"},
    ]


def test_collect_folds_every_lesson_and_exercise():
    lessons = view.collect(_events(), EXS)
    assert [les.lesson for les in lessons] == ["77_gone", "98_other", "99_demo"]
    demo = {e.name: e for e in lessons[2].exercises}
    first, second = demo["first"], demo["second"]
    assert (first.status, first.attempts, first.hints, first.solution_viewed) == ("correct", 2, 1, False)
    assert (second.status, second.attempts, second.solution_viewed, second.last_mistake) == \
        ("incorrect", 1, True, "off_by_one")
    assert lessons[1].exercises[0].status == "not_attempted"
    assert lessons[0].exercises[0].title.startswith("(not in this version")
    assert (lessons[2].correct, lessons[2].total, lessons[2].title) == (1, 2, "99 · demo")


def test_filters_and_headline():
    lessons = view.collect(_events(), EXS)
    assert [e.name for les in view.filter_lessons(lessons, "incorrect") for e in les.exercises] == ["second"]
    assert [e.name for les in view.filter_lessons(lessons, "todo") for e in les.exercises] == ["third", "second"]
    assert [les.lesson for les in view.filter_lessons(lessons, "all", "98_other")] == ["98_other"]
    with pytest.raises(ValueError):
        view.filter_lessons(lessons, "everything")
    assert view.headline(lessons) == ("2 of 4 exercises correct · 1 incorrect · 1 not attempted · "
                                      "1 hints · 1 solutions viewed")


def test_render_html_shows_status_counts_and_lesson_totals():
    lessons = view.collect(_events(), EXS)
    html = view.render_html(view.filter_lessons(lessons, "incorrect"), lessons)
    assert "data-exercise='99_demo.second'" in html and "data-status='incorrect'" in html
    assert "99_demo.first" not in html
    assert "1/2 correct" in html  # the lesson's total, not the filtered one
    assert "off_by_one" in html and "viewed" in html
    assert "Nothing to show" in view.render_html([])
    assert "✅ first" in view.render_text(lessons)


def test_log_signature_changes_with_the_log(tmp_path):
    p = tmp_path / "log.jsonl"
    assert dash.log_signature(p) is None
    p.write_text("x\n")
    first = dash.log_signature(p)
    with open(p, "a") as fh:
        fh.write("y\n")
    assert dash.log_signature(p) != first
    assert dash.log_signature(None) is None


class FakeEvents:
    def __init__(self):
        self.callbacks = {}

    def register(self, name, fn):
        self.callbacks.setdefault(name, []).append(fn)

    def unregister(self, name, fn):
        self.callbacks[name].remove(fn)

    def fire(self, name):
        for fn in self.callbacks.get(name, []):
            fn(None)


class FakeShell:
    def __init__(self):
        self.events = FakeEvents()


@pytest.fixture
def log(tmp_path, monkeypatch):
    path = tmp_path / "progress.jsonl"
    monkeypatch.setenv("COURSE_PROGRESS_LOG", str(path))
    return path


def test_widget_refreshes_after_a_cell_that_changed_the_log(log):
    shell = FakeShell()
    d = dash.Dashboard(exercises=EXS, shell=shell)
    try:
        assert d.auto_refresh and d.log == log
        assert "0 of 3 exercises correct" in d.header.value and d.bar.value == 0
        assert len(shell.events.callbacks["post_run_cell"]) == 1
        dash.Dashboard(exercises=EXS, shell=shell).close()  # a second dashboard: still one hook
        assert len(shell.events.callbacks["post_run_cell"]) == 1

        progress.log_event("check", "99_demo.first", status="correct", mistake=None)
        before = d.refreshes
        shell.events.fire("post_run_cell")
        assert d.refreshes == before + 1
        assert "1 of 3 exercises correct" in d.header.value and d.bar.value == 1
        assert "data-status='correct'" in d.body.value

        shell.events.fire("post_run_cell")  # nothing new in the log: no rebuild
        assert d.refreshes == before + 1
        assert d.refresh() is False and d.refresh(force=True) is True
    finally:
        d.close()


def test_widget_controls_filter_and_refresh_button(log):
    progress.log_event("check", "99_demo.second", status="incorrect", mistake="off_by_one")
    d = dash.Dashboard(exercises=EXS, auto_refresh=False)
    try:
        assert not d.auto_refresh
        assert [v for _, v in d.lesson.options] == ["", "98_other", "99_demo"]
        d.show.value = "incorrect"
        assert "99_demo.second" in d.body.value and "98_other.third" not in d.body.value
        d.show.value = "all"
        d.lesson.value = "98_other"
        assert "98_other.third" in d.body.value and "99_demo" not in d.body.value.split("data-exercise")[1]
        progress.log_event("check", "98_other.third", status="correct", mistake=None)
        n = d.refreshes
        d.button.click()
        assert d.refreshes == n + 1 and "data-status='correct'" in d.body.value
        assert d.lesson.value == "98_other"  # the choice survives a refresh
        bundle = d._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle
    finally:
        d.close()


def test_logging_turned_off_is_shown(monkeypatch):
    monkeypatch.setenv("COURSE_PROGRESS_LOG", "")
    d = dash.Dashboard(exercises=EXS, auto_refresh=False)
    assert "turned off" in d.status.value and d.header.value
    d.close()


def test_whole_course_by_default(log):
    from course_utils.grading import exercises

    d = dash.dashboard(auto_refresh=False)
    try:
        assert sum(les.total for les in d.lessons) == len(exercises())
        assert "00_start_here.celsius_to_fahrenheit" in d.body.value
    finally:
        d.close()


def test_refresh_after_check_in_a_real_ipython_shell(log):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        shell.run_cell("from course_utils.dashboard import dashboard\nd = dashboard()", store_history=False)
        d = shell.user_ns["d"]
        assert d.auto_refresh
        assert "data-exercise='00_start_here.celsius_to_fahrenheit' data-status='not_attempted'" in d.body.value
        shell.run_cell("from course_utils.grading import exercises_for\nex = exercises_for('00_start_here')\n"
                       "ex.celsius_to_fahrenheit.check(lambda c: c * 9 / 5 + 32)", store_history=False)
        assert "data-exercise='00_start_here.celsius_to_fahrenheit' data-status='correct'" in d.body.value
        d.close()
    finally:
        shell.events.unregister("post_run_cell", dash._after_cell)
        dash._HOOKED[:] = [s for s in dash._HOOKED if s is not shell]
        InteractiveShell.clear_instance()


@pytest.mark.slow  # starts a kernel
def test_refresh_after_check_in_a_real_kernel(log):
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in [
        "from course_utils.dashboard import dashboard\nd = dashboard()\nd",
        "from course_utils.grading import exercises_for\nex = exercises_for('00_start_here')\n"
        "ex.celsius_to_fahrenheit.check(lambda c: c * 9 / 5 + 32)",
        "print(d.refreshes, d.bar.value, 'correct' in d.body.value.split('celsius_to_fahrenheit')[1][:80])",
    ]])
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    views = [o for o in nb.cells[0].outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert views, "the dashboard cell displays a widget"
    refreshes, correct, shown = nb.cells[2].outputs[0]["text"].split()
    assert int(refreshes) >= 2 and int(correct) >= 1 and shown == "True"
