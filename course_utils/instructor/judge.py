"""Verdicts computed where learner code cannot reach them.

Judging an exported answer takes two processes that never ran a learner cell:

* the **executor** (``python -m course_utils.instructor.judge serve LESSON``, in a fresh
  sandbox): it imports the *staged* course code, in which the reference solutions are cut out,
  unpickles the answer and, on request, runs it on one case (``ex.run(answer, case)``, the case
  rebuilt from its seed) or runs one behaviour test, and sends back what came out as plain data
  (``torch.save``; read back with ``torch.load(weights_only=True)``: exact tensors and Python
  values only);
* the **judge** (this module's :class:`Judge`, outside any sandbox, never executing learner
  code): it owns the real references and runs the course's own ``run_check`` on a stand-in
  answer whose every call is forwarded to the executor. Expected values, comparisons, mistake
  naming and the final status are computed here, from plain values.

So whatever the answer does when it runs (patch torch, the grading package, ``builtins``,
trace, write to any file descriptor, return a lying ``Tensor`` subclass, kill itself) happens
in the executor, which holds neither a verdict nor a reference to copy. The answer can only
choose what it returns, which is what is being graded. Every reply costs this process no more
than its size: see :func:`_plain`.

Behaviour tests ("probes") that call the answer run in the executor, next to it, where the
answer can rewrite them. A probe whose verdict is a function of the answer's own outputs returns
those outputs as plain data (values; which exception type was raised) and ``Exercise.finish_probe``
decides here, on inputs the judge rebuilds from a fixed seed rather than the executor's word
(03 ``Linear``'s initial distribution, 04 ``ShardedRange`` through real DataLoader workers, 09
``load_state_dict_cpu``/``load_checkpoint``'s payload, 10 ``amp_policy``'s unknown device, 11
``rank_loss_scale``'s simulated DDP step, the capstones' held-out accuracy): a rewritten probe that
sends nothing is a named mistake, never a pass. A probe that only reads the answer's code
(``grading.reads_code_only``: "no Python loops") runs here, on the function compiled from the
notebook's text (:mod:`.static_answer`), never in the executor.

What remains taken on the executor's word: probes that watch side effects inside the answer's
own process, which no returned value shows and no other process can observe: 02 ``huber``
(which tensor operations it calls, seen by a ``__torch_function__`` subclass), 07
``first_nonfinite`` (the forward hooks it must leave behind, and removes), 10 ``amp_train_step``
(which operations ran under autocast, recorded by a dispatcher hook around the answer's step), 11
``shard_indices`` (that it leaves the global RNG untouched), an exercise's rule
(``Exercise.forbid``, watched around the answer's call in the executor, which reports the forbidden
function it saw as ``rule``: this process sees none of the answer's calls), and the checks inside a ``run`` that
the executor performs before its plain data comes back (a ``run`` that raises a named mistake in
the executor). A forged "passed" there still needs outputs that match the hidden references on
every random case, which the judge compares itself.

No reference is ever in the executor (issue 23). An exercise whose check needs the reference
while it handles the answer's results splits its ``run`` (``Exercise.finish``): the executor runs
the half that touches the answer and returns plain data; the judge applies ``finish``, with the
real reference, to that data. An input only the reference can make (``Exercise.supply``: the
checkpoint a loader reads) is made here and sent with the case, as plain data. Nothing decides
trust by a frame's file name or by what an object says about itself.
"""

from __future__ import annotations

import builtins
import copy
import dataclasses
import io
import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any

from .frames import FrameError, read_frame, write_frame

MAX_REPLY = 256 * 1024**2
MAX_ITEMS = 1_000_000  # containers and items in one reply, as the judge's walks reach them
MAX_DEPTH = 200  # nesting of one reply
JAC_LIMIT = 4096  # output elements whose Jacobian the executor computes for gradient checks


# ============================================================================ executor (sandbox)


def _tensors(obj: Any) -> list:
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _tensors(o)]
    return []


def _exc_info(exc: BaseException) -> dict[str, Any]:
    import traceback

    from course_utils.grading.spec import Incorrect

    if isinstance(exc, Incorrect):
        # the id and its facts: the judge fills in the message the exercise declares (one voice);
        # a framework message (rare) travels as text
        return {"incorrect": [str(exc.mistake), None if exc.message is None else str(exc.message)],
                "facts": {str(k): str(v)[:300] for k, v in exc.facts.items()}}
    frames = traceback.extract_tb(exc.__traceback__)
    learner = None
    for fr in reversed(frames):
        if "/course_utils/" not in fr.filename and "/site-packages/" not in fr.filename:
            learner = [fr.name, fr.lineno]
            break
    innermost_learner = bool(frames) and "/site-packages/" not in frames[-1].filename and \
        "/course_utils/" not in frames[-1].filename
    return {"type": type(exc).__name__, "module": type(exc).__module__, "message": str(exc)[:500],
            "learner": learner, "innermost_learner": innermost_learner}


def _case(ex: Any, plan: list) -> Any:
    from course_utils.grading.spec import Rand

    if plan[0] == "edge":
        return copy.deepcopy(ex.edge_cases[int(plan[1])])
    return ex.cases(Rand(int(plan[1])))


def _jacobians(outs: list, inputs: list) -> list:
    import torch

    jac: list[Any] = []
    for o in outs:
        row: list[Any] = []
        if not o.requires_grad or o.numel() > JAC_LIMIT or o.grad_fn is None:
            jac.append(None)
            continue
        flat = o.reshape(-1)
        if flat.numel() == 0:  # an empty output: connected, with an empty Jacobian
            jac.append([torch.zeros(0, x.numel(), dtype=o.dtype) for x in inputs])
            continue
        per_input: list[list] = [[] for _ in inputs]
        for k in range(flat.numel()):
            grads = torch.autograd.grad(flat[k], inputs, retain_graph=True, allow_unused=True)
            for i, g in enumerate(grads):
                per_input[i].append(None if g is None else g.reshape(-1))
        for i, x in enumerate(inputs):
            if all(g is None for g in per_input[i]):
                row.append(None)
            else:
                row.append(torch.stack([torch.zeros(x.numel(), dtype=x.dtype) if g is None else g
                                        for g in per_input[i]]).detach().clone() if flat.numel() else
                           torch.zeros(0, x.numel(), dtype=x.dtype))
        jac.append(row)
    return jac


def _preload(ex: Any) -> None:
    """The course's warm-up imports (``torch._dynamo`` on a first ``optimizer.step()``...),
    before the judge's clock runs on the first call."""
    from course_utils.grading import runner

    pre = getattr(runner, "preload", None)
    if callable(pre):
        try:
            pre(tuple(getattr(runner, "PRELOAD", ())) + tuple(getattr(ex, "preload", ())))
        except Exception:  # noqa: BLE001 - only a warm-up
            pass


WARMABLE = ("torch._dynamo",)  # imported by a first optimizer: seconds, learned per lesson (see worker)


def serve(lesson: str, warm: tuple[str, ...] = ()) -> int:
    """The executor loop (inside the sandbox). Before it says ``ready`` it imports what the
    lesson's exercises preload and ``warm`` (modules an earlier executor of this lesson ended up
    importing, from :data:`WARMABLE`): when it was started ahead of its job, that happens while the
    notebook runs, not on the judge's clock."""
    out = os.fdopen(os.dup(1), "wb")
    inp = os.fdopen(os.dup(0), "rb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    import cloudpickle  # noqa: F401 - needed by pickle.loads of cloudpickled answers
    import pickle

    import torch

    from course_utils.grading import heldout, registry
    from course_utils.grading.runner import _rng_changed, _rng_states, rule_broken, rule_watch

    exercises = {ex.id: ex for ex in registry.load_lesson(lesson)}
    for ex in exercises.values():
        _preload(ex)
    from course_utils.grading.guard import preload

    preload([m for m in warm if m in WARMABLE])
    answers: dict[str, Any] = {}
    write_frame(out, {"op": "ready"})
    while True:
        try:
            req, payload = read_frame(inp, MAX_REPLY)
        except (EOFError, FrameError):
            return 0
        rid = req.get("id")
        reply: dict[str, Any] = {"id": rid}
        data = b""
        try:
            ex = exercises[req["exercise"]]
            if req["op"] == "load":
                _preload(ex)
                answer = pickle.loads(payload)
                answers[ex.id] = answer
                reply["kind"] = {"none": answer is None, "ellipsis": answer is Ellipsis,
                                 "is_reference": any(answer is e.reference for e in exercises.values()),
                                 "is_class": isinstance(answer, type),
                                 "is_module": isinstance(answer, torch.nn.Module),
                                 "callable": callable(answer), "type": type(answer).__name__[:80]}
            elif req["op"] == "call":
                answer = answers[ex.id]
                case = _case(ex, req["plan"])
                if req.get("supplied"):  # the judge's plain data for this case (Exercise.supply)
                    case.supplied = torch.load(io.BytesIO(payload), weights_only=True)
                watch = rule_watch(ex, answer)  # the exercise's rule ("without F.linear"), seen where the answer runs
                torch.set_grad_enabled(True)  # as the runner calls an answer
                rng0 = _rng_states()
                try:
                    with watch:
                        got = ex.run(answer, case) if ex.run is not None else answer(*case.args, **case.kwargs)
                finally:  # reported whether or not the call then raised
                    used = rule_broken(ex, answer, watch)
                    if used:
                        reply["rule"] = str(used)[:200]
                # what the runner checks in its own process after a call, which is the judge's
                # here: a review's answers drew from the global RNG or left autograd off, and passed
                reply["rng_changed"] = _rng_changed(rng0, _rng_states())
                reply["grad_off"] = not torch.is_grad_enabled()
                tensors = _tensors(case.args) + _tensors(case.kwargs)
                jac = None
                if req.get("grad"):
                    with torch.enable_grad():
                        jac = _jacobians(_tensors(got), [t for t in _tensors(case.args) if t.requires_grad])
                buf = io.BytesIO()
                torch.save({"out": got, "tensors": tensors, "jac": jac}, buf)
                data = buf.getvalue()
            elif req["op"] == "probe":
                from course_utils.grading.spec import Rand

                given = None
                if req.get("supplied"):  # the instructor's held-out images, never their labels
                    given = heldout.Given(torch.load(io.BytesIO(payload), weights_only=True), None, 0.0)
                with heldout.giving(given):
                    ran = ex.probes[int(req["index"])](answers[ex.id], Rand(int(req["seed"])))
                reply["passed"] = True
                if ran is not None:  # plain data for the judge's finish_probe
                    buf = io.BytesIO()
                    torch.save(ran, buf)
                    data = buf.getvalue()
        except BaseException as exc:  # noqa: BLE001 - the answer's failures are information
            reply["raised"] = _exc_info(exc)
            data = b""
        reply["warm"] = [m for m in WARMABLE if m in sys.modules]  # a hint for the next executor only
        write_frame(out, reply, data)


# ============================================================================ judge (trusted)


class ExecutorGone(Exception):
    pass


def _clean(text: Any, n: int = 300) -> str:
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", "", str(text))[:n]


class Executor:
    """The judge's handle on one executor sandbox."""

    def __init__(self, start: Any):
        self._start = start  # () -> Popen of a fresh executor
        self.proc: Any = None  # the Popen that start() returns
        self.n = 0
        self.loaded: set[str] = set()
        self.warm: set[str] = set()  # WARMABLE modules the executor imported while judging

    def ensure(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            return
        self.close()
        self.proc = self._start()
        self.loaded = set()
        head, _ = read_frame(self.proc.stdout, MAX_REPLY)
        if head.get("op") != "ready":
            raise ExecutorGone("the executor did not start")

    def request(self, req: dict[str, Any], payload: bytes = b"") -> tuple[dict[str, Any], bytes]:
        self.ensure()
        self.n += 1
        req = dict(req, id=self.n)
        try:
            write_frame(self.proc.stdin, req, payload)
            while True:
                head, data = read_frame(self.proc.stdout, MAX_REPLY)
                if head.get("id") == self.n:
                    if isinstance(head.get("warm"), list):
                        self.warm.update(m for m in head["warm"] if m in WARMABLE)
                    return head, data
        except (EOFError, FrameError, BrokenPipeError, OSError) as exc:
            code = self.proc.poll()
            self.close()
            raise ExecutorGone(
                f"the process running the answer stopped ({_clean(exc, 120)}; exit code {code})") from None
        except BaseException:
            self.close()  # a timeout in the middle of a call: this executor is out of step
            raise

    def close(self) -> None:
        from .sandbox import kill

        if self.proc is not None:
            kill(self.proc)
        self.proc = None
        self.loaded = set()


def _raiser(where: list | None) -> Any:
    name, line = "answer", 1
    if isinstance(where, list) and len(where) == 2:
        name = re.sub(r"\W", "_", str(where[0]))[:60] or "answer"
        if not name[0].isalpha() and name[0] != "_":
            name = "_" + name
        try:
            line = max(1, min(int(where[1]), 100_000))
        except (TypeError, ValueError):
            line = 1
    ns: dict[str, Any] = {}
    exec(compile("\n" * (line - 1) + f"def {name}(e): raise e", "<submission>", "exec"), ns)  # noqa: S102
    return ns[name]


def _rebuild(info: dict[str, Any]) -> BaseException:
    """An exception like the one the answer raised, raised from a frame marked as the learner's."""
    from course_utils.grading.spec import Incorrect

    if isinstance(info.get("incorrect"), list) and len(info["incorrect"]) == 2:
        mistake, message = info["incorrect"]
        facts: dict[Any, Any] = info["facts"] if isinstance(info.get("facts"), dict) else {}
        return Incorrect(_clean(mistake, 60), None if message is None else _clean(message, 600),
                         **{k: _clean(v, 300) for k, v in list(facts.items())[:20]
                            if isinstance(k, str) and k.isidentifier() and len(k) <= 40})
    name = _clean(info.get("type", "Exception"), 80)
    module = str(info.get("module", ""))
    message = _clean(info.get("message", ""), 500)
    cls: Any = None
    if module == "builtins":
        cls = getattr(builtins, name, None)
    elif module.startswith("torch"):
        obj: Any = sys.modules.get(module)
        cls = getattr(obj, name, None) if obj is not None else None
    if not (isinstance(cls, type) and issubclass(cls, Exception)) or name in ("SystemExit",):
        if name == "SystemExit":
            cls = SystemExit
        else:
            cls = type(re.sub(r"\W", "_", name) or "Exception", (Exception,), {})
    try:
        exc = cls(message)
    except Exception:  # noqa: BLE001 - exceptions whose constructor wants more
        exc = type(re.sub(r"\W", "_", name) or "Exception", (Exception,), {})(message)
    if isinstance(exc, NotImplementedError) and not info.get("innermost_learner"):
        exc = RuntimeError(f"NotImplementedError: {message}")
    return exc


def _raise(info: dict[str, Any]) -> None:
    exc = _rebuild(info)
    from course_utils.grading.spec import Incorrect

    if isinstance(exc, (Incorrect, SystemExit)):
        raise exc
    _raiser(info.get("learner"))(exc)


def _substitute(obj: Any, new: list) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        return new.pop(0)
    if isinstance(obj, tuple):
        items = [_substitute(o, new) for o in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)  # a namedtuple stays one
    if isinstance(obj, list):
        obj[:] = [_substitute(o, new) for o in obj]
        return obj
    if isinstance(obj, dict):
        for k in list(obj):
            obj[k] = _substitute(obj[k], new)
        return obj
    return obj


def _attach(out: Any, jac: list | None, inputs: list) -> Any:
    """Give plain output tensors a graph to ``inputs`` with the executor's Jacobians, so the
    course's own gradient check runs here (on values, never on learner code)."""
    import torch

    if jac is None:
        return out
    outs = _tensors(out)
    if len(jac) != len(outs):
        return out
    replaced = []
    for o, rows in zip(outs, jac):
        if not o.requires_grad:
            replaced.append(o)
            continue
        base = o.detach()
        extra = torch.zeros(base.numel(), dtype=base.dtype)
        connected = False
        if isinstance(rows, list) and len(rows) == len(inputs):
            for x, J in zip(inputs, rows):
                if J is None or not isinstance(J, torch.Tensor) or type(J) is not torch.Tensor:
                    continue
                if J.shape != (base.numel(), x.numel()):
                    continue
                extra = extra + J.to(base.dtype) @ (x - x.detach()).reshape(-1).to(base.dtype)
                connected = True
        if connected:
            replaced.append(base + extra.reshape(base.shape))
        else:
            replaced.append(base.clone().requires_grad_(True))  # needs grad, reaches no input
    return _substitute(out, replaced) if not isinstance(out, torch.Tensor) else replaced[0]


def _stored_archive(data: bytes) -> bool:
    """``data`` is a ``torch.save`` zip archive whose entries are stored, not compressed: what it
    unpacks to is no larger than itself. (A deflated entry unpacks ~1000x: a 256 MB reply would
    be 256 GB in this process, which runs outside any sandbox; the legacy, non-zip format
    allocates the sizes it declares before reading them.)"""
    import zipfile

    from course_utils.grading.guard import unpacks_larger

    return zipfile.is_zipfile(io.BytesIO(data)) and not unpacks_larger(data)


def _too_big(obj: Any) -> bool:
    """More than :data:`MAX_ITEMS` containers and items to walk (shared sub-lists counted each
    time they are reached: the judge's own walks reach them that often), nesting deeper than
    :data:`MAX_DEPTH`, or tensors whose elements (a zero-stride view counts every element it
    shows) take more than :data:`MAX_REPLY` bytes."""
    import torch

    stack: list[tuple[Any, int]] = [(obj, 0)]
    reached, nbytes = 1, 0
    while stack:
        o, depth = stack.pop()
        if depth > MAX_DEPTH:
            return True
        if isinstance(o, torch.Tensor):
            nbytes += o.numel() * o.element_size()
            if nbytes > MAX_REPLY:
                return True
            continue
        if isinstance(o, dict):
            items: Any = [x for kv in o.items() for x in kv]
        elif isinstance(o, (list, tuple, set, frozenset)):
            items = o
        else:
            continue
        reached += len(items)
        if reached > MAX_ITEMS:
            return True
        stack.extend((x, depth + 1) for x in items)
    return False


def _plain(data: bytes, allowed: list | None = None) -> Any:
    import torch

    from course_utils.grading.guard import unpacks_larger
    from course_utils.grading.spec import Incorrect

    if not _stored_archive(data):
        raise Incorrect("not_plain_value", "The process running your answer sent back something that is not a "
                                           "plain torch.save archive, which grading does not accept.")
    try:
        with torch.serialization.safe_globals(list(allowed or [])):
            got = torch.load(io.BytesIO(data), weights_only=True)
    except Exception as exc:  # noqa: BLE001 - Tensor subclasses, arbitrary objects...
        raise Incorrect("not_plain_value", "Your answer returned something other than plain tensors and "
                                           "Python values (a Tensor subclass or a custom object, say), which "
                                           "grading does not accept.") from exc
    if _too_big(got):
        raise Incorrect("not_plain_value", "Your answer returned data too large or too deeply nested to grade "
                                           f"(over {MAX_ITEMS:,} items, {MAX_DEPTH} levels of nesting or "
                                           f"{MAX_REPLY // 1024**2} MB of tensor elements).")
    if any(unpacks_larger(b) for b in _bytes(got)):  # a file's bytes that a finish may torch.load here
        raise Incorrect("not_plain_value", "Your answer wrote a file whose archive has compressed entries, which "
                                           "`torch.save` never writes; grading does not unpack it.")
    return got


def _bytes(obj: Any) -> list[bytes]:
    if isinstance(obj, bytes):
        return [obj]
    if isinstance(obj, dict):
        return [b for o in obj.values() for b in _bytes(o)]
    if isinstance(obj, (list, tuple)):
        return [b for o in obj for b in _bytes(o)]
    return []


def _exact_tensors(obj: Any) -> None:
    import torch

    from course_utils.grading.spec import Incorrect

    for t in _tensors(obj):
        if type(t) is not torch.Tensor and not isinstance(t, torch.nn.Parameter):
            raise Incorrect("not_plain_value",
                            "Your answer returned a Tensor subclass; grading accepts plain tensors only.")


def _same_inputs(before: list, after: list) -> None:
    """The case's tensors as the answer left them keep their type, shape and dtype: the judge's
    own code (``finish``, the side-effect check) goes on with them, and must not compute on
    inputs of the answer's choosing (a zero-stride view of 10^12 elements, say)."""
    import torch

    from course_utils.grading.spec import Incorrect

    for old, new in zip(before, after):
        if not isinstance(new, torch.Tensor) or type(new) is not type(old) or new.shape != old.shape \
                or new.dtype != old.dtype:
            raise Incorrect("mutated_input", "Your code changed the shape, dtype or type of an input tensor in "
                                             "place (`resize_`, `set_`, `.data = ...`). Compute new values and "
                                             "leave the input as it was.")


def _standin(kind: dict[str, Any]) -> Any:
    import torch

    if kind.get("none"):
        return None
    if kind.get("ellipsis"):
        return Ellipsis
    name = re.sub(r"\W", "_", str(kind.get("type", "object")))[:60] or "object"
    if kind.get("is_class"):
        return type("Answer", (), {})
    if kind.get("is_module"):
        return type(name, (torch.nn.Module,), {})()
    if kind.get("callable"):
        def answer(*args: Any, **kwargs: Any) -> Any:  # never called: every call is forwarded
            raise RuntimeError("the stand-in is never called")
        return answer
    return type(name, (), {})()


_PLAIN_TYPES: dict[str, list] = {}


def _course_data_types(ex: Any) -> list:
    """Namedtuple types of the course's exercise modules (``Batch``): plain data a case may
    ask the answer to return; everything else a ``torch.load(weights_only=True)`` refuses."""
    if ex.lesson not in _PLAIN_TYPES:
        found = []
        for name, mod in list(sys.modules.items()):
            if name.startswith("course_utils.exercises.") and mod is not None:
                for v in vars(mod).values():
                    if isinstance(v, type) and issubclass(v, tuple) and hasattr(v, "_fields") \
                            and getattr(v, "__module__", "") == name:
                        found.append(v)
        _PLAIN_TYPES[ex.lesson] = found
    return _PLAIN_TYPES[ex.lesson]


def judge_one(ex: Any, payload: bytes | None, export_error: str | None, executor: Executor,
              seed: int | None = None, code: list[str] | None = None) -> dict[str, Any]:
    """The verdict for one exported answer: ``{status, mistake, message}``. ``code``: the
    notebook's code cells, for the behaviour tests that only read the answer's code."""
    return _judge_one(ex, payload, export_error, executor, seed, code)


# C901: one early verdict per way an answer can fail to arrive, in pipeline order; read top to bottom
def _judge_one(ex: Any, payload: bytes | None, export_error: str | None, executor: Executor,  # noqa: C901
               seed: int | None = None, code: list[str] | None = None) -> dict[str, Any]:
    from course_utils.grading.runner import broke_rule, run_check

    if payload is None or export_error:
        return {"status": "error", "mistake": "export_failed",
                "message": "the answer could not be taken out of the notebook "
                           f"({export_error or 'nothing exported'})"}
    if payload.startswith(b"MISSING"):
        return {"status": "incorrect", "mistake": "answer_not_defined",
                "message": "the answer is not defined when its check cell runs (did the cell that defines it raise "
                           "an error, e.g. a SyntaxError?)"}
    if payload.startswith(b"ERROR"):
        return {"status": "error", "mistake": "export_failed",
                "message": "the answer could not be serialized: "
                           + _clean(payload[5:].decode("utf-8", "replace"))}
    if not payload.startswith(b"PICKLE"):
        return {"status": "error", "mistake": "export_failed", "message": "the exported answer is unreadable"}
    try:
        head, _ = executor.request({"op": "load", "exercise": ex.id}, payload[6:])
    except ExecutorGone as exc:
        return {"status": "incorrect", "mistake": "exception", "message": f"loading the answer failed: {exc}"}
    if "raised" in head:
        info = head["raised"]
        return {"status": "incorrect", "mistake": "exception",
                "message": f"loading the answer raised {_clean(info.get('type'), 80)}: "
                           f"{_clean(info.get('message'))}"}
    kind = head.get("kind") or {}
    if kind.get("is_reference"):
        return {"status": "incorrect", "mistake": "reference_answer",
                "message": "The answer is the course's own reference solution object, not the learner's code."}
    standin = _standin(kind)

    def run(answer: Any, case: Any) -> Any:
        if answer is not standin:
            return ex.run(answer, case) if ex.run is not None else answer(*case.args, **case.kwargs)
        plan = getattr(case, "_course_plan", None)
        if plan is None:
            raise RuntimeError("internal: a case without its plan")
        supplied = getattr(case, "supplied", None)
        sent = b"" if supplied is None else _saved(supplied)
        try:
            rep, data = executor.request({"op": "call", "exercise": ex.id, "plan": plan,
                                          "grad": bool(ex.compare.grad), "supplied": supplied is not None}, sent)
        except ExecutorGone as exc:
            _raiser(None)(RuntimeError(str(exc)))
        if ex.forbid and isinstance(rep.get("rule"), str):  # the rule first, as in the notebook
            raise broke_rule(ex, _clean(rep["rule"], 200))
        if "raised" in rep:
            _raise(rep["raised"])
        _mirror_state(rep)
        got = _plain(data, _course_data_types(ex))
        if not isinstance(got, dict) or "out" not in got:
            raise RuntimeError("the answer's process sent an unreadable reply")
        out, tensors = got["out"], got.get("tensors")
        _exact_tensors(out)
        if isinstance(tensors, list) and len(tensors) == len(_tensors(case.args)) + len(_tensors(case.kwargs)):
            _same_inputs(_tensors(case.args) + _tensors(case.kwargs), tensors)
            n_args = len(_tensors(case.args))
            case.args = _substitute(case.args, list(tensors[:n_args]))
            case.kwargs = _substitute(case.kwargs, list(tensors[n_args:]))
        if ex.compare.grad:
            out = _attach(out, got.get("jac"), [t for t in _tensors(case.args) if t.requires_grad])
        return out

    def tag(case: Any, plan: list) -> Any:
        case._course_plan = plan
        return case

    def remote_probe(index: int) -> Any:
        def probe(answer: Any, rand: Any) -> Any:
            if answer is not standin:
                return ex.probes[index](answer, rand)
            if getattr(ex.probes[index], "reads_code_only", False):
                return _code_probe(ex, ex.probes[index], code, rand, payload[6:])
            from course_utils.grading import heldout

            given = heldout.given() if ex.heldout is not None else None
            sent = b"" if given is None else _saved(given.images)  # the images go; the labels stay here
            try:
                rep, data = executor.request({"op": "probe", "exercise": ex.id, "index": index, "seed": rand.seed,
                                              "supplied": given is not None}, sent)
            except ExecutorGone as exc:
                _raiser(None)(RuntimeError(str(exc)))
            if "raised" in rep:
                _raise(rep["raised"])
            if not data:
                return None
            ran = _plain(data, _course_data_types(ex))  # for ex.finish_probe, run here by run_check
            _exact_tensors(ran)
            return ran
        return probe

    cases = None
    if ex.cases is not None:
        original = ex.cases
        cases = lambda rand: tag(original(rand), ["seed", rand.seed])  # noqa: E731
    # learner code runs in another process, over a pipe, on a busy machine: the same limit
    # with room for the round trips (an endless loop is still stopped)
    timeout = max(float(ex.timeout) * 3, float(ex.timeout) + 10) if ex.timeout else ex.timeout
    judged = dataclasses.replace(
        ex, edge_cases=[tag(copy.deepcopy(c), ["edge", i]) for i, c in enumerate(ex.edge_cases)],
        cases=cases, run=run, probes=[remote_probe(j) for j in range(len(ex.probes))], timeout=timeout)
    result = run_check(judged, standin, seed=seed)
    return {"status": result.status, "mistake": result.mistake or "", "message": result.message}


def _mirror_state(rep: dict) -> None:
    """What the answer's call did to its process's global state, done here, where the runner
    looks after the call (``global_rng``, ``grad_left_off``): a draw from the global RNG, autograd
    switched off."""
    import torch

    if rep.get("rng_changed") is True:
        torch.rand(1)
    if rep.get("grad_off") is True:
        torch.set_grad_enabled(False)


def _saved(obj: Any) -> bytes:
    """Plain data from the judge (a case's supplied input, held-out images) as ``torch.save`` bytes."""
    import torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def _code_probe(ex: Any, probe: Any, code: list[str] | None, rand: Any, exported: bytes) -> Any:
    """A behaviour test that only reads the answer's code, run here on the function compiled
    from the notebook's text (never called), not in the executor where the answer could rewrite
    it (``grading.reads_code_only``): the text up to the check cell, and only when the answer
    the check cell ``exported`` runs that text's bytecode."""
    from course_utils.grading import Incorrect

    from .static_answer import cells_until_check, exported_as_written, static_function

    fn = static_function(cells_until_check(code or [], ex.name), ex.name)
    if fn is not None and not exported_as_written(fn, exported):
        raise Incorrect("rule_unverifiable", message=(
            f"The exercise states a rule about `{ex.name}`'s code, and the grader reads that code in the "
            f"notebook's text: the `{ex.name}` your check cell handed in is not the `def {ex.name}` the "
            "notebook shows before it (redefined in a cell magic or through its `__code__`, say)."))
    if fn is None:
        raise Incorrect("rule_unverifiable", message=(
            f"The exercise states a rule about `{ex.name}`'s code, and the grader reads that code in the "
            f"notebook's text: write it as `def {ex.name}(...)` in a code cell (it found none, or one bound "
            "another way, such as through `exec`, `globals()` or a decorator)."))
    return probe(fn, rand)


def judge_submission(lesson: str, answers: dict[str, tuple[bytes | None, str | None]], start_executor: Any,
                     seed: int | None = None, code: list[str] | None = None,
                     warm: set[str] | None = None, heldout_setup: Any = None) -> dict[str, dict[str, Any]]:
    """Verdicts for the exported answers of one notebook (``{exercise id: verdict}``); ``warm``
    gains the :data:`WARMABLE` modules its executor imported; ``heldout_setup``: the
    instructor's held-out data (``grade --heldout``, :func:`.grade_heldout.prepare`)."""
    from course_utils.grading import heldout, registry

    from .grade_heldout import given_for

    executor = Executor(start_executor)
    verdicts: dict[str, dict[str, Any]] = {}
    try:
        for ex in registry.load_lesson(lesson):
            if ex.id not in answers:
                continue
            payload, err = answers[ex.id]
            try:
                with heldout.giving(given_for(ex, heldout_setup)):
                    verdicts[ex.id] = judge_one(ex, payload, err, executor, seed=seed, code=code)
            except ExecutorGone as exc:
                verdicts[ex.id] = {"status": "incorrect", "mistake": "exception", "message": _clean(exc)}
            except Exception as exc:  # noqa: BLE001 - a grading bug must not lose the batch
                verdicts[ex.id] = {"status": "error", "mistake": "judge_failed",
                                   "message": f"judging failed ({type(exc).__name__}: {_clean(exc, 200)})"}
    finally:
        executor.close()
        if warm is not None:
            warm.update(executor.warm)
    return verdicts


# ============================================================================ judge worker process


def _starter(job: dict[str, Any], warm: Any = ()) -> Any:
    """``() -> Popen`` of a fresh executor for ``job``'s lesson, staged course, limits and uid,
    importing ``warm`` before it is ready."""
    from . import sandbox

    lesson, course = str(job["lesson"]), Path(job["course"])
    argv = [sys.executable, "-m", "course_utils.instructor.judge", "serve", lesson, *sorted(warm)]
    if job.get("no_sandbox"):
        def start() -> Any:  # trusted notebooks only
            import subprocess

            env = dict(os.environ, PYTHONPATH=str(course), COURSE_PROGRESS_LOG="")
            return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    env=env, start_new_session=True)
        return start
    limits, uid = sandbox.Limits(**job["limits"]), job.get("uid")

    def start_sandboxed() -> Any:
        return sandbox.popen(argv, course=course, inputs=None, limits=limits, uid=uid)
    return start_sandboxed


def _job_key(job: dict[str, Any]) -> tuple:
    return (job.get("lesson"), job.get("course"), job.get("uid"), bool(job.get("no_sandbox")),
            repr(sorted((job.get("limits") or {}).items())))


class _Prepared:
    """An executor started ahead of its job (op ``prepare``, sent when a notebook starts), so its
    sandbox, interpreter and ``import torch`` overlap the notebook's run instead of following it.
    It has run no learner code: it is waiting for its first request. A job with another key, a
    ``discard``, or the next ``prepare`` kills it."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.proc: Any = None
        self.warm: dict[str, set[str]] = {}  # lesson -> modules its executors ended up importing

    def start(self, job: dict[str, Any]) -> None:
        self.discard()
        self.key, self.proc = _job_key(job), _starter(job, self.warm.get(str(job["lesson"]), ()))()

    def discard(self) -> None:
        from .sandbox import kill

        if self.proc is not None:
            kill(self.proc)
        self.key = self.proc = None

    def starter(self, job: dict[str, Any]) -> Any:
        """``job``'s start function, handing out the prepared executor first when it fits."""
        fresh = _starter(job, self.warm.get(str(job["lesson"]), ()))
        if self.proc is None or self.key != _job_key(job):
            self.discard()
            return fresh
        ready = [self.proc]
        self.key = self.proc = None

        def start() -> Any:
            if ready:
                proc = ready.pop()
                if proc.poll() is None:
                    return proc
            return fresh()
        return start


def _warm_up(lesson: str) -> None:
    """Import a lesson's graders and run each reference once (``runner.warm_up``: the lazy
    imports, ``torch._dynamo`` on a first optimizer step, fixtures), here in the judge, while the
    notebook that sent ``prepare`` runs: the first notebook's judging no longer pays for them
    (lesson 05: seconds)."""
    from course_utils.grading import registry, runner

    try:
        for ex in registry.load_lesson(lesson):
            runner.warm_up(ex)
    except Exception:  # noqa: BLE001 - only a warm-up: judging reports real problems
        pass


def worker() -> int:
    """A long-lived judge process (outside the sandbox) serving the host, one job at a time."""
    out = os.fdopen(os.dup(1), "wb")
    inp = os.fdopen(os.dup(0), "rb")
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the host decides when to stop
    import torch  # noqa: F401 - warm

    write_frame(out, {"op": "ready"})
    prepared = _Prepared()
    warmed: set[str] = set()  # lessons whose graders this judge has warmed up
    while True:
        try:  # a job's header holds the notebook's code cells: at most MAX_CODE characters, JSON-escaped
            job, _ = read_frame(inp, 4 << 20)
        except (EOFError, FrameError):
            prepared.discard()
            return 0
        if job.get("op") in ("prepare", "discard"):  # no reply: the host does not wait for these
            try:
                prepared.start(job) if job["op"] == "prepare" else prepared.discard()
            except Exception:  # noqa: BLE001 - the job starts its own executor then
                prepared.discard()
            if job.get("op") == "prepare" and str(job.get("lesson")) not in warmed:
                warmed.add(str(job.get("lesson")))
                _warm_up(str(job.get("lesson")))
            continue
        answers: dict[str, tuple[bytes | None, str | None]] = {}
        for _ in range(int(job.get("n", 0))):
            head, data = read_frame(inp, MAX_REPLY)
            answers[str(head.get("exercise"))] = (data if not head.get("error") else None, head.get("error"))
        t0 = time.perf_counter()
        code = job.get("code")
        code = [c for c in code if isinstance(c, str)] if isinstance(code, list) else None
        verdicts = judge_submission(job["lesson"], answers, prepared.starter(job), code=code,
                                    warm=prepared.warm.setdefault(str(job["lesson"]), set()),
                                    heldout_setup=job.get("heldout"))
        write_frame(out, {"op": "verdicts", "verdicts": verdicts, "seconds": time.perf_counter() - t0})


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"]:
        return serve(argv[1], tuple(argv[2:]))
    if argv[:1] == ["worker"]:
        return worker()
    print("usage: python -m course_utils.instructor.judge serve LESSON | worker", file=sys.stderr)
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
