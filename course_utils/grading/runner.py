"""Run one exercise's checks against a learner's answer.

:func:`run_check` never raises (bar ``KeyboardInterrupt``, which the learner asked for): every
problem with the answer becomes a :class:`Result`. It runs fixed edge cases first (their
failures are reproducible without a seed), then ``n_random`` fresh random cases from a seed
drawn from the operating system (never from the learner's RNG, which is left untouched), then
the exercise's probes.
"""

from __future__ import annotations

import _thread
import contextlib
import copy
import fnmatch
import inspect
import io
import os
import random
import re
import sys
import threading
import traceback
import warnings
import zlib
from typing import Any, Iterator, NamedTuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .calls import GRAD_LEFT_OFF
from .compare import Problem, compare, describe
from .feedback import Result
from .guard import _LIBRARY_DIRS, CheckTimeout, preload, preserved_state, time_limit
from .unchanged import differs as _differs
from .spec import Case, Exercise, Incorrect, Mistake, Rand, fill

_SYSRAND = random.SystemRandom()
_HERE = __file__.rsplit("/", 2)[0]  # the course_utils/grading folder


# Imported before any clock starts: modules whose first import is slow and that answers use.
PRELOAD = ("numpy", "torch.nn.functional", "torch.optim", "torch.func", "torch.utils.data")
_WARM: set[str] = set()


def warm_up(ex: Exercise) -> None:
    """Once per exercise and session, untimed: import :data:`PRELOAD` and ``ex.preload``, then
    run ``ex.prepare`` and the reference on one case, so the lazy imports it triggers
    (``torch._dynamo`` and ``sympy`` on a first ``optimizer.step()``, seconds on a busy machine)
    and the fixtures it reads happen now rather than under a check's time limit. Never raises;
    leaves RNG, grad mode and modes as they were."""
    if ex.id in _WARM:
        return
    _WARM.add(ex.id)
    preload(PRELOAD + tuple(ex.preload))
    try:
        with preserved_state(), warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            if ex.prepare is not None:
                ex.prepare()
            case = ex.edge_cases[0] if ex.edge_cases else (ex.cases(Rand(1)) if ex.cases else None)
            if _OperatorWatch.wanted(ex):  # a dispatch mode's first use imports torch._dynamo: 2 s
                with _OperatorWatch(_RuleWatch(ex)):
                    torch.zeros(1).add(1)
            if case is not None:
                _call(ex, ex.reference, copy.deepcopy(case))
    except Exception:  # noqa: BLE001 - only a warm-up; the check reports real problems
        pass


class _NotAttempted(Exception):
    pass


class _Fail(Exception):
    """A failed check. ``generic`` failures come from the framework's own checks and may be
    reworded by a declared mistake of the same id; an exercise's ``Incorrect`` never is."""

    def __init__(self, mistake: str, message: str, details: list[str] | None = None, generic: bool = True):
        super().__init__(message)
        self.mistake = mistake
        self.message = message
        self.details = details or []
        self.generic = generic


def new_seed() -> int:
    return _SYSRAND.randrange(1, 2**31 - 1)


def core_seeds(ex: Exercise, n: int) -> list[int]:
    """Seeds of the core random cases: fixed per exercise, never chosen by the learner."""
    base = 1 + (zlib.crc32(ex.id.encode()) % 1_000_000) * 1000
    return [base + i for i in range(n)]


def _arg_names(ex: Exercise, n: int) -> list[str]:
    if ex.arg_names is not None:
        names = list(ex.arg_names)
        return [names[i] if i < len(names) else f"argument {i + 1}" for i in range(n)]
    try:
        params = list(inspect.signature(ex.reference).parameters)
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"argument {i + 1}" for i in range(n)]


def _call(ex: Exercise, answer: Any, case: Case, watch: Any = None) -> Any:
    """``run`` (or the answer itself) on the case, under ``watch`` (the rule's, :func:`rule_watch`:
    it sees the answer's calls, never ``finish``'s, which may use the reference), then ``finish``."""
    if ex.supply is not None and getattr(case, "supplied", None) is None:
        case.supplied = ex.supply(case)  # type: ignore[attr-defined]
    with watch if watch is not None else contextlib.nullcontext():
        out = ex.run(answer, case) if ex.run is not None else answer(*case.args, **case.kwargs)
    return ex.finish(out, case) if ex.finish is not None else out


def _learner_frame(exc: BaseException) -> str:
    """The last traceback line that is the learner's code, not the course's or torch's."""
    frames = traceback.extract_tb(exc.__traceback__)
    for fr in reversed(frames):
        if "/course_utils/" not in fr.filename and "/site-packages/" not in fr.filename:
            code = f": `{fr.line.strip()}`" if fr.line else ""
            return f" (in `{fr.name}`, line {fr.lineno}{code})"
    return ""


def _raised_by_learner(exc: BaseException) -> bool:
    """True when the innermost frame is outside installed packages (torch raises
    NotImplementedError for missing kernels; that is an error, not a stub)."""
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and "/site-packages/" not in frames[-1].filename and "/course_utils/" not in frames[-1].filename


def _exception_failure(exc: Exception, where: str) -> _Fail:
    first_line = str(exc).strip().splitlines()[0].rstrip(".") if str(exc).strip() else ""
    msg = f"Your code raised {type(exc).__name__}{': ' + first_line if first_line else ''}{_learner_frame(exc)}."
    return _Fail("exception", msg, [where] if where else [])


def _tensors(obj: Any) -> Iterator[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors(o)


def _check_side_effects(ex: Exercise, pristine: tuple, used: tuple, got: Any, by_reference: tuple | None = None) -> None:
    """``pristine`` and ``used`` are ``(args, kwargs)`` before and after the learner's call;
    ``by_reference`` the same inputs after the reference's call. An input the reference leaves
    as it was must stay as it was (tensors incl. ``.grad``, NumPy arrays, lists, dicts, modules'
    parameters, buffers and modes)."""
    (args_before, kwargs_before), (args_after, kwargs_after) = pristine, used
    names = _arg_names(ex, len(args_before)) + list(kwargs_before)
    befores = list(args_before) + list(kwargs_before.values())
    afters = list(args_after) + [kwargs_after[k] for k in kwargs_before]
    refs = (list(by_reference[0]) + [by_reference[1][k] for k in kwargs_before]) if by_reference else [None] * len(befores)
    if ex.compare.mutation:
        for name, before, after, ref in zip(names, befores, afters, refs):
            if by_reference is not None and _differs(before, ref):
                continue  # the task changes this input: the exercise checks how
            if _differs(before, after):
                raise _Fail(
                    "mutated_input",
                    f"Your code changed its input `{name}` (an op ending in `_`, `+=`, `/=`, an indexed "
                    "assignment, `.append`, a `.grad` left behind, `requires_grad` switched, or a module's "
                    "parameters, train/eval mode or a setting such as a loss's `reduction`). Compute new values and "
                    "leave the input as it was.",
                )
    if ex.compare.views:
        for name, arg in zip(names, afters):
            for inp in _tensors(arg):
                for out in _tensors(got):
                    if inp.numel() and out.numel() and out.untyped_storage().data_ptr() == inp.untyped_storage().data_ptr():
                        raise _Fail(
                            "shares_storage",
                            f"Your result shares memory with the input `{name}` (a view), so "
                            "changing one changes the other. Return a new tensor (`.clone()`).",
                        )


def _rng_states() -> tuple:
    import numpy as np

    return torch.get_rng_state(), random.getstate(), np.random.get_state()[1].copy(), np.random.get_state()[2]


def _rng_changed(a: tuple, b: tuple) -> bool:
    return not torch.equal(a[0], b[0]) or a[1] != b[1] or not (a[2] == b[2]).all() or a[3] != b[3]


def _check_grads(ex: Exercise, case_ref: Case, expected: Any, case_got: Case, got: Any, rand: Rand) -> None:
    ref_inputs = [t for t in _tensors(case_ref.args) if t.requires_grad]
    got_inputs = [t for t in _tensors(case_got.args) if t.requires_grad]
    outs_e = [t for t in _tensors(expected) if t.requires_grad]
    outs_g = [t for t in _tensors(got) if t.requires_grad]
    if not ref_inputs or not outs_e:
        return
    if len(outs_g) != len(outs_e):
        raise _Fail("graph_cut", "Your result is not connected to the inputs' autograd graph.")
    upstream = [torch.randn(o.shape, generator=rand.torch, dtype=o.dtype) for o in outs_e]
    grads_e = torch.autograd.grad(outs_e, ref_inputs, upstream, allow_unused=True)
    grads_g = torch.autograd.grad(outs_g, got_inputs, upstream, allow_unused=True)
    names = _arg_names(ex, len(ref_inputs))
    for name, ge, gg in zip(names, grads_e, grads_g):
        if ge is None:
            continue
        if gg is None:
            raise _Fail("graph_cut", f"No gradient reaches `{name}`: your result does not depend on it through autograd.")
        p = compare(gg, ge, ex.compare, f"The gradient with respect to `{name}`")
        if p:
            raise _Fail("wrong_grad", p.message)


def _run_examples(ex: Exercise, case: Case) -> Iterator[tuple[Mistake, Any, Exception | None]]:
    """Each output-matched mistake's example run on ``case``: ``(mistake, output, error)``."""
    for m in ex.mistakes:
        if not m.match_output or m.example is None:
            continue
        out: Any = None
        error: Exception | None = None
        try:
            with warnings.catch_warnings():  # (never yield inside: it would hold the filters)
                warnings.simplefilter("ignore")
                out = _call(ex, m.example, copy.deepcopy(case))
        except Incorrect:
            continue
        except Exception as exc:  # noqa: BLE001 - an example's error is information
            error = exc
        yield m, out, error


def _name_mistake(ex: Exercise, case: Case, got: Any, expected: Any, problem: Problem,
                  answer: Any = None, rand: Rand | None = None) -> tuple[str, str]:
    """Name a known mistake only on evidence specific to it: the learner's output matches the
    mistake's example output on this case, that output differs from the reference's, no
    example of another mistake gives the same output, and (when the exercise has a case
    generator) the learner's output matches the example's on a second case too. Otherwise the
    generic ``problem`` (what differs, on which input) is reported."""
    outs = list(_run_examples(ex, case))
    matched = [
        m for m, out, error in outs
        if error is None and compare(got, out, ex.compare) is None and compare(out, expected, ex.compare) is not None
    ]
    if answer is not None and rand is not None and matched:
        # the other cases confirm the match, and separate mistakes that agree on this one
        matched = [m for m in matched if _confirmed(ex, m, answer, rand, case)]
    if len({m.id for m in matched}) != 1:
        return problem.mistake, problem.message
    return matched[0].id, matched[0].message


def _confirmed(ex: Exercise, m: Mistake, answer: Any, rand: Rand, failing: Case | None = None) -> bool:
    """The answer behaves like ``m.example`` on the other fixed cases and one more random case
    (a case where the example raises is no evidence either way)."""
    others = [c for c in ex.edge_cases if c is not failing]
    if ex.cases is not None:
        others.append(ex.cases(Rand(rand.seed + 7919)))
    for second in others:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                out = _call(ex, m.example, copy.deepcopy(second))
        except Exception:  # noqa: BLE001 - no evidence from this case
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = _call(ex, answer, copy.deepcopy(second))
        except Exception:  # noqa: BLE001 - the example ran, the answer did not: another mistake
            return False
        if compare(got, out, ex.compare) is not None:
            return False
    return True


def _name_exception(ex: Exercise, case: Case, exc: Exception) -> _Fail | None:
    """A known mistake whose example raises the same error (type and message) on this case."""
    same = [m for m, _, error in _run_examples(ex, case)
            if error is not None and type(error) is type(exc) and str(error) == str(exc)]
    if len({m.id for m in same}) != 1:  # none, or ambiguous: not evidence for one mistake
        return None
    said = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return _Fail(same[0].id, f"{same[0].message} (PyTorch said: {type(exc).__name__}: {said})")


def _describe_case(ex: Exercise, case: Case, seed: int | None) -> str:
    if seed is None:
        label = f"On the fixed case “{case.label}”" if case.label else "On a fixed case"
    else:
        label = f"On a random case (seed {seed})"
    names = _arg_names(ex, len(case.args))
    if case.show_inputs:
        shown = ", ".join(f"{n}={a!r}" for n, a in zip(names, case.args))
    else:
        shown = ", ".join(f"{n}: {describe(a)}" for n, a in zip(names, case.args) if not callable(a))
    return f"{label}{' with ' + shown if shown else ''}."


def _a(answer: Any) -> str:
    """``"a float"``, ``"an int"``: the article that goes with the type's name."""
    name = type(answer).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _kind_problem(ex: Exercise, answer: Any) -> Result | None:
    def bad(mistake: str, msg: str) -> Result:
        return Result(ex.id, "incorrect", msg, mistake)

    if answer is None:
        return bad("answer_none", f"You passed `None` to check. Pass your {'answer' if ex.kind == 'any' else ex.kind} "
                   f"itself, e.g. `check({ex.name})`.")
    if answer is Ellipsis:
        return Result(ex.id, "not_attempted", "Replace the `...` with your answer, then check again.")
    if ex.kind == "function":
        if isinstance(answer, type):
            return bad("wrong_type", "You passed a class; this exercise wants a function.")
        if not callable(answer):
            return bad(
                "not_callable",
                f"You passed {_a(answer)}, not a function. Pass the function itself "
                f"(`check({ex.name})`), not the result of calling it (`check({ex.name}(...))`).",
            )
    elif ex.kind == "class":
        if isinstance(answer, torch.nn.Module):
            return bad("wrong_type", "You passed an instance; pass the class itself (without calling it).")
        if not isinstance(answer, type):
            return bad("wrong_type", f"You passed {_a(answer)}; this exercise wants a class.")
    elif ex.kind == "module" and not isinstance(answer, torch.nn.Module):
        return bad("wrong_type", f"You passed {_a(answer)}; this exercise wants an `nn.Module` instance.")
    return None


def run_check(ex: Exercise, answer: Any, seed: int | None = None, n_random: int | None = None) -> Result:
    """Check ``answer`` against exercise ``ex``. Never raises."""
    try:
        return _run_check(ex, answer, seed, n_random)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - the contract is: never raise
        return Result(
            ex.id, "incorrect",
            f"Checking stopped unexpectedly ({type(exc).__name__}: {exc}). If your code is right, "
            "this is a bug in the course: please report it.",
            "checker_error",
        )


class _Where:
    """The case being checked, for the message when something goes wrong in it."""

    text = ""


def _plan(ex: Exercise, seed: int, n_random: int) -> list[tuple[Case | None, int | None]]:
    """Fixed edge cases, then "core" random cases from seeds the learner does not choose (so
    retrying seeds cannot turn a failing answer into a passing one), then the rest from ``seed``
    (fresh each check; ``seed=`` reproduces it)."""
    plan: list[tuple[Case | None, int | None]] = [(c, None) for c in ex.edge_cases]
    if ex.cases is not None:
        core = core_seeds(ex, min(n_random, (ex.n_random + 1) // 2))
        plan += [(None, s) for s in core]
        plan += [(None, seed + i) for i in range(n_random - len(core))]
    return plan


def _run_cases(ex: Exercise, answer: Any, seed: int, n_random: int, where: _Where) -> int:
    """Every case, then every behaviour test; returns how many ran. Raises what goes wrong."""
    n_cases = 0
    for fixed, case_seed in _plan(ex, seed, n_random):
        torch.set_grad_enabled(True)  # a learner's set_grad_enabled(False) ends with its case
        rand = Rand(case_seed if case_seed is not None else seed)
        case = fixed if fixed is not None else ex.cases(rand)  # type: ignore[misc]
        where.text = _describe_case(ex, case, case_seed)
        _check_one(ex, answer, case, rand)
        n_cases += 1
    for j, probe in enumerate(ex.probes):
        torch.set_grad_enabled(True)
        where.text = f"In a behaviour test (seed {seed})."
        ran = probe(answer, Rand(core_seeds(ex, 1)[0] + 10_000 + j))
        if ex.finish_probe is not None:
            ex.finish_probe(j, ran)
        n_cases += 1
    return n_cases


def _verdict_of(ex: Exercise, exc: BaseException, seed: int, where: str, printed: io.StringIO) -> Result:
    """The result for what stopped a check: not attempted, a named mistake, or the learner's error."""
    if isinstance(exc, _NotAttempted):
        return _not_attempted(ex)
    if isinstance(exc, NotImplementedError) and _raised_by_learner(exc):
        return _not_attempted(ex)  # a stub reached from a probe or a custom run
    if isinstance(exc, CheckTimeout):
        fail = _Fail("timeout", f"Your code did not finish within {ex.timeout:g} s, so it was stopped. Look for "
                     "a loop that never ends (a `while` whose condition stays true, a counter never "
                     "updated).", [where])
    elif isinstance(exc, Incorrect):
        fail = _Fail(exc.mistake, said(ex, exc), [where], generic=False)
    elif isinstance(exc, _Fail):
        fail = exc
        fail.details.insert(0, where)
    elif isinstance(exc, SystemExit):
        fail = _Fail("exception", "Your code called `exit()`/`sys.exit()`.")
    else:
        assert isinstance(exc, Exception)
        fail = _exception_failure(exc, where)
    return _failed(ex, seed, fail, printed)


def _passed(ex: Exercise, seed: int, n_random: int, n_cases: int, caught: list[warnings.WarningMessage]) -> Result:
    extra = []
    learner_warnings = [w for w in caught if "/course_utils/" not in (w.filename or "")]
    if learner_warnings:
        w = learner_warnings[0]
        extra.append(f"Note: your code emitted a {w.category.__name__}: {str(w.message).splitlines()[0]}")
    parts = []
    if ex.edge_cases:
        parts.append(f"{len(ex.edge_cases)} fixed case{'s' * (len(ex.edge_cases) != 1)}")
    if ex.cases is not None and n_random:
        parts.append(f"{n_random} random case{'s' * (n_random != 1)}")
    if ex.probes:
        parts.append(f"{len(ex.probes)} behaviour test{'s' * (len(ex.probes) != 1)}")
    summary = " and ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts)
    return Result(ex.id, "correct", f"`{ex.name}` passed {summary}.", None, extra, seed, n_cases)


def _run_check(ex: Exercise, answer: Any, seed: int | None, n_random: int | None) -> Result:
    bad_kind = _kind_problem(ex, answer)
    if bad_kind is not None:
        return bad_kind
    warm_up(ex)
    seed = new_seed() if seed is None else seed
    n_random = ex.n_random if n_random is None else n_random
    printed = io.StringIO()
    where = _Where()
    with preserved_state(answer), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            # Checks run with autograd on, whatever context the learner called them from
            # (inside `torch.no_grad()`, say), and on one thread: on a busy 2-core machine a
            # second thread made tiny ops 10-50x slower. In float32 too: the cases are, and a
            # learner who set float64 as the default had right answers blamed for the mismatch
            # between a model made in the default dtype and the case's data (a review, 2026-11-29).
            # preserved_state restores all three.
            torch.set_num_threads(1)  # tiny tensors: a second thread only adds overhead
            torch.set_default_dtype(torch.float32)
            with time_limit(ex.timeout), contextlib.redirect_stdout(printed), \
                    torch.inference_mode(False), torch.enable_grad():
                n_cases = _run_cases(ex, answer, seed, n_random, where)
        except (Exception, CheckTimeout, SystemExit) as exc:  # noqa: BLE001 - a learner's exception is feedback
            return _verdict_of(ex, exc, seed, where.text, printed)
    return _passed(ex, seed, n_random, n_cases, caught)


def said(ex: Exercise, inc: Incorrect) -> str:
    """The words a learner reads for ``inc``: the message of the mistake the exercise declares
    under that id, its ``{fields}`` filled from the facts (an explicit message wins)."""
    if inc.message is not None:
        return inc.message
    for m in ex.mistakes:
        if m.id == inc.mistake:
            return fill(m.message, inc.facts)
    # a grader bug, not the learner's: tests/test_messages.py keeps every raised id declared
    return f"Your answer is not right yet ({inc.mistake.replace('_', ' ')})."


def _not_attempted(ex: Exercise) -> Result:
    return Result(
        ex.id, "not_attempted",
        "Your code still raises `NotImplementedError`: replace the `raise "
        "NotImplementedError` line with your solution, run that cell, then check again.",
    )


def _failed(ex: Exercise, seed: int, fail: _Fail, printed: io.StringIO) -> Result:
    """Build the incorrect Result. An exercise may declare a mistake with a generic id
    (``mutated_input``, ``graph_cut``, ``wrong_dtype``...) to replace the generic message
    with one written for that exercise."""
    for m in ex.mistakes:
        if fail.generic and m.id == fail.mistake and not m.match_output:
            fail.message = m.message
    details = [d for d in fail.details if d]
    out = printed.getvalue().strip()
    if out:
        lines = out.splitlines()
        shown = "\n".join(lines[:5]) + ("\n…" if len(lines) > 5 else "")
        details.append(f"Your code printed:\n{shown}")
    if any("random case" in d or "behaviour test" in d for d in details):
        details.append(f"Reproduce this exact check with `check({ex.name}, seed={seed})`.")
    return Result(ex.id, "incorrect", fail.message, fail.mistake, details, seed)


def _qualname(func: Any) -> str:
    try:
        name = torch.overrides.resolve_name(func)
    except Exception:  # noqa: BLE001
        name = None
    return name or f"{getattr(func, '__module__', '')}.{getattr(func, '__qualname__', repr(func))}"


def _forbidden_names(ex: Exercise) -> set[str]:
    out = set()
    for n in ex.forbid:
        if n.startswith("re:"):
            continue
        out.add(n)
        if n.startswith("Tensor."):
            out.add("torch." + n)
    return out


def _op_stem(name: str) -> str:
    """``torch.nn.functional.scaled_dot_product_attention`` -> ``scaled_dot_product_attention``;
    ``torch.nn.Linear`` -> ``linear``; ``aten._softmax.default`` -> ``softmax``."""
    parts = name.split(".")
    if parts[0] in ("aten", "prims") and len(parts) > 1:
        return parts[1].strip("_").lower()
    return parts[-1].strip("_").lower()


def _forbidden_op(func: Any, ex: Exercise) -> str | None:
    """The forbidden function an operator called through ``torch.ops`` (``torch.ops.aten.linear``,
    ``torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default``) stands for: the same
    computation reached by another door. An aten op counts when its name, without leading
    underscores and overload, starts with a forbidden function's name, or matches a forbidden
    ``aten.`` name (a glob: ``aten._scaled_dot_product_*``)."""
    if not isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return None
    full = ".".join(str(func).split(".")[:2])  # aten._softmax.default -> aten._softmax
    op = _op_stem(full)
    for name in ex.forbid:
        if name.startswith("re:"):
            continue
        if name.startswith("aten.") and fnmatch.fnmatchcase(full, name):  # declared aten names, globs allowed
            return f"torch.ops.{full}"
        stem = _op_stem(name)
        if not name.startswith("aten.") and len(stem) >= 3 and op.startswith(stem):
            return f"{name} (as torch.ops.{full})"
    return None


class _Codes(NamedTuple):
    """The forbidden functions written in Python, as a profile hook looks them up on every call:
    ``by_id`` ``{id(code object): name}`` (hashing a code object hashes its bytecode, so never on
    the hook's path), ``by_place`` ``{first line: {(file, name): name}}`` (a copy of one,
    ``types.FunctionType(f.__code__.replace(), ...)``, is another code object from the same
    place), and ``kept``, the code objects, alive here so that their ids stay theirs."""

    by_id: dict[int, str]
    by_place: dict[int, dict[tuple[str, str], str]]
    kept: list[Any]


_CODES: dict[tuple[str, tuple[str, ...]], _Codes] = {}


def _python_codes(ex: Exercise) -> _Codes:
    """The forbidden functions written in Python that no ``TorchFunctionMode`` sees
    (``torch.nn.utils.clip_grad_norm_``), and the ``__init__`` of the forbidden classes
    (``nn.Linear``, ``DataLoader``: built however they are reached, as ``nn.Linear(...)`` or
    ``torch.utils.data.DataLoader(...)``): a profile hook watches for them. Worked out once per
    exercise and rule."""
    key = (ex.id, tuple(ex.forbid))
    if key in _CODES:
        return _CODES[key]
    found = _Codes({}, {}, [])
    for name in ex.forbid:
        obj = None if name.startswith(("re:", "aten.")) else _resolve(name)
        if inspect.isclass(obj):
            obj = vars(obj).get("__init__")
        if obj is None:
            continue
        inner = inspect.unwrap(obj)  # decorators share one wrapper's code (torch's _no_grad): the function's own
        if inspect.isfunction(inner):
            code, short = inner.__code__, name.rpartition(".")[2]
            found.by_id[id(code)] = short
            found.by_place.setdefault(code.co_firstlineno, {})[(code.co_filename, code.co_name)] = short
            found.kept.append(code)
    _CODES[key] = found
    return found


# What a rule reports when the answer hid its calls from the watch: torch functions switched off (or
# this mode popped off the stack), the profile hook removed, or work handed to another thread (modes
# and profile hooks are per thread)
_EVADED = ("torch functions switched off (torch._C.DisableTorchFunction, a popped mode, or a tensor subclass's "
           "__torch_function__)")
_HIDING = {sys.setprofile: "sys.setprofile", threading.setprofile: "threading.setprofile",
           _thread.start_new_thread: "a thread (threading, concurrent.futures)"}
# code that is not the learner's: the standard library, site-packages, the course (and <...> files: _learners)
_COURSE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_NOT_LEARNER = _LIBRARY_DIRS
_all_disabled = torch._C._is_torch_function_all_disabled  # looked up once: the profile hook asks on every call
_stack_len = torch._C._len_torch_function_stack


_VERDICTS: dict[tuple[str, str, tuple[str, ...]], dict[Any, str | None]] = {}
"""The rule watches' verdicts, per exercise and rule, kept across checks: working one out costs a
few Python calls (and a ``warnings.catch_warnings``), each seen by the profile hook."""


class _RuleWatch(torch.overrides.TorchFunctionMode):
    """Records the first forbidden function the learner's code calls: a torch function by its
    public name, through ``torch.ops`` or by a ``re:`` pattern on its name (calls made inside
    torch's own implementation are not seen: the mode is off while one runs), and a forbidden
    function or class written in Python however it was reached (a profile hook). It records and
    lets the call go on, so a learner's ``try/except`` around it hides nothing.

    The profile hook also sees the answer hide its calls from the mode: the learner's code calling
    with torch functions switched off (``torch._C.DisableTorchFunction``, this mode popped off the
    stack, or inside a tensor subclass's ``__torch_function__``, which runs with the mode popped),
    removing the hook (``sys.setprofile``), or starting a thread (modes and hooks are per thread).
    Each counts as breaking the rule."""

    def __init__(self, ex: Exercise):
        super().__init__()
        self.ex = ex
        self.names = _forbidden_names(ex)
        self.patterns = [re.compile(n[3:]) for n in ex.forbid if n.startswith("re:")]
        codes = _python_codes(ex)
        self.codes, self.places = codes.by_id, codes.by_place
        self.used: str | None = None
        self.depth = 0
        self._previous: Any = None
        self._verdicts = _VERDICTS.setdefault(("fn", ex.id, tuple(ex.forbid)), {})
        self._low: _OperatorWatch | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        if self.used is None:
            try:  # one verdict per function and rule: checks call the same few thousands of times
                found = self._verdicts[func]
            except (KeyError, TypeError):
                found = self._verdict(func)
                with contextlib.suppress(TypeError):
                    self._verdicts[func] = found
            self.used = found
        return func(*args, **(kwargs or {}))

    def _verdict(self, func: Any) -> str | None:
        """The forbidden name ``func`` is, or ``None``."""
        name = _qualname(func)
        short = str(getattr(func, "__name__", "") or "")
        if name in self.names:
            return name
        if any(p.search(short) for p in self.patterns):
            return short
        return _forbidden_op(func, self.ex)

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        # called on every call and return while the answer runs: the common events leave first
        if event == "return" or event == "c_return" or self.used is not None:
            return
        if event == "call":
            codes = self.codes
            if codes:
                code = frame.f_code
                if id(code) in codes:
                    self.used = codes[id(code)]
                    return
                if code.co_firstlineno in self.places:  # a copy of a forbidden function's code?
                    found = self.places[code.co_firstlineno].get((code.co_filename, code.co_name))
                    if found:
                        self.used = found
                        return
        elif event == "c_call":
            if arg in _HIDING and not frame.f_code.co_filename.startswith(_COURSE):
                self.used = _HIDING[arg]
                return
        else:
            return
        code = frame.f_code  # (compared by identity: hashing a code object hashes its bytecode)
        if code is _HANDLER or code is _DISPATCH_HANDLER or not (_all_disabled() or _stack_len() < self.depth):
            return
        caller = frame if event == "c_call" else frame.f_back  # the frame making the call
        if caller is not None and _learners(caller):
            self.used = _EVADED  # torch's own code pops modes (handle_torch_function): only the learner's counts

    def __enter__(self) -> Any:
        out = super().__enter__()  # (torch pops the mode before it calls __torch_function__: _HANDLER is exempt)
        self.depth = torch._C._len_torch_function_stack()
        self._low = _OperatorWatch(self) if _OperatorWatch.wanted(self.ex) else None
        if self._low is not None:
            self._low.__enter__()
        self._previous = sys.getprofile()
        sys.setprofile(self._profile)
        return out

    def __exit__(self, *exc: Any) -> Any:
        sys.setprofile(self._previous)
        if self._low is not None:
            self._low.__exit__(*exc)
        return super().__exit__(*exc)


class _ScopedRuleWatch(_RuleWatch):
    """The rule inside one method of the answer's only (``Exercise.forbid_within``: a custom
    Function's ``backward``, which the check itself runs through ``torch.autograd.grad``). The
    profile hook watches the whole run: when the answer's method of that name starts, the mode
    is pushed (whatever stack torch left: the engine runs a backward inside the check's
    call) and the rule applies, until that frame returns; the check's own calls around it never
    count. Hiding from the hook (``sys.setprofile``, a thread) counts anywhere."""

    def __init__(self, ex: Exercise, answer: Any):
        super().__init__(ex)
        method = _ruled_method(ex, answer)
        self.scope = method.__code__ if method is not None else None  # that method's code, not its name's
        self._frames: list[tuple[Any, int]] = []  # the scope frames running now, each with the depth before it

    def _profile(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code is self.scope:
            torch.overrides._push_mode(self)
            self._frames.append((frame, self.depth))
            self.depth = _stack_len()
        elif event == "return" and self._frames and frame is self._frames[-1][0]:
            self._leave()
        elif self._frames:
            super()._profile(frame, event, arg)
        elif event == "c_call" and self.used is None and arg in _HIDING and _learners(frame):
            self.used = _HIDING[arg]

    def _leave(self) -> None:
        self.depth = self._frames.pop()[1]
        torch.overrides._pop_mode()

    def __enter__(self) -> Any:
        self._previous = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(self, *exc: Any) -> Any:
        sys.setprofile(self._previous)
        while self._frames:  # (a scope left without its return event)
            self._leave()
        return None


@contextlib.contextmanager
def outside_the_rule() -> Iterator[None]:
    """For a ``run`` whose rule covers one method (``Exercise.forbid_within``): its own heavy
    verification (``gradcheck``, thousands of Python calls) runs without the profile hook, which
    costs every call. Never inside the ruled method (a backward cannot switch its own watch off),
    and not for a rule over the whole run."""
    previous = sys.getprofile()
    watch = getattr(previous, "__self__", None)
    if not isinstance(watch, _ScopedRuleWatch) or watch._frames:
        yield
        return
    sys.setprofile(None)
    try:
        yield
    finally:
        sys.setprofile(previous)


def _ruled_method(ex: Exercise, answer: Any) -> Any:
    """The answer's method that ``Exercise.forbid_within`` names, as a function (a staticmethod is
    looked up on the class; decorators unwrapped), or ``None`` (the check names that otherwise)."""
    method = getattr(answer, ex.forbid_within, None)
    method = inspect.unwrap(method) if callable(method) else None
    return method if inspect.isfunction(method) else None


class _OperatorWatch(TorchDispatchMode):
    """The rule's ``re:`` patterns, one level down: every ATen operator the answer's work reaches,
    whatever switched torch functions off or ran the code (``exec`` too). Only for rules stated as
    patterns on operator names, whose allowed answers never reach such an operator; a rule naming
    public functions (``torch.nn.functional.linear``) is not applied here, since torch implements
    allowed functions with forbidden operators, and ``aten.`` names are caught where ``torch.ops``
    calls them (a dispatch mode costs every operator a Python call: RMSNorm's check 0.14 -> 0.4 s)."""

    def __init__(self, watch: _RuleWatch):
        super().__init__()
        self.watch = watch
        self._verdicts = _VERDICTS.setdefault(("op", watch.ex.id, tuple(watch.ex.forbid)), {})  # by operator name

    @staticmethod
    def wanted(ex: Exercise) -> bool:
        return any(n.startswith("re:") for n in ex.forbid)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
        # runs for every operator, each event of it seen by the rule's profile hook: no Python call
        # on the common path (a subscript, not .get; the operator's C function, not its __call__)
        if self.watch.used is None:
            try:  # (an operator's Python __hash__ would be a call: keyed by its name, a str)
                self.watch.used = self._verdicts[func._name]
            except KeyError:
                full = ".".join(str(func).split(".")[:2])  # aten._log_softmax.default -> aten._log_softmax
                hit = any(p.search(full.partition(".")[2]) for p in self.watch.patterns)
                self.watch.used = self._verdicts[func._name] = f"torch.ops.{full}" if hit else None
        return func._op(*args, **(kwargs or {}))


_HANDLER = _RuleWatch.__torch_function__.__code__
_DISPATCH_HANDLER = _OperatorWatch.__torch_dispatch__.__code__


def _learners(frame: Any) -> bool:
    """Whether ``frame`` runs the learner's code: not a library's or the course's file, nor code
    made with ``exec``/``eval`` (a ``<string>`` file: torch and ``namedtuple`` generate methods
    that way; a notebook's cells have real file names). Code the learner runs through ``exec``
    is therefore not watched for switching torch functions off (a known gap)."""
    filename = frame.f_code.co_filename
    return not filename.startswith(_NOT_LEARNER) and not filename.startswith("<")


def _resolve(dotted: str) -> Any:
    import importlib

    parts = dotted.split(".")
    if parts[0] == "Tensor":
        parts = ["torch"] + parts
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except Exception:  # noqa: BLE001
            continue
        try:
            for p in parts[i:]:
                obj = getattr(obj, p)
            return obj
        except AttributeError:
            return None
    return None


def _static_forbidden(ex: Exercise, answer: Any) -> str | None:
    """A forbidden object the answer's code names directly as a global (``from torch.func import
    grad`` then ``grad(...)``): caught even when it is not a torch function."""
    targets = {id(o): n for n in ex.forbid if not n.startswith("re:") and (o := _resolve(n)) is not None}
    funcs = [answer] if inspect.isfunction(answer) else [
        v for v in vars(answer).values() if inspect.isfunction(v)] if isinstance(answer, type) else []
    if ex.forbid_within:  # the rule covers that method only
        within = _ruled_method(ex, answer)
        funcs = [within] if within is not None else []
    for f in funcs:
        codes = [f.__code__]
        while codes:
            code = codes.pop()
            codes.extend(c for c in code.co_consts if inspect.iscode(c))
            for name in code.co_names:
                obj = f.__globals__.get(name)
                if obj is not None and id(obj) in targets:
                    return targets[id(obj)]
    return None


def rule_watch(ex: Exercise, answer: Any = None) -> contextlib.AbstractContextManager[Any]:
    """What watches the answer's calls for the exercise's rule (``Exercise.forbid``): wrap the
    call to the answer in it, then ask :func:`rule_broken`. In the instructor's grader the
    executor wraps its call (the answer runs there) and reports the name it saw. A rule within
    one of the answer's methods (``Exercise.forbid_within``) needs the answer."""
    if not ex.forbid:
        return contextlib.nullcontext()
    return _ScopedRuleWatch(ex, answer) if ex.forbid_within else _RuleWatch(ex)


def rule_broken(ex: Exercise, answer: Any, watch: Any) -> str | None:
    """The forbidden function the answer called (seen by ``watch``) or names in its code. The
    reference is the course's own code (lesson 02's ``dfdx`` is checked against autograd): no rule."""
    if not ex.forbid or answer is ex.reference:
        return None
    return getattr(watch, "used", None) or _static_forbidden(ex, answer)


def broke_rule(ex: Exercise, used: str) -> Exception:
    """The failure for an answer that broke the exercise's rule: the exercise's own mistake
    (``rule_mistake``, told what was used as ``op``), or ``broke_rule`` quoting ``rule_text``."""
    mistake = ex.rule_mistake if isinstance(ex.rule_mistake, str) else ex.rule_mistake.get(used, "")
    if mistake:
        return Incorrect(mistake, op=used)
    return _Fail("broke_rule", f"The exercise says: “{ex.rule_text or 'do not use ' + ', '.join(ex.forbid)}”. "
                 f"Your code used `{used}`.", generic=False)


def _check_one(ex: Exercise, answer: Any, case: Case, rand: Rand) -> None:
    case_ref = copy.deepcopy(case)
    rng0 = _rng_states()
    expected = _call(ex, ex.reference, case_ref)
    ref_rng = _rng_changed(rng0, _rng_states())
    ref_grad_mode = torch.is_grad_enabled()
    torch.set_grad_enabled(True)
    pristine = copy.deepcopy((case.args, case.kwargs))
    case_got = copy.deepcopy(case)
    rng1 = _rng_states()
    rule = rule_watch(ex, answer)
    try:
        got = _call(ex, answer, case_got, rule)
    except NotImplementedError as exc:
        if _raised_by_learner(exc):
            raise _NotAttempted() from exc
        raise
    except Exception as exc:
        used = rule_broken(ex, answer, rule)
        if used:  # the rule first: whatever went wrong after a forbidden call
            raise broke_rule(ex, used) from None
        if isinstance(exc, (Incorrect, _Fail)):
            raise  # a custom run's verdict (or the judge's: a broken rule), not an error of the learner's code
        named = _name_exception(ex, case, exc)
        if named is not None:
            raise named from exc
        raise
    used = rule_broken(ex, answer, rule)
    if used:
        raise broke_rule(ex, used)
    problem = compare(got, expected, ex.compare)
    if problem:
        mistake, message = _name_mistake(ex, case, got, expected, problem, answer, rand)
        raise _Fail(mistake, message)
    _check_side_effects(ex, pristine, (case_got.args, case_got.kwargs), got, (case_ref.args, case_ref.kwargs))
    if ref_grad_mode and not torch.is_grad_enabled():
        raise _Fail("grad_left_off", GRAD_LEFT_OFF)
    if not ex.uses_global_rng and not ref_rng and _rng_changed(rng1, _rng_states()):
        raise _Fail("global_rng", "Your code drew from (or reseeded) the global random number generator "
                    "(`torch.manual_seed`, `torch.rand*` without `generator=`, `random`, `np.random`), which "
                    "this task does not need: it changes every later random result in the notebook.")
    if ex.compare.grad:
        _check_grads(ex, case_ref, expected, case_got, got, rand)
