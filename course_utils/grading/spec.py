"""Declarative pieces an exercise is made of.

An exercise is one :class:`Exercise` value: a reference answer, a generator of fresh random
cases, a few fixed edge cases, comparison settings, hints, and named known mistakes. The
runner (:mod:`course_utils.grading.runner`) does the rest; lesson files in
:mod:`course_utils.exercises` only declare.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, Sequence

import torch

from .heldout import HeldOutSpec

AnswerKind = Literal["function", "class", "module", "any"]


class Incorrect(Exception):
    """Raised by a probe or a custom ``run`` to fail a check with a named mistake.

    ``mistake`` is a short identifier (``"forgot_zero_grad"``) that the exercise declares as a
    :class:`Mistake`; the learner reads that declaration's message, with ``{name}`` fields filled
    from ``facts`` (``Incorrect("wrong_count", got=3)`` with the message "You counted {got}...").
    The message is said once, where the mistake is declared; the facts must not reveal the
    expected value of a random case. ``message`` is for the framework's own generic failures.
    """

    def __init__(self, mistake: str, message: str | None = None, **facts: Any):
        super().__init__(message or mistake)
        self.mistake = mistake
        self.message = message
        self.facts = facts


#: A field of a mistake's message: ``{name}``, with an optional conversion and format spec as in
#: ``str.format`` (``{device!r}``, ``{loss:.3f}``). Other braces are text (``{"a": 1}`` in code).
FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(![rsa])?(:[^{}\s]*)?\}")
_CONVERT: dict[str, Callable[[object], str]] = {"!r": repr, "!s": str, "!a": ascii}


def _field(match: re.Match[str], facts: dict[str, Any]) -> str:
    name, conversion, spec = match.group(1), match.group(2), match.group(3)
    if name not in facts:
        return match.group(0)
    value = facts[name]
    if conversion:
        value = _CONVERT[conversion](value)
    try:
        return format(value, spec[1:]) if spec else str(value)
    except (TypeError, ValueError):  # a spec that does not suit this value: show it plainly
        return str(value)


def fill(message: str, facts: dict[str, Any]) -> str:
    """``message`` with each ``{name}``, ``{name!r}`` or ``{name:spec}`` whose name is in
    ``facts`` replaced by that fact, formatted as ``str.format`` would (other braces are left
    alone, so a message may quote code such as ``{"a": 1}``)."""
    return FIELD.sub(lambda m: _field(m, facts), message)


class Rand:
    """Seeded random source handed to case generators and probes.

    Everything random in a check must come from here (never from the global RNG), so a
    failing case is reproducible from the seed shown to the learner.
    """

    def __init__(self, seed: int):
        self.seed = seed
        self.torch = torch.Generator().manual_seed(seed)
        self.py = random.Random(seed)

    def randn(self, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.randn(*shape, generator=self.torch, dtype=dtype)

    def rand(self, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.rand(*shape, generator=self.torch, dtype=dtype)

    def randint(self, low: int, high: int, shape: Sequence[int]) -> torch.Tensor:
        return torch.randint(low, high, tuple(shape), generator=self.torch)

    def integer(self, low: int, high: int) -> int:
        """A Python int in ``[low, high]`` (both ends included)."""
        return self.py.randint(low, high)

    def uniform(self, low: float, high: float) -> float:
        return self.py.uniform(low, high)

    def choice(self, options: Sequence[Any]) -> Any:
        return self.py.choice(list(options))


@dataclass
class Case:
    """One set of inputs for the learner's answer.

    ``args``/``kwargs`` are deep-copied before each call, so answers that modify their inputs
    cannot affect the reference or later cases. ``label`` describes the case to the learner
    (for fixed edge cases, e.g. "a single row"); random cases are described by their seed.
    ``show_inputs`` lets a fixed case print its inputs in feedback.
    """

    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    show_inputs: bool = False


@dataclass(frozen=True)
class Mistake:
    """A named, known-wrong answer and the message that explains it.

    ``example`` is a wrong implementation that makes this mistake. With ``match_output=True``
    (the default) the runner compares a failing learner output against ``example``'s output on
    the same case and, when they agree, reports this mistake by name; when the learner's code
    raises, a mistake whose example raises the same error (type and message) is named. Mistakes
    detected by a
    probe instead set ``match_output=False``; their ``example`` still serves the tests, which
    assert that the grader rejects it naming this mistake. A mistake whose ``id`` is one of the
    generic ids the runner reports (``mutated_input``, ``graph_cut``, ``wrong_dtype``,
    ``wrong_shape``, ``shares_storage``, ``nan``, ``timeout``...) with ``match_output=False``
    replaces the generic message with its own.
    """

    id: str
    message: str
    example: Any = None
    match_output: bool = True


@dataclass(frozen=True)
class Compare:
    """How a learner output is compared with the reference output.

    ``rtol``/``atol`` of ``None`` use :func:`torch.testing.assert_close`'s per-dtype defaults.
    ``grad`` runs backward with a random upstream gradient and compares input gradients.
    ``graph`` requires the output to stay connected to inputs that require grad.
    ``mutation`` fails answers that modify their inputs in place; ``views`` fails outputs that
    share storage with an input (set it when the exercise asks for a new tensor).
    NaN in the learner's output where the reference has a number always fails; NaN where the
    reference has NaN matches.
    """

    rtol: float | None = None
    atol: float | None = None
    dtype: bool = True
    grad: bool = False
    graph: bool = True
    mutation: bool = True
    views: bool = False
    scale: float | None = None  # extra atol = scale * max|expected| (None: 4 eps of the dtype; 0: off)


@dataclass(frozen=True)
class Exercise:
    """Everything the course knows about one exercise.

    Attributes:
        lesson: notebook stem, e.g. ``"01_tensors"``.
        name: the learner-facing name, usually the function they write.
        title: one line shown in feedback and in the progress dashboard.
        reference: the reference answer, the same kind of object a learner passes to check.
        kind: what a learner passes: a ``"function"``, a ``"class"`` (e.g. an ``nn.Module``
            subclass), a ``"module"`` instance, or ``"any"`` (custom ``run`` decides).
        cases: makes one fresh random :class:`Case` from a :class:`Rand`.
        edge_cases: fixed cases, always run first.
        n_random: random cases per check (tests use more).
        run: ``run(answer, case)`` returns the output to compare; default calls
            ``answer(*case.args, **case.kwargs)``. It may raise :class:`Incorrect`.
        supply: ``supply(case)`` makes plain data from the reference that ``run`` reads as
            ``case.supplied``: an input only the reference can make (the checkpoint file a
            loader reads), never what the answer should return. In the instructor's grader it
            runs in the judge and travels to the sandbox with the case.
        finish: ``finish(ran, case)`` turns what ``run`` returned into the output to compare; it
            may raise :class:`Incorrect`. ``run`` is the part that touches the answer and must not
            use the reference; ``finish`` never touches the answer, only the plain data ``run``
            returned (tensors, numbers, strings, lists, dicts), and may use the reference. In the
            instructor's grader ``run`` runs in the sandbox with the answer and ``finish`` in the
            judge, where the reference is (issue 23); in a notebook they run one after the other.
        compare: settings for the output comparison.
        mistakes: named known mistakes (see :class:`Mistake`).
        probes: extra behavioural tests ``probe(answer, rand)`` that raise
            :class:`Incorrect`; they run after all cases passed. A probe may return plain data
            for ``finish_probe``.
        finish_probe: ``finish_probe(j, ran)`` judges what probe ``j`` returned, as ``finish``
            does for ``run``: plain data, never the answer. In the instructor's grader a probe
            runs in the sandbox with the answer, where the answer can rewrite it (its "passed"
            is the answer's word); a verdict that follows from the answer's outputs (the
            capstone's held-out accuracy, a loader's payload, a layer's initial values) belongs
            here, in the judge: the probe returns those outputs, never None, and
            ``finish_probe`` rebuilds the probe's inputs itself (a fixed seed) and names a
            mistake for anything else (what a rewritten probe sends). A probe that only reads
            the answer's code (a rule such as "no Python loops") is marked with
            :func:`reads_code_only`: the grader's judge runs it on the function compiled from the
            notebook's text instead (``instructor/static_answer.py``).
        heldout: held-out data the instructor may bring (``grade --heldout DIR``, see
            :mod:`.heldout`): how to read ``DIR/<name>/<class>/<image>`` and score against it.
            The probe reads the images from ``heldout.given()`` (``None``: the course's split) and
            ``finish_probe`` the labels and the bar; the labels never reach the sandbox.
        hints: increasingly specific hints.
        timeout: seconds the learner's code may run during one check, all cases together.
        solution: source shown by ``solution()``; defaults to the reference's source.
        arg_names: names of the positional arguments in feedback; defaults to the
            reference's signature (set it when that is ``*args``, e.g. ``Function.apply``).
        preload: modules imported before the clock starts (at ``exercises_for`` time and
            before the first check), on top of :data:`runner.PRELOAD`; name the slow lazy
            imports a plausible answer triggers that the reference does not (the reference is
            run once, untimed, before the first check, which imports what it needs).
        prepare: builds the exercise's fixed fixtures (for example a large log directory its
            edge cases read) once per session, untimed, at ``exercises_for`` time, so the first
            check does not pay for them; it must be idempotent and must not raise.
        points: what a correct answer is worth in the instructor's gradebook (default 1).
        uses_global_rng: a right answer may draw from the global RNGs (torch CPU, ``random``,
            NumPy) even where the reference does not; otherwise an answer that consumes or
            reseeds them while the reference leaves them alone fails as ``global_rng``.
        forbid: a rule in the prose ("by hand"), the one way an exercise states one: what the
            learner's code must not call, as qualified names (``"torch.nn.functional.softmax"``,
            ``"Tensor.softmax"``; ``torch.ops`` operators of the same name count too), ``aten.``
            globs, or ``"re:<pattern>"`` searched in a torch function's name (``"re:conv(?!ert)"``:
            every convolution kernel). Torch functions are seen through a ``TorchFunctionMode``,
            forbidden functions written in Python (``torch.nn.utils.clip_grad_norm_``) through a
            profile hook, and globals the answer's code names statically; ``re:`` patterns also
            through a ``TorchDispatchMode`` on every ATen operator reached (torch functions
            switched off or not). The watch covers
            ``run`` (or the call of the answer), never ``finish``; in the instructor's grader it
            runs in the executor, next to the answer, which reports what it saw.
        forbid_within: the name of the answer's own method the rule covers (``"backward"``: a
            custom ``autograd.Function`` whose backward is "by hand"); calls elsewhere, and the
            check's own (``torch.autograd.grad``, which runs that method), do not count. Not
            with ``re:`` patterns (no operator-level watch inside a scope).
        rule_text: the rule as the prose states it, quoted by ``broke_rule``.
        rule_mistake: a declared mistake to name instead of ``broke_rule`` (its message may use
            ``{op}``, the forbidden function that was called), or a mapping from that function's
            short name (``"hessian"``) to one, for a rule whose breaches are different mistakes.
    """

    lesson: str
    name: str
    title: str
    reference: Any
    cases: Callable[[Rand], Case] | None = None
    edge_cases: Sequence[Case] = ()
    kind: AnswerKind = "function"
    n_random: int = 10
    run: Callable[[Any, Case], Any] | None = None
    finish: Callable[[Any, Case], Any] | None = None
    supply: Callable[[Case], Any] | None = None
    compare: Compare = field(default_factory=Compare)
    mistakes: Sequence[Mistake] = ()
    probes: Sequence[Callable[[Any, Rand], Any]] = ()
    finish_probe: Callable[[int, Any], None] | None = None
    heldout: HeldOutSpec | None = None
    hints: Sequence[str] = ()
    timeout: float = 3.0
    solution: str | None = None
    arg_names: Sequence[str] | None = None
    preload: Sequence[str] = ()
    prepare: Callable[[], None] | None = None
    points: float = 1.0
    uses_global_rng: bool = False
    forbid: Sequence[str] = ()
    forbid_within: str = ""
    rule_text: str = ""
    rule_mistake: str | Mapping[str, str] = ""

    def __post_init__(self) -> None:
        # Frozen, with tuples for the sequences: a notebook cannot rebind or append to what
        # the grader compares with through a handle or the registry (not a security boundary:
        # instructor grading runs in a sandbox).
        for name in ("edge_cases", "mistakes", "probes", "hints", "preload", "forbid"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.arg_names is not None:
            object.__setattr__(self, "arg_names", tuple(self.arg_names))
        named = [self.rule_mistake] if isinstance(self.rule_mistake, str) else list(self.rule_mistake.values())
        if any(named) and not (self.forbid and all(any(m.id == n for m in self.mistakes) for n in named)):
            raise ValueError(f"{self.id}: rule_mistake {self.rule_mistake!r} needs forbid and a declared mistake")
        if self.forbid_within and (not self.forbid or any(n.startswith("re:") for n in self.forbid)):
            raise ValueError(f"{self.id}: forbid_within needs forbid, without re: patterns")

    @property
    def id(self) -> str:
        return f"{self.lesson}.{self.name}"

    def mistake(self, mistake_id: str) -> Mistake:
        for m in self.mistakes:
            if m.id == mistake_id:
                return m
        raise KeyError(f"{self.id} has no mistake {mistake_id!r}")


def reads_code_only(probe: Callable[[Any, Rand], Any]) -> Callable[[Any, Rand], Any]:
    """Mark a behaviour test that reads the answer's compiled code and never calls the answer.

    In the learner's notebook it runs as any probe. In the instructor's grader the answer sits in
    the sandboxed executor, next to code that could rewrite the probe before it runs; a marked
    probe runs in the judge instead, on the answer as the notebook's text defines it (compiled,
    never run: ``course_utils/instructor/static_answer.py``)."""
    probe.reads_code_only = True  # type: ignore[attr-defined]
    return probe
