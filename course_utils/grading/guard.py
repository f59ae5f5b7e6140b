"""Isolation for running learner code inside a check.

:func:`preserved_state` restores everything a check could disturb in the learner's session
(torch / Python / NumPy RNG state, grad mode, default dtype, module train/eval flags), and
:func:`time_limit` stops learner code that runs too long (an endless loop) with
:class:`CheckTimeout`, which derives from ``BaseException`` so ``except Exception`` in the
learner's code cannot swallow it, and which a bare ``except:`` cannot swallow for long either
(see :func:`time_limit`).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
import os
import random
import signal
import site
import sys
import sysconfig
import threading
import time
from typing import Any, Iterable, Iterator

import torch


REPEAT_S = 0.1  # seconds between repeated timeout signals
BACKSTOP = 4.0  # wall-time limit = CPU limit x max(BACKSTOP, LOAD_MARGIN x load per core)
LOAD_MARGIN = 2.0
IDLE_MARGIN = 1.5  # ... but CPU limit x IDLE_MARGIN for a thread that sleeps in the learner's own code
SLEPT = 0.5  # (having slept at least CPU limit x SLEPT: CPU-bound code on a busy machine is never cut)
LOOK_S = 0.25  # past that, while the thread waits in a library, look again this often


class _Escalating:
    """Creating or dropping one of these re-arms the escalation of the thread's time limit:
    CPython switches the tracer off when it raises, and the moment the learner's ``except:``
    drops the exception is the moment to switch it on again."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        _rearm()

    def __del__(self) -> None:
        _rearm()


class CheckTimeout(_Escalating, BaseException):
    """The learner's code ran past the check's time limit."""


class CheckInterrupted(_Escalating, KeyboardInterrupt):
    """Interrupt Kernel during a check (a ``KeyboardInterrupt``)."""


def _modules_in(objects: Iterable[Any]) -> list[torch.nn.Module]:
    found: list[torch.nn.Module] = []
    for obj in objects:
        if isinstance(obj, torch.nn.Module):
            found.extend(obj.modules())
    return found


@contextlib.contextmanager
def preserved_state(*watch: Any) -> Iterator[None]:
    """Restore RNG states (CPU, and CUDA when in use), grad mode, default dtype, torch's
    thread count, deterministic algorithms, anomaly detection and the train/eval flags of any
    module in ``watch`` when the block ends, however it ends."""
    grad_enabled = torch.is_grad_enabled()
    default_dtype = torch.get_default_dtype()
    threads = torch.get_num_threads()
    deterministic = (torch.are_deterministic_algorithms_enabled(),
                     torch.is_deterministic_algorithms_warn_only_enabled())
    anomaly = (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled())
    py_state = random.getstate()
    try:
        import numpy as np

        np_state: Any = np.random.get_state()
    except ImportError:  # pragma: no cover - numpy ships with torch's usual installs
        np = None  # type: ignore[assignment]
        np_state = None
    modes = [(m, m.training) for m in _modules_in(watch)]
    try:
        # CUDA generators too, when present (initialising CUDA just to save them is avoided)
        cuda_devices = list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []
        with torch.random.fork_rng(devices=cuda_devices):
            yield
    finally:
        torch.set_grad_enabled(grad_enabled)
        torch.set_default_dtype(default_dtype)
        # switches an answer may flip and a learner would not see: a review's answers left
        # deterministic algorithms and anomaly detection on after their check
        if (torch.are_deterministic_algorithms_enabled(),
                torch.is_deterministic_algorithms_warn_only_enabled()) != deterministic:
            torch.use_deterministic_algorithms(deterministic[0], warn_only=deterministic[1])
        if (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()) != anomaly:
            torch.autograd.set_detect_anomaly(anomaly[0], check_nan=anomaly[1])
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        random.setstate(py_state)
        if np is not None:
            np.random.set_state(np_state)
        for m, training in modes:
            m.training = training


def _async_exc(thread_id: int, exc: type[BaseException]) -> None:
    """Schedule ``exc`` in another thread.

    Never call ``PyThreadState_SetAsyncExc`` with NULL to cancel one: CPython 3.11 then marks
    an asynchronous exception as pending for the whole interpreter with none to deliver, and
    the next function called under a profile or trace hook spins forever at its first line
    (see :func:`_drain_pending_timeout` for how a pending one is cleared instead)."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id), ctypes.py_object(exc))


def _drain_pending_timeout() -> None:
    """Let a :class:`CheckTimeout` the watchdog scheduled in this thread land here and drop it.

    The interpreter delivers an asynchronous exception at a backward jump, so a few loop turns
    are enough; delivering it (rather than cancelling it) also clears the interpreter's flag."""
    try:
        for _ in range(100):
            pass
    except CheckTimeout:
        pass


_BOOTSTRAP = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")
DEFER_S = 0.05  # while an import runs, look again this often
MAX_DEFER_S = 60.0  # an import that never ends (a learner's module with a loop) is stopped after this


# logging's module lock is taken and released around every fork by callbacks whose exceptions
# Python swallows (os.register_at_fork): an interrupt landing in `_releaseLock` there leaves the
# lock held, and the next `logging` call in the learner's kernel hangs. The interrupt waits until
# the code is out of logging. (Not threading.py: a loop blocked on a queue or a DataLoader spends
# nearly all its time there, and its locks are released by `with`/`finally`.)
_LOCK_HOLDERS = tuple(os.path.normcase(os.path.abspath(m.__file__)) for m in (logging,) if m.__file__)


def holding_lock(frame: Any) -> bool:
    """True when ``frame`` (where an interrupt would land) is inside :data:`_LOCK_HOLDERS`."""
    return frame is not None and os.path.normcase(os.path.abspath(frame.f_code.co_filename)) in _LOCK_HOLDERS


def must_wait(frame: Any) -> bool:
    """An interrupt landing at ``frame`` now could break the kernel: wait a moment."""
    return importing(frame) or holding_lock(frame)


def importing(frame: Any) -> bool:
    """True when ``frame`` or a caller is inside the import system: an exception raised now
    would leave a module half-imported in ``sys.modules`` (a broken torch until a restart)."""
    while frame is not None:
        if frame.f_code.co_filename in _BOOTSTRAP:
            return True
        frame = frame.f_back
    return False


def preload(modules: Iterable[str]) -> None:
    """Import ``modules`` now (never under a time limit); unknown ones are ignored."""
    import importlib

    for name in modules:
        if name in sys.modules:
            continue
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - optional extras (onnx) may be absent
            pass


def _library_dirs() -> tuple[str, ...]:
    """The standard library, site-packages and this package: code that is not the learner's."""
    dirs: set[str] = set()
    for variables in (None, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}):
        paths = sysconfig.get_paths(vars=variables) if variables else sysconfig.get_paths()
        dirs.update(paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths)
    with contextlib.suppress(Exception):  # virtualenv's old `site` lacks these
        dirs.update(site.getsitepackages())
        dirs.add(site.getusersitepackages())
    dirs.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # course_utils/
    return tuple(os.path.join(os.path.normcase(os.path.abspath(d)), "") for d in dirs if d)


_LIBRARY_DIRS = _library_dirs()


@functools.lru_cache(maxsize=4096)
def learner_code(filename: str) -> bool:
    """Whether code from ``filename`` is the learner's (a notebook cell, their own module), not
    the standard library, an installed package or the course's own code. This only decides where
    an escalated interrupt may land (so library cleanup code runs whole); it guards nothing."""
    if filename.startswith("<frozen"):
        return False
    if filename.startswith("<"):  # <ipython-input-...>, <string>
        return True
    return not os.path.normcase(os.path.abspath(filename)).startswith(_LIBRARY_DIRS)


# The wall clock, bound when this module is imported: a check may put a simulated clock in
# ``time.monotonic``'s place (lesson 10's median_time does), and a deadline read from it never
# came (a review's `time.sleep(150)` answer ran its 150 s).
_wall = time.monotonic


def _cpu_clock() -> Any:
    """A clock of the calling thread's CPU time, readable from any thread (the process's CPU
    time where a thread's own clock is not available)."""
    getid = getattr(time, "pthread_getcpuclockid", None)
    if getid is not None:
        try:
            clock = getid(threading.get_ident())
            time.clock_gettime(clock)
            return functools.partial(time.clock_gettime, clock)
        except (OSError, OverflowError):  # pragma: no cover - platform without thread clocks
            pass
    return time.process_time


def _queue_clock() -> Any:
    """Seconds the calling thread has spent waiting for a CPU (runnable, not running), from
    Linux's schedstat, readable from any thread; None where not available."""
    path = f"/proc/self/task/{threading.get_native_id()}/schedstat"

    def queued() -> float:
        with open(path, "rb") as f:
            return int(f.read().split()[1]) / 1e9

    try:
        queued()
    except (OSError, ValueError, IndexError):  # not Linux, or a kernel without schedstats
        return None
    return queued


def _load_per_core() -> float:
    try:
        cores = len(os.sched_getaffinity(0))  # type: ignore[attr-defined]
    except (AttributeError, OSError):  # pragma: no cover - macOS, Windows
        cores = os.cpu_count() or 1
    try:
        return os.getloadavg()[0] / max(cores, 1)
    except (AttributeError, OSError):  # pragma: no cover - Windows
        return 0.0


_ACTIVE: dict[int, _Deadline] = {}  # thread id -> the time limit running in that thread


def _in_learner_code(frame: Any) -> bool:
    """Whether ``frame`` (where an interrupt would land: for a thread blocked in a C call such
    as ``time.sleep``, the Python frame that made the call) is the learner's own code."""
    return frame is not None and learner_code(frame.f_code.co_filename)


def _rearm() -> None:
    state = _ACTIVE.get(threading.get_ident())
    if state is not None:
        state.arm(sys._getframe(1))


def _tracer(frame: Any, event: str, arg: Any) -> Any:
    """Once a time limit has fired (or the learner pressed Interrupt): raise again at every line
    of the learner's code, so an ``except: pass`` raises from inside its own handler."""
    state = _ACTIVE.get(threading.get_ident())
    if state is None or state.escalate is None or not learner_code(frame.f_code.co_filename):
        return None
    if event == "line" and not importing(frame):
        raise state.escalate()
    return _tracer


class _Deadline:
    """Shared state of one time limit.

    The limit counts the CPU time of the thread running the block (so a busy machine, which
    slows the code down, does not make a right answer fail) and, as a backstop for code that
    sleeps or waits, a wall-time backstop. When the interrupt would land in the learner's own
    code (a ``time.sleep`` loop) and the thread has slept (neither run nor waited for a CPU,
    known from Linux's schedstat) for ``seconds`` x :data:`SLEPT`, it is ``seconds`` x
    :data:`IDLE_MARGIN` of wall time. Otherwise (a thread waiting in a library for work done
    elsewhere, such as DataLoader workers, which a busy machine slows down; or no schedstat)
    it is ``seconds`` x max(:data:`BACKSTOP`, :data:`LOAD_MARGIN` x the load average per core)
    of wall time less the time the thread spent waiting for a CPU.
    Once the deadline has passed the timeout is final: ``fired`` stays set even if the
    learner's code catches :class:`CheckTimeout`, the interrupt repeats every
    :data:`REPEAT_S`, and it escalates (see :func:`time_limit`)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.active = True
        self.fired = False
        self.interrupted = False
        self.escalate: type[BaseException] | None = None  # what the tracer raises, once armed
        self.deferred = 0.0  # waited for an import to finish: given back once, after the deadline
        self.waited = 0.0  # waited for the code to leave logging: a moment, not given back
        self.extended = False
        self.extra = 0.0  # the import time given back
        self.thread = threading.get_ident()
        self.entry: Any = None  # the frame that entered the block; escalation stays below it
        self.previous_trace: Any = None
        self.armed = False
        self.cpu = _cpu_clock()
        self.cpu0 = self.cpu()
        self.queued = _queue_clock()
        self.queued0 = self.queued() if self.queued else 0.0
        self.wall0 = _wall()

    def left(self, frame: Any = None) -> float:
        """Seconds (of CPU time, or of a wall-time backstop) until the deadline; <= 0: due.
        ``frame`` is where the interrupt would land: in the learner's own code the tighter
        backstop applies (see :class:`_Deadline`)."""
        used = self.cpu() - self.cpu0
        cpu_left = self.seconds + self.extra - used
        wall = _wall() - self.wall0
        own = wall  # wall time less the time spent waiting for a CPU
        if self.queued is not None:
            with contextlib.suppress(OSError, ValueError, IndexError):
                own -= self.queued() - self.queued0  # waiting for a CPU is not sleeping
        backstop = self.seconds * max(BACKSTOP, LOAD_MARGIN * _load_per_core())
        left = min(cpu_left, backstop + self.extra - own)
        if self.queued is not None:  # where a busy machine's run-queue wait is known (Linux)
            # wall time, once the thread has also slept (neither run nor waited for a CPU) for
            # a part of the limit: a busy machine stretches a sleep loop's own time, not its wall
            slept = own - used
            idle_left = max(self.seconds * IDLE_MARGIN + self.extra - wall, self.seconds * SLEPT - slept)
            if idle_left <= 0 and not _in_learner_code(frame):
                idle_left = LOOK_S  # waiting in a library (for DataLoader workers, say): look again
            left = min(left, idle_left)
        return left

    def wait(self, frame: Any) -> bool:
        """Whether an interrupt due at ``frame`` must wait :data:`DEFER_S` (counted here)."""
        if not must_wait(frame) or self.deferred + self.waited >= MAX_DEFER_S:
            return False
        if importing(frame):
            self.deferred += DEFER_S
        else:
            self.waited += DEFER_S
        return True

    def due(self, frame: Any) -> float:
        """0 when the interrupt is due now at ``frame``, else how long to wait before looking
        again (deadline not reached, an import or logging to wait for, import time given back)."""
        if not self.fired:
            left = self.left(frame)
            if left > 0:
                return left
        if self.wait(frame):
            return DEFER_S
        if self.deferred and not self.extended:
            # the deadline passed during an import: give the import's time back, once
            self.extended = True
            self.extra = min(self.deferred, MAX_DEFER_S)
            return max(self.left(frame), DEFER_S)
        return 0.0

    def arm(self, frame: Any) -> None:
        """In the block's own thread, after the deadline (or an interrupt): trace the learner's
        frames between ``frame`` and the block's entry, and every learner call after."""
        if not self.active or self.escalate is None or threading.get_ident() != self.thread:
            return
        if not self.armed:
            self.armed = True
            self.previous_trace = sys.gettrace()
        sys.settrace(_tracer)
        frames = []
        while frame is not None and frame is not self.entry:
            frames.append(frame)
            frame = frame.f_back
        if frame is None:  # not below the block's entry (cannot happen): trace new calls only
            return
        for f in frames:
            if learner_code(f.f_code.co_filename):
                f.f_trace = _tracer
                f.f_trace_lines = True


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`CheckTimeout` in the block once it has used ``seconds`` of CPU time.

    The CPU time counted is the calling thread's (the process's where a thread has no clock of
    its own), so a right answer on a machine slowed down by other work still passes: CPU-bound
    code ends after ``seconds`` of CPU time, which takes longer in wall time when the thread
    gets only part of a core. Code that sleeps or waits uses little CPU: a wall-time backstop
    stops it. On Linux the backstop does not count the time the thread spent runnable but
    waiting for a CPU (``/proc``'s schedstat), so a sudden load spike, which the load average
    shows only a minute later, cannot make CPU-bound code hit it. There the backstop is
    ``seconds`` x :data:`IDLE_MARGIN` of wall time when the interrupt would land in the
    learner's own code (a ``time.sleep`` retry loop, a call that blocks) and the thread has
    slept for ``seconds`` x :data:`SLEPT`; while the thread waits inside a library (for
    DataLoader workers, which a busy machine slows down, or a queue) it is ``seconds`` x
    max(:data:`BACKSTOP`, :data:`LOAD_MARGIN` x the 1-minute load average per core), less the
    time spent waiting for a CPU (where the interrupt would land is looked at again every
    :data:`LOOK_S`). Without schedstat only the second applies.

    In the main thread on POSIX (a Jupyter kernel, pytest) a ``SIGALRM`` timer looks at the
    clocks and raises; elsewhere a watchdog thread injects the exception into the calling
    thread. Both interrupt Python bytecode; a single long-running C call finishes before the
    exception lands (``time.sleep`` is the exception: a signal ends it early).

    The interrupt is never delivered while an import is in progress (it is deferred until the
    import has finished, and the time spent waiting is given back once), so a slow first
    import of ``torch._dynamo`` or ``sympy`` cannot leave a half-imported module behind; nor
    while the code is inside :mod:`logging` (see :data:`_LOCK_HOLDERS`).

    A timeout that the block's code swallows still ends the block with :class:`CheckTimeout`,
    and it escalates: the interrupt repeats every :data:`REPEAT_S`, and a trace function raises
    it again at every line of the learner's code (not the standard library's, an installed
    package's or the course's, whose ``finally`` and ``__exit__`` code runs whole), so a bare
    ``except: pass`` in a retry loop raises it again from inside its handler and the block ends
    (in a tenth of a second or so: swallowing adds nothing measurable to the limits above).
    The trace function in place before (a debugger's) is restored when the block ends. In the
    main thread, Interrupt Kernel (``SIGINT``) during the block escalates the same way with
    :class:`CheckInterrupted` (a ``KeyboardInterrupt``), and the block ends with
    ``KeyboardInterrupt``. In another thread the escalation is armed when the injected exception
    is created or dropped in that thread (Python 3.10 and 3.11 offer no way to set another
    thread's trace function).
    """
    if seconds <= 0:
        yield
        return
    use_signal = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    state = _Deadline(seconds)
    caller = sys._getframe(0).f_back  # contextlib's __enter__
    state.entry = caller.f_back if caller is not None else None
    tid = threading.get_ident()
    outer = _ACTIVE.get(tid)
    _ACTIVE[tid] = state
    try:
        if use_signal:
            with _signal_limit(state):
                yield
        else:
            with _watchdog_limit(state):
                yield
    finally:
        state.active = False
        if outer is not None:
            _ACTIVE[tid] = outer
        else:
            _ACTIVE.pop(tid, None)
        if state.armed:
            sys.settrace(state.previous_trace)


def _verdict(state: _Deadline) -> BaseException | None:
    if state.interrupted:
        return KeyboardInterrupt()
    if state.fired:
        return CheckTimeout()
    return None


@contextlib.contextmanager
def _signal_limit(state: _Deadline) -> Iterator[None]:
    def _tick(signum: int, frame: Any) -> None:
        if not state.active:
            return
        wait = state.due(frame)
        if wait > 0:
            signal.setitimer(signal.ITIMER_REAL, wait, REPEAT_S)
            return
        if state.escalate is None:
            state.fired = True
            state.escalate = CheckTimeout
        # The alarm repeats: an exception raised where Python swallows it (a weakref
        # callback, a __del__) would otherwise leave an endless loop running forever.
        signal.setitimer(signal.ITIMER_REAL, REPEAT_S, REPEAT_S)
        raise state.escalate()  # creating it arms the tracer (_Escalating)

    def _interrupt(signum: int, frame: Any) -> None:
        if state.active:
            state.interrupted = True
            state.escalate = CheckInterrupted
            signal.setitimer(signal.ITIMER_REAL, REPEAT_S, REPEAT_S)
        raise CheckInterrupted()

    previous = signal.signal(signal.SIGALRM, _tick)
    # Interrupt Kernel escalates too, where it would raise KeyboardInterrupt anyway
    previous_int = signal.getsignal(signal.SIGINT)
    if previous_int is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)
    signal.setitimer(signal.ITIMER_REAL, state.seconds, REPEAT_S)
    try:
        yield
    except BaseException:
        verdict = _verdict(state)  # whatever the code made of the timeout, the verdict stands
        if verdict is not None:
            raise verdict from None
        raise
    finally:
        state.active = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if previous_int is signal.default_int_handler:
            signal.signal(signal.SIGINT, previous_int)
    verdict = _verdict(state)
    if verdict is not None:  # the learner's code caught the timeout and returned
        raise verdict


@contextlib.contextmanager
def _watchdog_limit(state: _Deadline) -> Iterator[None]:
    target = state.thread
    done = threading.Event()

    def _watchdog() -> None:
        wait = state.seconds
        while not done.wait(wait):  # repeat until the block has ended (see above)
            wait = state.due(sys._current_frames().get(target))
            if wait > 0:
                continue
            state.fired = True
            state.escalate = CheckTimeout
            _async_exc(target, CheckTimeout)
            wait = REPEAT_S

    watchdog = threading.Thread(target=_watchdog, daemon=True)
    watchdog.start()
    try:
        yield
    except BaseException:
        if state.fired:
            raise CheckTimeout() from None
        raise
    finally:
        done.set()
        try:
            watchdog.join()
        except CheckTimeout:  # a scheduled timeout landed while waiting: it is final anyway
            watchdog.join()
        state.active = False
        if state.fired:  # the exception may still be pending if the block just ended
            _drain_pending_timeout()
    if state.fired:
        raise CheckTimeout()


def unpacks_larger(data: bytes) -> bool:
    """``data`` is a zip archive (``torch.save``'s format) that unpacks to more than its own size:
    a compressed entry (``torch.load`` reads deflated entries: ~1000x for zeros) or sizes that do
    not add up. ``torch.save`` never compresses; code that loads bytes a learner chose outside the
    sandbox (the instructor's judge) refuses these unread. Not a zip archive: ``False``."""
    import io
    import zipfile

    if not zipfile.is_zipfile(io.BytesIO(data)):
        return False
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            infos = z.infolist()
    except Exception:  # noqa: BLE001 - a broken archive: not read either
        return True
    return not (all(i.compress_type == zipfile.ZIP_STORED and i.file_size == i.compress_size for i in infos)
                and sum(i.file_size for i in infos) <= len(data))
