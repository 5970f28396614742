"""Shrinking a failure found from Python: liblarc's shrinker (the fuzzer's, through larc_shrink) runs the
callable on ever smaller cases and keeps the smallest that still fails the same way. A defect that shows
only from the chunk boundary (t = 64) shrinks to T = 65, one that shows only across heads to H = 2; an
honest kernel is never shrunk; whatever goes wrong inside the shrink's callback is handled."""
import os
import subprocess

import pytest

import larc
from larc import _case
from numpy_gdn import CHUNK, kernel

START = dict(mechanism="gdn", dtype="fp32", shape=(2, 100, 2, 16, 16), seed=5,
             knobs={"initial_state": 2, "decay_max": 0.05})


def shrunk_failure(fn, tmp_path, **options):
    with pytest.raises(larc.GateFailure) as e:
        larc.gate(fn, save_dir=tmp_path, **(START | options))
    return e.value.result, str(e.value)


def default_knobs():
    return larc.Case.prepare("gdn", shape=(1, 1, 1, 1, 1)).info["knobs"]


def test_a_defect_from_the_chunk_boundary_shrinks_to_one_token_past_it(tmp_path):
    result, message = shrunk_failure(kernel("dropped_carry"), tmp_path)
    shrunk = result.shrunk
    assert shrunk is not None and not shrunk.passed
    assert shrunk.json["shape"] == f"1,{CHUNK + 1},1,1,1"
    assert shrunk.json["seed"] == START["seed"] and shrunk.json["knobs"] == default_knobs()
    assert shrunk.outputs["o"].worst_timestep == CHUNK
    # One token shorter passes: no smaller T fails.
    assert larc.gate(kernel("dropped_carry"), mechanism="gdn", shape=(1, CHUNK, 1, 1, 1), seed=START["seed"],
                     save_dir=tmp_path).passed
    # The path starts from the original case and each step is the case the shrink moved to.
    assert result.shrink_path[-1]["shape"] == shrunk.json["shape"]
    assert len(result.shrink_path) <= result.shrink_evaluations <= _case.SHRINK_EVALUATIONS
    # The message: the original's figures, the reductions, then the shrunk case's own, with its files.
    original, _, rest = message.partition("\n  shrunk:      ")
    assert original.startswith("larc: gdn fp32 [2,100,2,16,16] seed 5 knobs decay_max=0.05 initial_state=2 (grid)")
    assert "first: timestep 64" in original and f"saved:       {result.fixture}" in original
    # T 100 -> 1 and -> 50 pass (no chunk boundary), so T goes down one at a time to 65.
    assert rest.startswith(f"{len(result.shrink_path)} reductions ({result.shrink_evaluations} cases run): "
                           f"T 100->99->98->") and f"->{CHUNK + 1};" in rest
    assert "B 2->1" in rest and "H 2->1" in rest and "decay_max 0.05->" in rest and "initial_state 2->0" in rest
    assert f"larc: gdn fp32 [1,{CHUNK + 1},1,1,1] seed 5 (shrunk) -- FAIL" in rest
    assert f"saved:       {shrunk.fixture} (+ candidate {shrunk.candidate})" in rest
    assert f"rerun:       larc.gate(numpy_gdn_dropped_carry, mechanism='gdn', dtype='fp32', shape=(1, {CHUNK + 1}, 1, 1, 1), seed=5)" in rest
    # Both failures are saved; the shrunk one replays alone, in-process and through `larc diff`.
    assert os.path.exists(result.fixture) and os.path.exists(shrunk.fixture) and shrunk.fixture != result.fixture
    replayed = larc.Case.from_fixture(shrunk.fixture)
    assert replayed.spec["shape"] == f"1,{CHUNK + 1},1,1,1"
    assert not replayed.run(kernel("dropped_carry"), save_dir=tmp_path / "again", shrink=False).passed
    program = os.environ.get("LARC_PROGRAM")
    if program and os.access(program, os.X_OK):
        run = subprocess.run(shrunk.json["reproduce"].replace("larc", program, 1).split(), capture_output=True, text=True)
        assert run.returncode == 1 and "timestep 64" in run.stdout, run.stdout + run.stderr


def test_a_defect_across_heads_shrinks_to_two_heads(tmp_path):
    result, message = shrunk_failure(kernel("shared_beta"), tmp_path)
    assert result.shrunk.json["shape"] == "1,1,2,1,1"
    assert "larc: gdn fp32 [1,1,2,1,1] seed 5 (shrunk) -- FAIL" in message


def test_an_honest_kernel_is_never_shrunk(tmp_path, monkeypatch):
    monkeypatch.setattr(_case.Case, "_shrink", lambda *a, **k: pytest.fail("a passing case was shrunk"))
    result = larc.gate(kernel(), save_dir=tmp_path, **START)
    assert result.passed and result.shrunk is None and "shrunk" not in result.message()
    assert not list(tmp_path.iterdir())


def test_shrinking_keeps_the_kernels_limits_and_can_be_turned_off(tmp_path):
    (case,) = larc.cases("gdn", dtypes=["fp32"], shapes=[(1, 100, 2, 16, 16)], limits={"head_dims": [16]},
                         initial_state=False)
    result = case.run(kernel("dropped_carry"), save_dir=tmp_path)
    assert result.shrunk.json["shape"] == f"1,{CHUNK + 1},1,16,16"  # K and V stay ones the kernel takes
    off = case.run(kernel("dropped_carry"), save_dir=tmp_path, shrink=False)
    assert off.shrunk is None and off.shrink_evaluations == 0 and "shrunk" not in off.message()
    bounded = case.run(kernel("dropped_carry"), save_dir=tmp_path, shrink=3)
    assert bounded.shrink_evaluations == 3
    for bad in ("yes", -1, 1.5):
        with pytest.raises(ValueError, match="^shrink: "):
            case.run(kernel("dropped_carry"), save_dir=tmp_path, shrink=bad)


def test_a_candidate_the_callable_raises_on_does_not_fail_the_same_way(tmp_path):
    def raises_on_one_head(q, k, v, g, beta, scale, initial_state=None):
        if q.shape[2] == 1:
            raise RuntimeError("one head is not supported")
        return kernel("dropped_carry")(q, k, v, g, beta, scale, initial_state)
    result, _ = shrunk_failure(raises_on_one_head, tmp_path)
    assert result.shrunk.json["shape"] == f"1,{CHUNK + 1},2,1,1"  # H stays 2: with one head it raises instead


def test_an_exception_inside_the_shrink_ends_it_and_keeps_the_failure(tmp_path, monkeypatch):
    evaluate = _case.Case._evaluate

    def failing_on_candidates(self, *args, **kwargs):
        if self.spec["origin"] == "shrunk":
            raise RuntimeError("candidate preparation broke")
        return evaluate(self, *args, **kwargs)
    monkeypatch.setattr(_case.Case, "_evaluate", failing_on_candidates)
    result, message = shrunk_failure(kernel("dropped_carry"), tmp_path)
    assert result.shrunk is None and os.path.exists(result.fixture)
    assert "shrunk:      no: shrinking the failure raised RuntimeError: candidate preparation broke" in message
    assert "first: timestep 64" in message  # the original's figures are all there


def test_an_interrupt_inside_the_shrink_reaches_the_caller(tmp_path):
    class Interrupt(BaseException):
        pass
    calls = []

    def interrupted_while_shrinking(q, k, v, g, beta, scale, initial_state=None):
        calls.append(q.shape)
        if len(calls) > 2:  # the original case's two runs, then the first candidate
            raise Interrupt()
        return kernel("dropped_carry")(q, k, v, g, beta, scale, initial_state)
    with pytest.raises(Interrupt):
        larc.gate(interrupted_while_shrinking, save_dir=tmp_path, **START)
