"""Behaviour tests whose verdict is the judge's (issue 23): each probe that calls the answer returns
what came out, as plain data, and ``Exercise.finish_probe`` decides, in the instructor's grader
outside the sandbox where the answer runs. Here: the probe's data of a right answer passes, that
of each wrong answer the probe exists for is named, and what only a rewritten probe sends (nothing,
or garbage) is never taken for a pass. The sandboxed attacks are in test_forgery.py."""

from __future__ import annotations

import pytest
import torch

from course_utils.grading import Incorrect, Rand, registry

PROBE_RAND = Rand(123)

# exercise id -> (answers that the probe must pass, {mistake id: answer the probe names})
JUDGED = ["03_nn_module.Linear", "04_data.ShardedRange", "09_persistence.load_state_dict_cpu",
          "09_persistence.load_checkpoint", "10_performance.amp_policy", "11_distributed.rank_loss_scale"]


def _ex(exercise_id):
    return registry.get(exercise_id)


def _verdict(ex, answer):
    """The probe run here on ``answer``, then its verdict: the mistake id, or None."""
    state = torch.get_rng_state()
    ran = ex.probes[0](answer, PROBE_RAND)
    torch.set_rng_state(state)
    try:
        ex.finish_probe(0, ran)
    except Incorrect as exc:
        return str(exc.mistake)
    return None


@pytest.mark.parametrize("exercise_id", JUDGED)
def test_the_verdict_is_the_judges_and_a_right_answer_passes(exercise_id):
    ex = _ex(exercise_id)
    assert ex.finish_probe is not None
    assert _verdict(ex, ex.reference) is None


@pytest.mark.parametrize("exercise_id", JUDGED)
@pytest.mark.parametrize("sent", [None, {}, [], "passed", {"streams": "x", "large": 1, "payload_runs": "0"}])
def test_what_only_a_rewritten_probe_sends_is_never_a_pass(exercise_id, sent):
    ex = _ex(exercise_id)
    if exercise_id == "04_data.ShardedRange":
        import multiprocessing
        if (multiprocessing.get_start_method(allow_none=True) or "fork") != "fork":
            pytest.skip("the real-worker probe runs under fork only")
    with pytest.raises(Incorrect):
        ex.finish_probe(0, sent)


@pytest.mark.parametrize("exercise_id, mistake", [
    ("03_nn_module.Linear", "init_not_global_rng"), ("03_nn_module.Linear", "init_not_uniform"),
    ("03_nn_module.Linear", "bias_init_zero"), ("03_nn_module.Linear", "init_scale"),
    ("09_persistence.load_state_dict_cpu", "unsafe_load"), ("09_persistence.load_checkpoint", "unsafe_load"),
    ("10_performance.amp_policy", "unknown_device"), ("04_data.ShardedRange", "no_sharding"),
])
def test_a_wrong_answer_the_probe_exists_for_is_named_by_the_verdict(exercise_id, mistake):
    ex = _ex(exercise_id)
    wrong = next(m.example for m in ex.mistakes if m.id == mistake)
    if exercise_id == "04_data.ShardedRange":
        import multiprocessing
        if (multiprocessing.get_start_method(allow_none=True) or "fork") != "fork":
            pytest.skip("the real-worker probe runs under fork only")
    assert _verdict(ex, wrong) == mistake


def test_rank_loss_scale_verdict_recomputes_the_ddp_step_itself():
    from course_utils.exercises.l11_distributed import rank_loss_scale as m

    sizes = m._probe_sizes()
    right = [len(sizes) * n / sum(sizes) for n in sizes]
    m._gradient_verdict(0, right)
    for wrong in ([1.0] * len(sizes), [n / sum(sizes) for n in sizes], right[:-1], right + [1.0]):
        with pytest.raises(Incorrect) as info:
            m._gradient_verdict(0, wrong)
        assert info.value.mistake == "not_the_big_batch"


def test_amp_policy_verdict_reads_what_happened():
    from course_utils.exercises.l10_performance import amp_policy as m

    asked = m._probe_cases()
    assert {d for d, _ in asked} == set(m.UNKNOWN_DEVICES) and len(asked) == 2 * len(m.UNKNOWN_DEVICES)
    right = [{"device": d, "raised": "ValueError", "value_error": True} for d, _ in asked]
    m._unknown_device_verdict(0, right)
    last = asked[-1][0]
    for one, what in [({"device": last, "raised": "KeyError", "value_error": False}, "raised KeyError"),
                      ({"device": last, "raised": None, "value_error": False}, "returned without an error"),
                      ({"device": "cpu", "raised": "ValueError", "value_error": True}, "gave no account")]:
        with pytest.raises(Incorrect) as info:
            m._unknown_device_verdict(0, right[:-1] + [one])  # right for every device but the last one asked
        assert info.value.mistake == "unknown_device" and info.value.facts["device"] == last
        assert what in info.value.facts["what"]
    for short in (right[:1], None, {"device": last}):  # (what only a rewritten probe sends)
        with pytest.raises(Incorrect):
            m._unknown_device_verdict(0, short)


def test_amp_policy_special_casing_one_unknown_device_still_fails():
    """The probe used to ask about one device, the same one every time (its seed was fixed so the
    judge could rebuild it): an answer that raised for exactly that device passed."""
    import torch

    from course_utils import grading
    from course_utils.exercises.l10_performance import amp_policy as m

    for special in m.UNKNOWN_DEVICES:
        def answer(device_type, bf16_supported, special=special):
            if device_type == special:
                raise ValueError(device_type)
            if bf16_supported:
                return torch.bfloat16, False
            return (torch.float16, True) if device_type == "cuda" else (torch.float32, False)
        res = grading.check("10_performance.amp_policy", answer, seed=3)
        assert res.mistake == "unknown_device", (special, res.text())


def test_a_payload_value_in_the_output_or_a_run_counted_is_unsafe():
    from course_utils.exercises.l09_persistence._kit import payload_verdict

    payload_verdict(0, {"payload_runs": 0, "raised": "UnpicklingError"})
    payload_verdict(0, {"payload_runs": 0, "returned": {"weight": "<tensor>", "bias": "<tensor>"}})
    for ran in ({"payload_runs": 1, "raised": "KeyError"},               # ran, then dropped
                {"payload_runs": 0, "returned": {"bias": "payload"}},     # its value came back
                {"payload_runs": 0, "returned": [1, ["payload"]]},
                {"payload_runs": 0, "returned": "payload"}):
        with pytest.raises(Incorrect) as info:
            payload_verdict(0, ran)
        assert info.value.mistake == "unsafe_load"


def test_the_sharded_range_verdict_judges_each_real_loaders_stream():
    import multiprocessing

    from course_utils.exercises.l04_data import sharded_range as m

    if (multiprocessing.get_start_method(allow_none=True) or "fork") != "fork":
        pytest.skip("the real-worker probe runs under fork only")
    _, start, end = m._probe_range()
    items = list(range(start, end))
    m._real_workers_verdict(0, {"streams": [items, items[1::2] + items[::2]]})
    cases = [([items, items + items], "no_sharding"), ([items, items[:-1]], "missing_items"),
             ([items, [float(v) for v in items]], "missing_items"), ([items], "missing_items")]
    for streams, mistake in cases:
        with pytest.raises(Incorrect) as info:
            m._real_workers_verdict(0, {"streams": streams})
        assert info.value.mistake == mistake
