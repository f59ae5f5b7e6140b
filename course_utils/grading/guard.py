"""Isolation for running learner code inside a check.

:func:`preserved_state` restores everything a check could disturb in the learner's session
(torch / Python / NumPy RNG state, grad mode, default dtype, module train/eval flags), and
:func:`time_limit` stops learner code that runs too long (an endless loop) with
:class:`CheckTimeout`, which derives from ``BaseException`` so ``except Exception`` in the
learner's code cannot swallow it.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import random
import signal
import sys
import threading
from typing import Any, Iterable, Iterator

import torch


REPEAT_S = 0.1  # seconds between repeated timeout signals


class CheckTimeout(BaseException):
    """The learner's code ran past the check's time limit."""


def _modules_in(objects: Iterable[Any]) -> list[torch.nn.Module]:
    found: list[torch.nn.Module] = []
    for obj in objects:
        if isinstance(obj, torch.nn.Module):
            found.extend(obj.modules())
    return found


@contextlib.contextmanager
def preserved_state(*watch: Any) -> Iterator[None]:
    """Restore RNG states (CPU, and CUDA when in use), grad mode, default dtype, torch's
    thread count and the train/eval flags of any module in ``watch`` when the block ends,
    however it ends."""
    grad_enabled = torch.is_grad_enabled()
    default_dtype = torch.get_default_dtype()
    threads = torch.get_num_threads()
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


class _Deadline:
    """Shared state of one time limit: once the deadline has passed, the timeout is final.

    ``fired`` stays set even if the learner's code catches :class:`CheckTimeout` (a bare
    ``except:`` in a loop): the block then ends with a timeout however it ends, and the alarm
    repeats every :data:`REPEAT_S` until one lands outside the ``try`` (a loop's jump back)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.active = True
        self.fired = False
        self.deferred = 0.0  # waited for an import to finish: given back once, after the deadline
        self.waited = 0.0  # waited for the code to leave logging: a moment, not given back
        self.extended = False

    def wait(self, frame: Any) -> bool:
        """Whether an interrupt due at ``frame`` must wait :data:`DEFER_S` (counted here)."""
        if not must_wait(frame) or self.deferred + self.waited >= MAX_DEFER_S:
            return False
        if importing(frame):
            self.deferred += DEFER_S
        else:
            self.waited += DEFER_S
        return True


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`CheckTimeout` in the block if it runs longer than ``seconds``.

    In the main thread on POSIX (a Jupyter kernel, pytest) this uses ``SIGALRM``; elsewhere a
    watchdog thread injects the exception into the calling thread. Both interrupt Python
    bytecode; a single long-running C call finishes before the exception lands.

    The interrupt is never delivered while an import is in progress (it is deferred until the
    import has finished, and the time spent waiting is given back once), so a slow first
    import of ``torch._dynamo`` or ``sympy`` cannot leave a half-imported module behind. A
    timeout that the block's code swallows still ends the block with :class:`CheckTimeout`.
    """
    if seconds <= 0:
        yield
        return
    use_signal = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    state = _Deadline(seconds)
    if use_signal:

        def _raise(signum: int, frame: Any) -> None:
            if not state.active:
                return
            if state.wait(frame):
                signal.setitimer(signal.ITIMER_REAL, DEFER_S, REPEAT_S)
                return
            if state.deferred and not state.extended:
                # the deadline passed during an import: give the import's time back, once
                state.extended = True
                signal.setitimer(signal.ITIMER_REAL, min(state.deferred, MAX_DEFER_S), REPEAT_S)
                return
            state.fired = True
            raise CheckTimeout()

        previous = signal.signal(signal.SIGALRM, _raise)
        # The alarm repeats: an exception raised where Python swallows it (a weakref
        # callback, a __del__) would otherwise leave an endless loop running forever.
        signal.setitimer(signal.ITIMER_REAL, seconds, REPEAT_S)
        try:
            yield
        except BaseException:
            if state.fired:  # whatever the code made of the timeout, the verdict is the timeout
                raise CheckTimeout() from None
            raise
        finally:
            state.active = False
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        if state.fired:  # the learner's code caught the timeout and returned
            raise CheckTimeout()
        return

    target = threading.get_ident()
    done = threading.Event()

    def _watchdog() -> None:
        wait = seconds
        while not done.wait(wait):  # repeat until the block has ended (see above)
            frame = sys._current_frames().get(target)
            if state.wait(frame):
                wait = DEFER_S
                continue
            if state.deferred and not state.extended:
                state.extended = True
                wait = min(state.deferred, MAX_DEFER_S)
                continue
            state.fired = True
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
