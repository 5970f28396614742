"""Planted defects in the numpy GDN: each must fail the gate naming the output it breaks and the first
timestep it breaks, while the outputs it leaves intact pass."""
import re

import pytest

import larc
from numpy_gdn import CHUNK, kernel, l2norm_kernel

SHAPE = (2, 100, 2, 16, 16)  # T = 100 crosses one chunk boundary (64); B = 2 for the offset defect


def first_violated_timestep(result, output):
    steps = [int(m.group(1)) for e in result.errors for m in [re.match(output + r": timestep (\d+): error", e)] if m]
    assert steps, f"{output}: no per-timestep violation in {result.errors}"
    return min(steps)


def gate_failure(defect, tmp_path, **knobs):
    with pytest.raises(larc.GateFailure) as e:
        larc.gate(kernel(defect), mechanism="gdn", dtype="fp32", shape=SHAPE, seed=11, knobs=knobs or None, save_dir=tmp_path)
    return e.value.result, str(e.value)


def test_honest_kernel_passes_the_same_case(tmp_path):
    assert larc.gate(kernel(), mechanism="gdn", dtype="fp32", shape=SHAPE, seed=11, save_dir=tmp_path).passed


def test_dropped_carry_fails_o_from_the_chunk_boundary(tmp_path):
    result, message = gate_failure("dropped_carry", tmp_path)
    o = result.outputs["o"]
    # With the default decays (g down to -1) the lost carry has decayed below float32's resolution by
    # T = 100: the final state passes; with weak decays it fails too.
    assert not o.passed and result.outputs["final_state"].passed
    assert not gate_failure("dropped_carry", tmp_path, decay_max=0.05)[0].outputs["final_state"].passed
    assert first_violated_timestep(result, "o") == CHUNK
    assert all(w["t"] >= CHUNK for w in o.worst_timesteps)
    assert "worst timesteps" in message and f"{o.worst_timestep}:" in message


def test_off_by_one_mask_fails_o_at_the_first_token_and_leaves_the_state(tmp_path):
    result, _ = gate_failure("off_by_one_mask", tmp_path)
    assert not result.outputs["o"].passed and result.outputs["final_state"].passed
    assert first_violated_timestep(result, "o") == 0


def test_wrong_decay_fails_from_the_first_decayed_state(tmp_path):
    result, _ = gate_failure("wrong_decay", tmp_path)
    assert not result.outputs["o"].passed and not result.outputs["final_state"].passed
    assert first_violated_timestep(result, "o") == 1  # the state is zero before token 0: its decay changes nothing


def test_wrong_decay_with_an_initial_state_fails_at_the_first_token(tmp_path):
    result, _ = gate_failure("wrong_decay", tmp_path, initial_state=2)
    assert first_violated_timestep(result, "o") == 0


def test_wrong_offset_fails_o_in_the_second_sequence(tmp_path):
    result, _ = gate_failure("wrong_offset", tmp_path)
    o = result.outputs["o"]
    assert not o.passed and not result.outputs["final_state"].passed
    assert first_violated_timestep(result, "o") == 0
    assert o.worst_coordinate[0] == 1  # batch 1 read batch 0's keys


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_in_kernel_l2norm_passes_and_a_raw_q_fails_o_alone(dtype, tmp_path):
    # Raw q and k of spread norms (1e-3 to 1e2 by default), normalised by the kernel as FLA's
    # use_qk_l2norm_in_kernel=True does.
    case = dict(mechanism="gdn-qk-l2norm", dtype=dtype, shape=SHAPE, seed=11, save_dir=tmp_path)
    assert larc.gate(l2norm_kernel(), **case).passed
    with pytest.raises(larc.GateFailure) as e:
        larc.gate(l2norm_kernel("q_not_normalized"), **case)
    result = e.value.result
    assert not result.outputs["o"].passed and result.outputs["final_state"].passed  # the state never reads q
    assert first_violated_timestep(result, "o") == 0
