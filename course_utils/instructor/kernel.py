"""The grader's half that runs inside a graded notebook's kernel (inside the sandbox).

It judges nothing. At each valid check cell the notebook runner (:mod:`.nbrun`) runs
:func:`export` instead of the learner's ``ex.NAME.check(ANSWER)``: the answer, as it is at
that point of the notebook, is serialized with cloudpickle into the sandbox's private
``/tmp`` and handed to the host. The verdict is computed later by :mod:`.judge`, in
processes that never ran a learner cell: one, sandboxed, that only calls the answer on the
cases, and one, outside the sandbox, that owns the references and compares plain values.

Whatever a notebook does to this module, to ``display``, to tracing or to the kernel can only
change *which bytes are exported as its own answer*: never a verdict.
"""

from __future__ import annotations

import os
import sys

ANSWERS = "/tmp/.course-answers"
MIME = "application/vnd.pytorch-course.grade+json"  # the old in-kernel grade record: never read any more


def _dumps(cloudpickle, answer) -> bytes:
    """``cloudpickle.dumps(answer)``, with the module objects of a subclass of ``ModuleType``
    (``torch.classes``, ``torch.backends.cudnn``, ...) out of ``sys.modules`` meanwhile.

    For a function whose globals hold ``torch`` and whose code reads an attribute named like one
    of them (``folder.classes`` in an ImageFolder answer), cloudpickle takes ``torch.classes`` for
    a submodule the function imported and tries to pickle it: "cannot pickle '_Classes' object",
    so a right answer was reported as export_failed. The unpickling process imports torch, which
    brings those modules back."""
    import types

    hidden = {k: v for k, v in list(sys.modules.items())
              if isinstance(v, types.ModuleType) and type(v) is not types.ModuleType}
    for name in hidden:
        del sys.modules[name]
    try:
        return cloudpickle.dumps(answer)
    finally:
        sys.modules.update(hidden)


def export(exercise_id: str, answer_name: str, path: str | None = None) -> None:
    """Pickle the learner's ``answer_name`` for ``exercise_id`` (or record why not)."""
    import cloudpickle

    target = path or os.path.join(ANSWERS, exercise_id)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    try:
        from IPython import get_ipython

        shell = get_ipython()
        namespace = shell.user_ns if shell is not None else vars(sys.modules["__main__"])
        if answer_name not in namespace:
            data = b"MISSING"
        else:
            data = b"PICKLE" + _dumps(cloudpickle, namespace[answer_name])
    except BaseException as exc:  # noqa: BLE001 - an answer that cannot be exported is reported
        data = b"ERROR" + f"{type(exc).__name__}: {exc}"[:300].encode("utf-8", "replace")
    with open(target + ".tmp", "wb") as fh:
        fh.write(data)
    os.replace(target + ".tmp", target)
