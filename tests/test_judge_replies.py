"""Replies a hostile executor can send the judge (hostile review, issue 28).

The executor runs learner code, so every byte it sends back is the answer's choice. The judge
runs outside any sandbox (no memory limit), so what it does with a reply must cost no more than
the reply's own size: no decompression bomb (``torch.load`` reads deflated zip entries), no
legacy-format archive (it allocates the sizes it declares), no zero-stride view of 10^12
elements, no list that reaches itself 2^40 times, and no input tensors of the answer's choosing
for the judge's own code (``finish``) to compute on. These tests drive the judge with a fake
executor (no sandbox needed): each reply below was accepted before the fix.
"""

from __future__ import annotations

import io
import zipfile

import pytest
import torch

from course_utils.grading import registry
from course_utils.grading.spec import Incorrect
from course_utils.instructor import judge


def _saved(obj, **kw) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf, **kw)
    return buf.getvalue()


def _deflated(data: bytes) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for info in src.infolist():
            z.writestr(info.filename, src.read(info.filename), compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def _dag(levels: int) -> list:
    node: list = [torch.zeros(1)]
    for _ in range(levels):
        node = [node, node]  # 2^levels paths to one tensor, a few bytes per level
    return node


def _nested(levels: int) -> list:
    node: list = []
    for _ in range(levels):
        node = [node]
    return node


def test_a_deflated_archive_is_refused_unread():
    plain = _saved({"out": torch.zeros(16 * 1024**2 // 4)})  # 16 MB of zeros
    bomb = _deflated(plain)
    assert len(bomb) < len(plain) // 100  # what a reply of 256 MB would make 256 GB
    assert torch.load(io.BytesIO(bomb), weights_only=True)["out"].numel() == 4 * 1024**2  # torch reads it
    with pytest.raises(Incorrect) as err:
        judge._plain(bomb)
    assert err.value.mistake == "not_plain_value"


def test_a_legacy_format_archive_is_refused():
    with pytest.raises(Incorrect):
        judge._plain(_saved({"out": torch.ones(3)}, _use_new_zipfile_serialization=False))


@pytest.mark.parametrize("reply", [
    pytest.param(lambda: {"out": torch.zeros(1).expand(2**40)}, id="zero-stride-view-of-4TB"),
    pytest.param(lambda: {"out": torch.zeros(1).expand(2**20), "jac": [torch.zeros(1).expand(2**26, 4)]},
                 id="views-summing-over-the-limit"),
    pytest.param(lambda: {"out": _dag(40)}, id="list-reaching-one-tensor-2^40-times"),
    pytest.param(lambda: {"out": _nested(400)}, id="nested-400-deep"),
])
def test_replies_too_big_to_walk_are_refused(reply):
    data = _saved(reply())
    assert len(data) < 1024**2
    with pytest.raises(Incorrect) as err:
        judge._plain(data)
    assert err.value.mistake == "not_plain_value"


def test_plain_replies_still_load():
    got = judge._plain(_saved({"out": [torch.arange(6).reshape(2, 3), {"k": (1.5, None, "s")}],
                               "tensors": [torch.zeros(4, 3)], "jac": None,
                               "view": torch.ones(1).expand(1000, 1000)}))
    assert got["out"][1]["k"] == (1.5, None, "s") and got["view"].shape == (1000, 1000)


class FakeExecutor:
    """Stands for the sandboxed executor: loads anything, answers each call with ``reply(case)``."""

    def __init__(self, ex, reply):
        self.ex, self.reply = ex, reply

    def request(self, req, payload=b""):
        if req["op"] == "load":
            return {"id": 1, "kind": {"callable": True, "type": "function"}}, b""
        if req["op"] == "call":
            return {"id": 1}, self.reply(judge._case(self.ex, req["plan"]))
        return {"id": 1, "passed": True}, b""


def _verdict(exercise_id, reply):
    ex = registry.get(exercise_id)
    return judge.judge_one(ex, b"PICKLE", None, FakeExecutor(ex, reply), seed=0)


def test_a_bomb_reply_is_a_verdict_not_a_crash():
    v = _verdict("00_start_here.celsius_to_fahrenheit",
                 lambda case: _deflated(_saved({"out": torch.zeros(4 * 1024**2), "tensors": [], "jac": None})))
    assert (v["status"], v["mistake"]) == ("incorrect", "not_plain_value")


def test_the_judge_never_computes_on_inputs_of_the_answers_choosing():
    # first_nonfinite's judge half runs the reference on the case's model and input; the reply's
    # input tensor (the case's tensors "as the answer left them") is another shape
    def reply(case):
        model, x = case.args
        return _saved({"out": None, "tensors": [torch.zeros(1).expand(10**6, x.shape[1] + 1)], "jac": None})

    v = _verdict("07_debugging.first_nonfinite", reply)
    assert (v["status"], v["mistake"]) == ("incorrect", "mutated_input"), v


def test_a_learners_file_is_refused_unread_where_it_would_unpack_larger():
    """save_checkpoint's judge half (``finish_save``) loads the bytes the learner's save wrote with
    the reference loader, outside the sandbox: bytes in a reply that are a zip archive with
    compressed entries are refused before any finish sees them."""
    from course_utils.grading.guard import unpacks_larger

    honest = _saved({"model": {"w": torch.zeros(4 * 1024**2)}, "epoch": 1})
    assert not unpacks_larger(honest) and not unpacks_larger(_saved({"a": 1}, _use_new_zipfile_serialization=False))
    assert unpacks_larger(_deflated(honest))
    assert judge._plain(_saved({"out": {"checkpoint": honest, "uninterrupted": []}}))["out"]["checkpoint"] == honest
    with pytest.raises(Incorrect) as err:
        judge._plain(_saved({"out": {"checkpoint": _deflated(honest), "uninterrupted": []}}))
    assert err.value.mistake == "not_plain_value" and "compressed" in str(err.value.message)
