"""The torch path on the CPU (Debian's python3-torch where it is installed; skipped otherwise): inputs
arrive as torch tensors of the case's dtype on the device, outputs must come back as tensors of the
output's dtype on it, bf16 included (numpy has none)."""
import re

import numpy as np
import pytest

import larc
from numpy_gdn import gdn

torch = pytest.importorskip("torch")
SHAPE = (1, 100, 2, 16, 16)


def torch_gdn(defect=None):
    """The numpy GDN behind torch tensors: float32 arithmetic, o in the inputs' dtype."""
    def run(q, k, v, g, beta, scale, initial_state=None):
        args = [x.float().numpy() for x in (q, k, v, g, beta)]
        h0 = None if initial_state is None else initial_state.numpy()
        o, S = gdn(*args, scale, h0, defect)
        return torch.from_numpy(o).to(q.dtype), torch.from_numpy(S)
    run.__qualname__ = f"torch_gdn_{defect or 'honest'}"
    return run


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "fp32"])
def test_honest_gdn_on_torch_tensors_passes(dtype, tmp_path):
    r = larc.gate(torch_gdn(), mechanism="gdn", dtype=dtype, shape=SHAPE, knobs={"initial_state": 2}, device="cpu",
                  save_dir=tmp_path)
    assert r.passed


def test_inputs_are_tensors_of_the_cases_dtype():
    seen = {}

    def record(q, initial_state, **rest):
        seen.update(q=q, h0=initial_state)
        return torch_gdn()(q=q, initial_state=initial_state, **rest)
    larc.gate(record, mechanism="gdn", dtype="bf16", shape=SHAPE, knobs={"initial_state": 2}, device="cpu")
    assert seen["q"].dtype == torch.bfloat16 and seen["q"].shape == SHAPE[:4]
    assert seen["h0"].dtype == torch.float32


@pytest.mark.parametrize("bad, expected", [
    (lambda o, S: (o.float(), S), "o: expected dtype torch.bfloat16, got torch.float32"),
    (lambda o, S: (o.float().numpy(), S), "o: expected a torch tensor on cpu, got numpy.ndarray"),
    (lambda o, S: (o, S.double()), "final_state: expected dtype torch.float32, got torch.float64"),
])
def test_malformed_tensors_fail_naming_the_output(bad, expected, tmp_path):
    honest = torch_gdn()
    with pytest.raises(larc.GateFailure, match=expected):
        larc.gate(lambda **kw: bad(*honest(**kw)), mechanism="gdn", dtype="bf16", shape=SHAPE, device="cpu", save_dir=tmp_path)


def test_in_place_update_of_an_input_fails(tmp_path):
    honest = torch_gdn()

    def scales_k(q, k, **rest):
        k.mul_(2)
        return honest(q=q, k=k, **rest)
    with pytest.raises(larc.GateFailure) as e:
        larc.gate(scales_k, mechanism="gdn", dtype="fp16", shape=SHAPE, device="cpu", save_dir=tmp_path, shrink=False)
    # The second run gets k as the case has it, so the outputs of the two runs agree.
    assert "k: the callable modified this input" in str(e.value) and "nondeterministic" not in str(e.value)


def test_a_device_this_torch_cannot_use_is_refused_before_the_case_is_prepared(monkeypatch):
    monkeypatch.setattr(larc._case.Case, "prepare", lambda *a, **k: pytest.fail("a case was prepared"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for device, message in [
            ("cuda", "device: 'cuda' is not available here (torch.cuda.is_available() is False; available: cpu)"),
            ("meta", "device: 'meta' is not available here (larc takes cpu and cuda devices; available: cpu)"),
            ("gpu", "device: 'gpu' is not a torch device (")]:
        with pytest.raises(ValueError, match="^" + re.escape(message)):
            larc.gate(torch_gdn(), mechanism="gdn", shape=SHAPE, device=device)
    assert str(larc.cases("gdn", dtypes=["fp32"], shapes=[SHAPE])[0].inputs(device="cpu")["q"].device) == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    (case,) = larc.cases("gdn", dtypes=["fp32"], shapes=[SHAPE])
    with pytest.raises(ValueError, match=re.escape("device: 'cuda:2' is not available here "
                                                   "(torch.cuda.device_count() is 2; available: cpu, cuda:0, cuda:1)")):
        case.run(torch_gdn(), device="cuda:2")
    assert case._handle is None  # refused before its inputs and oracle were made


def test_check_takes_bf16_tensors_and_finds_the_defect(tmp_path):
    case = larc.Case.prepare("gdn", dtype="bf16", shape=SHAPE, seed=9)
    inputs = case.inputs(device="cpu")
    assert inputs["q"].dtype == torch.bfloat16
    scale = case.parameters()["scale"]
    assert larc.check("gdn", inputs, torch_gdn()(**inputs, scale=scale)).passed
    with pytest.raises(larc.GateFailure, match="o: timestep 0|first: timestep 0"):
        larc.check("gdn", inputs, torch_gdn("off_by_one_mask")(**inputs, scale=scale), save_dir=tmp_path)
    np.testing.assert_array_equal(inputs["q"].float().numpy(), case.inputs()["q"])
