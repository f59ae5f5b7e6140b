"""A bubblewrap sandbox per graded submission (the instructor's trust boundary).

Everything that runs a learner's code during ``grade`` runs through :func:`popen`: a
``bwrap`` process that sees

* read-only: the system folders (``/usr``, ``/etc``, ...), the Python environment, and a
  *staged* copy of ``course_utils`` in which every exercise's reference solution has been cut
  out (:func:`stage_course`); nothing else of the instructor's disk: not the course checkout,
  not ``solutions/``, not ``.git``, not the submissions folder, not ``$HOME``;
* writable: an empty private ``/tmp`` (``$HOME`` is ``/tmp/home``) and ``/dev/shm``, RAM-backed
  (tmpfs) and together capped at ``Limits.tmp_size`` (:func:`tmp_sizes`), and nothing else (the
  instructor's home folders are hidden behind empty read-only ones, ``/var/tmp`` is ``/tmp``);
* no network (own network namespace), its own PID namespace (everything it starts dies with
  it), its own IPC namespace and session, a cleared environment (a short allow-list);
* limits: address space (``--memory``, default 2 GB per process, plus what importing this
  Python's torch maps beyond a CPU build: :func:`library_overhead`), a process/thread cap, CPU
  seconds, file size, no core files; and, as root, its own unprivileged user id (root ignores
  the process cap).

The host never shares a file with a sandbox: inputs are copied into a private staging folder
that is bind-mounted read-only, outputs come back through a pipe the host reads with a size
cap. Without ``bwrap`` grading refuses (:func:`require`), unless ``--no-sandbox`` is given.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import resource
import shutil
import site
import subprocess
import sys
import sysconfig
import threading
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Sequence

from .judge_side import cut_judge_side

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "course_utils"
COURSE_IN_SANDBOX = "/course"          # PYTHONPATH inside: /course/course_utils
WORK_IN_SANDBOX = "/submission"       # read-only inputs (the notebook copy)
INSTALL_HINT = (
    "Grading runs every submission in a bubblewrap sandbox, and `bwrap` was not found.\n"
    "  Debian/Ubuntu:  sudo apt-get install -y bubblewrap\n"
    "  Fedora/RHEL:    sudo dnf install -y bubblewrap\n"
    "  Arch:           sudo pacman -S bubblewrap\n"
    "bubblewrap needs Linux (on macOS or Windows, grade inside a Linux VM or container).\n"
    "To grade notebooks you trust anyway, add --no-sandbox (learner code then runs unconfined)."
)
HIDDEN_MESSAGE = "the course's reference solution is not available to graded code"
UID_BASE = 61000
UID_RANGE = 128  # user ids per grading process (61000-86599 for 200 processes)
MAX_WORKERS = UID_RANGE // 2  # a notebook sandbox and an executor sandbox per worker, each its own user


@dataclass
class Limits:
    memory: int = 2 * 1024**3      # bytes of address space per process
    processes: int = 256           # processes + threads of the sandbox's user
    cpu_seconds: int = 1800        # CPU seconds per process
    file_size: int = 512 * 1024**2  # largest file a sandbox may write
    tmp_size: int = 1024**3        # all its temp space (RAM): /tmp and /dev/shm together
    libraries: int = -1            # address space on top of `memory` for torch's libraries (-1: measure)

    def address_space(self) -> int:
        """The ``RLIMIT_AS`` of each sandboxed process: ``memory`` plus :func:`library_overhead`."""
        if self.libraries < 0:
            self.libraries = library_overhead()
        return self.memory + self.libraries

    def describe_memory(self) -> str:
        extra = self.address_space() - self.memory
        libraries = f" (+ {_describe(extra)} of address space for torch's libraries)" if extra else ""
        return _describe(self.memory) + libraries

    def describe_tmp(self) -> str:
        return _describe(self.tmp_size)


def _describe(n: int) -> str:
    return f"{n / 1024**3:.3g} GB" if n >= 1024**3 else f"{n / 1024**2:.3g} MB"


CPU_BUILD_IMPORT = 1024**3  # importing torch 2.13's CPU build and torchvision maps 0.6-0.7 GB
_IMPORT_PROBE = ("import torch\ntry:\n    import torchvision\nexcept Exception:\n    pass\n"
                 "print(open('/proc/self/status').read())")


_OVERHEAD_LOCK = threading.Lock()


def library_overhead(python: str = sys.executable) -> int:
    """Bytes of address space that importing torch (and torchvision, where it imports) maps in
    ``python`` beyond :data:`CPU_BUILD_IMPORT`; 0 for a CPU build.

    The memory limit is on address space, and a CUDA build of torch maps about 3.5 GB of
    libraries the moment it is imported (torch 2.14.1+cu130 with torchvision: ``VmPeak`` 3.48 GB
    against 0.63 GB for 2.13.0+cpu), most of it never loaded on a machine that does not use the
    GPU. Under a flat 2 GB every import failed ("libtorch_cpu.so: failed to map segment"), so
    every notebook graded on the default Linux wheel scored nothing. The limit grows by what the
    build maps beyond a CPU build, measured in a fresh interpreter (no learner code: the
    instructor's own Python); a measurement that fails counts as 0. The measurement takes 3-8 s
    (it imports torch), so for the running interpreter it is kept in the user's cache folder, keyed
    by the interpreter and the installed torch and torchvision (their paths and modification
    times), and made once per installation; :class:`Grader` starts it in the background.
    """
    with _OVERHEAD_LOCK:  # one measurement, however many threads ask at once
        return _library_overhead(python)


@functools.cache
def _library_overhead(python: str) -> int:
    key = _overhead_key(python)
    cache = _overhead_cache()
    if key is not None:
        try:
            cached = json.loads(cache.read_text(encoding="utf-8"))
            if isinstance(cached, dict) and cached.get("key") == key and isinstance(cached.get("bytes"), int):
                return max(0, cached["bytes"])
        except (OSError, ValueError):
            pass
    measured = _measure_overhead(python)
    if key is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"key": key, "bytes": measured}), encoding="utf-8")
            os.replace(tmp, cache)
        except OSError:
            pass
    return measured


def _overhead_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytorch_course" / "library_overhead.json"


def _overhead_key(python: str) -> str | None:
    """What the measurement depends on, for the running interpreter only (``None`` otherwise):
    the interpreter, and where torch and torchvision are installed and when they last changed."""
    import importlib.util

    if os.path.realpath(python) != os.path.realpath(sys.executable):
        return None
    parts = [os.path.realpath(python)]
    for name in ("torch", "torchvision"):
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        if origin is None:
            parts.append(f"{name}:-")
            continue
        folder = os.path.dirname(origin)
        stamps = [os.stat(origin).st_mtime_ns]
        lib = os.path.join(folder, "lib")
        if os.path.isdir(lib):
            stamps.append(os.stat(lib).st_mtime_ns)
        parts.append(f"{name}:{folder}:{stamps}")
    return "|".join(parts)


def _measure_overhead(python: str) -> int:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OMP_NUM_THREADS": "1", "MALLOC_ARENA_MAX": "2",
           "PYTHONNOUSERSITE": "1", "LC_ALL": "C.UTF-8"}
    try:  # no time limit that could interrupt an import mid-way: torch imports in seconds
        r = subprocess.run([python, "-c", _IMPORT_PROBE], capture_output=True, text=True, env=env, timeout=600)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    m = re.search(r"^VmPeak:\s+(\d+) kB", r.stdout, re.M)
    return max(0, int(m.group(1)) * 1024 - CPU_BUILD_IMPORT) if r.returncode == 0 and m else 0


def tmp_sizes(limits: Limits) -> tuple[int, int]:
    """``(/tmp, /dev/shm)`` sizes of a sandbox's tmpfs: a quarter of ``tmp_size`` for shared
    memory (DataLoader workers pass batches through it), the rest for files. Every other folder
    is read-only, so the sandbox holds at most ``tmp_size`` of temp data besides its processes'
    memory (``tests/test_grade_inputs.py`` fills every folder to measure it)."""
    shm = limits.tmp_size // 4
    return limits.tmp_size - shm, shm


def bwrap() -> str | None:
    return shutil.which("bwrap")


def works() -> str | None:
    """``None`` when a trivial sandbox starts, else why not (one line)."""
    exe = bwrap()
    if exe is None:
        return "bwrap not found"
    try:
        r = subprocess.run([exe, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--die-with-parent",
                            "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap did not start ({exc})"
    if r.returncode != 0:
        return "bwrap failed: " + r.stderr.decode(errors="replace").strip()[:300]
    return None


# ----------------------------------------------------------------------------- staging


class _CutReferences(ast.NodeTransformer):
    """Replace the bodies of the named top-level functions/classes by ``raise``, and every
    ``solution=`` keyword by ``None``: the staged lesson modules keep their names, cases, runs
    and probes, but contain no reference solution."""

    def __init__(self, names: set[str], module: str = ""):
        self.names = names
        self.module = module
        self.solution_names: set[str] = set()
        self.current = ""

    def _raise(self) -> list[ast.stmt]:
        where = f" ({self.module}.{self.current})" if self.module else ""
        return ast.parse(f"raise RuntimeError({HIDDEN_MESSAGE + where!r})").body

    def _cut_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.FunctionDef | ast.AsyncFunctionDef:
        node.body = self._raise()
        return node

    def visit_Module(self, node: ast.Module) -> ast.AST:
        for i, stmt in enumerate(node.body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) and stmt.name in self.names:
                self.current = stmt.name
                node.body[i] = self._cut_function(stmt)
            elif isinstance(stmt, ast.ClassDef) and stmt.name in self.names:
                self.current = stmt.name
                body: list[ast.stmt] = []
                for item in stmt.body:
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        body.append(self._cut_function(item))
                    elif isinstance(item, ast.Pass) or (
                            isinstance(item, ast.Expr) and isinstance(item.value, ast.Constant)):
                        continue
                    else:
                        continue  # class attributes may hold the answer's configuration
                stmt.body = body or [ast.Pass()]
        self.generic_visit(node)
        # module-level strings named by solution=... are blanked too
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id in self.solution_names
                                                    for t in stmt.targets):
                stmt.value = ast.Constant(None)
        return node

    def visit_keyword(self, node: ast.keyword) -> ast.AST:
        if node.arg == "solution":
            if isinstance(node.value, ast.Name):
                self.solution_names.add(node.value.id)
            node.value = ast.Constant(None)
        return node


def cut_references(source: str, names: set[str], module: str = "") -> str:
    tree = ast.parse(source)
    cutter = _CutReferences(names, module)
    tree = cutter.visit(tree)
    # second pass for solution constants assigned before the Exercise that names them
    tree = cutter.visit(tree)
    return ast.unparse(ast.fix_missing_locations(tree))


def reference_names() -> dict[str, set[str]]:
    """``{python file: names}``: where a lesson package defines an exercise's reference at top
    level, from the generated exercise index (no grader, nor torch, is imported for it). The
    references that are also public course helpers live in ``answers/``, cut by
    :func:`cut_generated_references`."""
    from course_utils.exercise_index import EXERCISES

    found: dict[str, set[str]] = {}
    for ex in EXERCISES:
        module, _, name = ex.reference.partition(":")
        if module.startswith("course_utils.exercises.") and name:
            file = PACKAGE.joinpath(*module.split(".")[1:]).with_suffix(".py")
            found.setdefault(str(file), set()).add(name)
    return found


def shared_answers_by_prop(package: Path = PACKAGE) -> dict[str, dict[str, set[str]]]:
    """``{lesson prop stem: {generated module stem: names}}``: the answers each lesson prop
    re-exports from ``answers/`` (``l05_training_lab`` re-exports lesson 05's
    ``train_one_epoch``, which later lessons train with)."""
    out: dict[str, dict[str, set[str]]] = {}
    for path in sorted((package / "lesson_props").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.rpartition(".")[0].endswith("answers"):
                stem = node.module.rpartition(".")[2]
                out.setdefault(path.stem, {}).setdefault(stem, set()).update(a.name for a in node.names)
    return out


def shared_answers(package: Path = PACKAGE,
                   by_prop: dict[str, dict[str, set[str]]] | None = None) -> dict[str, set[str]]:
    """``{generated module stem: names}`` that a lesson prop re-exports from ``answers/``
    (``lesson_props.l05_training_lab.train_one_epoch`` is the notebook's answer, which later
    lessons train with): public course helpers, so not cut. A submission that hands one in is
    still the course's own object to the judge (``reference_answer``), as before the props
    shared it."""
    shared: dict[str, set[str]] = {}
    for by_module in (shared_answers_by_prop(package) if by_prop is None else by_prop).values():
        for stem, names in by_module.items():
            shared.setdefault(stem, set()).update(names)
    return shared


def _spared(by_prop: dict[str, dict[str, set[str]]], stem: str, lesson: str | None) -> set[str]:
    """The shared answers of generated module ``stem`` left whole in a course staged for
    ``lesson``. Another lesson's: all (the lesson trains with them). The lesson's own: only those
    its own props need (lesson 05's demos train with ``lab.train_one_epoch``); the rest, shared
    only with later lessons (the capstone's ``save_checkpoint``, ...), is cut, so a submission of
    lesson 09 cannot wrap the course's ``save_checkpoint`` in a function of its own and hand it in
    (the judge spots only the course's object itself)."""
    if lesson is None or stem != f"l{lesson}":
        return shared_answers(by_prop=by_prop).get(stem, set())
    own_props = f"l{lesson[:2]}_"
    spared: set[str] = set()
    for prop, by_module in by_prop.items():
        if prop.startswith(own_props):
            spared |= by_module.get(stem, set())
    return spared


def cut_generated_references(staged_package: Path, lesson: str | None = None, executor: bool = False) -> None:
    """Cut every definition out of the staged ``answers/`` modules (the answers
    build extracts from the solution notebooks, course_utils/references.py), whether or not an
    exercise takes its reference from there yet: a submission must not import a solution.
    Shared answers (:func:`shared_answers`) stay, except the graded ``lesson``'s own; for the
    ``executor``, which runs answers and no demo, all of the lesson's own are cut (a learner's
    function that calls ``lab.train_one_epoch`` would otherwise score the course's)."""
    by_prop = shared_answers_by_prop(staged_package)  # read once: 0.1 s a call
    for path in sorted((staged_package / "answers").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        names = {n.name for n in ast.parse(text).body
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
        if not (executor and lesson is not None and path.stem == f"l{lesson}"):
            names -= _spared(by_prop, path.stem, lesson)
        if names:
            module = f"course_utils.answers.{path.stem}"
            path.write_text(cut_references(text, names, module), encoding="utf-8")


def stage_course(dest: Path, lesson: str | None = None, executor: bool = False) -> Path:
    """Copy ``course_utils`` to ``dest/course_utils`` with every reference solution cut out
    (see :class:`_CutReferences`); returns ``dest``. Readable by any user, writable by none.
    ``lesson``: the course a submission of that lesson runs against, where its own exercises'
    answers are cut even when a lesson prop shares them with later lessons; ``executor``: the copy
    the judge's executor runs answers in, where even those the lesson's own demos use are cut."""
    target = dest / "course_utils"
    shutil.copytree(PACKAGE, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".*"))
    cuts = reference_names()
    for file, names in cuts.items():
        try:
            rel = Path(file).resolve().relative_to(PACKAGE)
        except ValueError:
            continue
        staged = target / rel
        module = "course_utils." + ".".join(rel.with_suffix("").parts)
        staged.write_text(cut_references(Path(file).read_text(encoding="utf-8"), names, module), encoding="utf-8")
    cut_generated_references(target, lesson, executor)
    cut_judge_side(target)  # the wrong answers, many a reference with a switch, and the judge's halves
    # the mark of a staged course: a demo cell's `reference(...)` gets the notebook's own answer
    (target / "_staged.py").write_text('"""This copy of the course has its references cut out (course_utils.instructor.'
                                       'sandbox.stage_course)."""\n', encoding="utf-8")
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return dest


# ----------------------------------------------------------------------------- command


def _system_binds() -> list[str]:
    args: list[str] = []
    for p in ("/usr", "/etc", "/opt"):
        if os.path.isdir(p) and not os.path.islink(p):
            args += ["--ro-bind", p, p]
    for p in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(p):
            args += ["--symlink", os.readlink(p), p]
        elif os.path.isdir(p):
            args += ["--ro-bind", p, p]
    return args


def readable_inside(path: str | Path) -> str | None:
    """The folder bound into every sandbox (read-only) that holds ``path``, or ``None``: a file
    there is readable by every submission (the system folders, the Python environment's)."""
    real = os.path.realpath(path)
    system = [p for p in ("/usr", "/etc", "/opt", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
              if os.path.isdir(p)]
    for folder in sorted({os.path.realpath(d) for d in system + _python_dirs()}, key=len):
        if real == folder or real.startswith(folder.rstrip("/") + "/"):
            return folder
    return None


def _python_dirs() -> list[str]:
    dirs = {sys.prefix, sys.base_prefix, sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"],
            str(Path(os.path.realpath(sys.executable)).parent.parent)}
    try:
        dirs.update(site.getsitepackages())
    except AttributeError:  # pragma: no cover - old virtualenv
        pass
    # site folders another environment lends this one through a .pth file (a venv layered on
    # another, `conda develop`): torch may live there, not in this environment's own folders
    dirs.update(p for p in sys.path if os.path.basename(p.rstrip("/")) in ("site-packages", "dist-packages"))
    out = []
    for d in sorted(dirs):
        d = os.path.realpath(d)
        if any(d == s or d.startswith(s + "/") for s in ("/usr", "/etc", "/opt", "/bin", "/lib", "/lib64", "/sbin")):
            continue
        if os.path.isdir(d):
            out.append(d)
    # drop folders inside another one already listed
    return [d for d in out if not any(d != o and d.startswith(o + "/") for o in out)]


def _mkdirs(path: str) -> list[str]:
    """Create every ancestor of ``path`` world-readable (bwrap makes them 0700 otherwise)."""
    args: list[str] = []
    parts = Path(path).parts[1:-1]
    cur = ""
    for part in parts:
        cur += "/" + part
        args += ["--perms", "0755", "--dir", cur]
    return args


def _masks(bound: list[str]) -> list[str]:
    """Hide the real course package, its solutions and its git history where a bound folder
    (a non-editable install in site-packages, say) contains them."""
    args: list[str] = []
    for p in (PACKAGE, ROOT / "solutions", ROOT / ".git"):
        sp = str(p)
        if p.exists() and any(sp == b or sp.startswith(b + "/") for b in bound + ["/usr", "/opt", "/etc"]):
            args += ["--tmpfs", sp]
    return args


def command(argv: Sequence[str], *, course: Path, inputs: Path | None, env: dict[str, str],
            limits: Limits, uid: int | None, cwd: str = "/tmp/work") -> list[str]:
    """The ``bwrap`` command line that runs ``argv`` in a fresh sandbox."""
    exe = bwrap()
    if exe is None:
        raise RuntimeError(INSTALL_HINT)
    home = os.path.expanduser("~")
    args = [exe, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session"]
    args += _system_binds()
    # the instructor's homes hidden behind empty folders (read-only once the env is bound in them),
    # and the only writable places: /tmp and /dev/shm, tmp_size in all
    masked = [d for d in sorted({home, "/root", "/home"}) if os.path.isdir(d)]
    for tmp in masked:
        args += ["--perms", "0755", "--size", str(1024**2), "--tmpfs", tmp]
    tmp_bytes, shm_bytes = tmp_sizes(limits)
    args += ["--perms", "1777", "--size", str(tmp_bytes), "--tmpfs", "/tmp", "--symlink", "/tmp", "/var/tmp",
             "--dev", "/dev", "--proc", "/proc",
             "--perms", "1777", "--size", str(shm_bytes), "--tmpfs", "/dev/shm"]
    bound = _python_dirs()
    for d in bound:
        args += _mkdirs(d) + ["--ro-bind", d, d]
    args += _masks(bound)
    args += _mkdirs(COURSE_IN_SANDBOX + "/x") + ["--ro-bind", str(course), COURSE_IN_SANDBOX]
    if inputs is not None:
        args += ["--ro-bind", str(inputs), WORK_IN_SANDBOX]
    for tmp in masked:
        args += ["--remount-ro", tmp]
    args += ["--chdir", "/tmp", "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    if uid is not None:
        # root is exempt from the process cap: run the submission as its own unprivileged user
        args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--",
                 shutil.which("setpriv") or "/usr/bin/setpriv",
                 f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all",
                 "--no-new-privs"]
    else:
        args += ["--"]
    shell = ("mkdir -p /tmp/home /tmp/work && cd " + cwd + " && exec \"$@\"")
    return args + ["/bin/sh", "-c", shell, "sandbox", *argv]


def base_env(threads: int = 1) -> dict[str, str]:
    n = str(max(1, threads))
    py_bin = str(Path(sys.executable).parent)
    return {
        "PATH": f"{py_bin}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp/home", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        "PYTHONPATH": COURSE_IN_SANDBOX, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1",
        "OMP_NUM_THREADS": n, "MKL_NUM_THREADS": n, "MPLBACKEND": "Agg",
        "COURSE_PROGRESS_LOG": "", "JUPYTER_PLATFORM_DIRS": "1", "GLOO_SOCKET_IFNAME": "lo",
        "JUPYTER_RUNTIME_DIR": "/tmp/home/.jupyter-runtime", "JUPYTER_DATA_DIR": "/tmp/home/.jupyter-data",
        "IPYTHONDIR": "/tmp/home/.ipython", "MPLCONFIGDIR": "/tmp/home/.mpl",
        # the memory limit is on address space, and glibc reserves a 64 MB malloc arena per thread
        # (a kernel has a dozen): with two arenas the capstone's kernel peaks at 1.3 GB of address
        # space instead of 2.2 GB, for the same memory in use
        "MALLOC_ARENA_MAX": "2",
    }


def _limit(kind: int, value: int) -> None:
    try:
        resource.setrlimit(kind, (value, value))
    except (ValueError, OSError):
        soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY and value > hard:
            resource.setrlimit(kind, (hard, hard))


def preexec(limits: Limits, uid: int | None):
    """Limits set in the child between fork and exec (they are inherited by the sandbox)."""
    nproc = limits.processes
    address_space = limits.address_space()  # measured here, in the parent, never between fork and exec
    if uid is None:  # not root: the cap counts this user's other processes too
        try:
            nproc += sum(1 for _ in Path("/proc").glob("[0-9]*/task/*") if _.stat().st_uid == os.getuid())
        except OSError:
            nproc += 4096

    def apply() -> None:
        _limit(resource.RLIMIT_AS, address_space)
        _limit(resource.RLIMIT_NPROC, nproc)
        _limit(resource.RLIMIT_CPU, limits.cpu_seconds)
        _limit(resource.RLIMIT_FSIZE, limits.file_size)
        _limit(resource.RLIMIT_CORE, 0)

    return apply


class UidPool:
    """Distinct unprivileged user ids for the sandboxes running at once (root only)."""

    def __init__(self, size: int):
        # a range of its own per grading process, so two graders never share a process cap
        base = UID_BASE + (os.getpid() % 200) * UID_RANGE
        self.free = [base + i for i in range(max(1, min(size, UID_RANGE)))] if os.geteuid() == 0 else []
        self.all = list(self.free)

    def take(self) -> int | None:
        return self.free.pop(0) if self.free else None

    def give(self, uid: int | None) -> None:
        if uid is not None:
            self.free.append(uid)


def popen(argv: Sequence[str], *, course: Path, inputs: Path | None, limits: Limits, uid: int | None,
          threads: int = 1, extra_env: dict[str, str] | None = None) -> subprocess.Popen:
    env = base_env(threads)
    env.update(extra_env or {})
    cmd = command(argv, course=course, inputs=inputs, env=env, limits=limits, uid=uid)
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            preexec_fn=preexec(limits, uid), start_new_session=True, close_fds=True,
                            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})


def kill(proc: subprocess.Popen | None) -> None:
    """Kill a sandbox and everything in it (its PID namespace dies with bwrap's child)."""
    if proc is None:
        return
    try:
        os.killpg(proc.pid, 9)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover
        pass
