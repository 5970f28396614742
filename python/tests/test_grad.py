"""Gradient cases (grad=True) on the CPU through torch autograd (skipped without torch): torch GDN and
GLA written token by token (torch_recurrences.py) pass with their autograd as the backward; planted
defects in that backward fail on the gradients they break and pass on the others; what the forward path
checks (types, dtypes, shapes, a missing output, raising, nondeterminism, touched inputs and cotangents)
is checked for gradients, naming the gradient; failures are saved and `larc diff` replays them."""
import os
import pathlib
import re
import subprocess

import numpy as np
import pytest

import larc

pytest_plugins = ["pytester"]
torch = pytest.importorskip("torch")
from torch_recurrences import kernel  # noqa: E402

SHAPE = (1, 100, 2, 16, 16)  # T = 100 crosses the chunk boundary at 64
H0 = {"initial_state": 2}
GDN_GRADIENTS = {"dq", "dk", "dv", "dg", "dbeta", "dh0"}
GLA_GRADIENTS = {"dq", "dk", "dv", "dgk", "dh0"}
# Weak decays (g in [-0.05, 0]) so that what crosses the chunk boundary matters (docs/gate.md "Gradient cases").
WEAK = {"decay_max": 0.05}


def gate(fn, mechanism="gdn", dtype="fp32", knobs=None, **options):
    return larc.gate(fn, mechanism=mechanism, dtype=dtype, shape=SHAPE, seed=5, knobs=knobs, device="cpu", grad=True,
                     **options)


def failure(fn, tmp_path, mechanism="gdn", dtype="fp32", knobs=None):
    with pytest.raises(larc.GateFailure) as e:
        gate(fn, mechanism, dtype, knobs, save_dir=tmp_path)
    return e.value.result, str(e.value)


def failed(result):
    return {name for name, o in result.outputs.items() if not o.passed}


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("initial_state", [0, 2])
def test_honest_gdn_passes_its_gradient_cases(dtype, initial_state, tmp_path):
    r = gate(kernel("gdn"), dtype=dtype, knobs={"initial_state": initial_state}, save_dir=tmp_path)
    assert r.passed and set(r.outputs) == GDN_GRADIENTS and r.json["mechanism"] == "gdn-backward"
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_honest_gla_passes_its_gradient_cases(dtype, tmp_path):
    r = gate(kernel("gla"), "gla", dtype, knobs=H0, save_dir=tmp_path)
    assert r.passed and set(r.outputs) == GLA_GRADIENTS


def test_without_an_initial_state_the_callable_gets_a_zero_one_and_dh0_is_judged(tmp_path):
    seen = {}
    honest = kernel("gdn")

    def record(initial_state, **rest):
        seen["h0"] = initial_state
        return honest(initial_state=initial_state, **rest)
    r = gate(record, knobs={"initial_state": 0}, save_dir=tmp_path)
    h0 = seen["h0"]
    assert h0.dtype == torch.float32 and h0.requires_grad and h0.is_leaf and not h0.detach().any()
    assert r.passed and "dh0" in r.outputs and r.outputs["dh0"].passed


# Each defect fails the gradients it breaks and leaves the others passing; "ratio" is the worst
# error/tolerance ratio over the failed gradients (docs/python.md lists them).
DEFECTS = [
    ("gdn", "dropped_carry", {"dk", "dv", "dg", "dbeta", "dh0"}),
    ("gdn", "dk_scaled", {"dk"}),
    ("gdn", "dv_shifted", {"dv"}),
    ("gdn", "decay_chain", {"dg"}),
    ("gla", "dropped_carry", {"dk", "dv", "dgk", "dh0"}),
    ("gla", "dk_scaled", {"dk"}),
    ("gla", "dv_shifted", {"dv"}),
    ("gla", "decay_chain", {"dgk"}),
]


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("mechanism, defect, breaks", DEFECTS, ids=[f"{m}-{d}" for m, d, _ in DEFECTS])
def test_planted_backward_defects_fail_the_gradients_they_break(mechanism, defect, breaks, dtype, tmp_path):
    result, message = failure(kernel(mechanism, defect), tmp_path, mechanism, dtype, knobs=dict(H0, **WEAK))
    assert failed(result) == breaks, message
    ratio = max(result.outputs[n].worst_ratio for n in breaks)
    print(f"{mechanism} {defect} {dtype}: worst ratio {ratio:.3g} on {sorted(breaks)}")
    assert ratio > 1
    if defect == "dropped_carry":  # the gradient reaching tokens before the boundary is lost: from t = 63 down
        steps = [int(m.group(1)) for e in result.errors for m in [re.match(r"dk: timestep (\d+): error", e)] if m]
        assert steps and max(steps) < 64


def test_a_detached_initial_state_is_a_missing_gradient_named(tmp_path):
    result, message = failure(kernel("gdn", "dh0_detached"), tmp_path, knobs=H0)
    assert "dh0: missing: torch.autograd.grad found no path from the callable's outputs to initial_state" in message
    assert result.fixture and os.path.exists(result.fixture)


def test_forward_outputs_the_loss_reads_are_checked(tmp_path):
    honest = kernel("gdn")
    o_only = failure(lambda **kw: honest(**kw)[0], tmp_path, knobs=H0)[1]
    assert "final_state: missing from what the callable returned (the loss has the term <dht, final_state>" in o_only
    # With do alone (cotangents 1) the final state is not needed.
    assert gate(lambda **kw: honest(**kw)[0], knobs={"cotangents": 1}, save_dir=tmp_path).passed
    detached = failure(lambda **kw: tuple(x.detach() for x in honest(**kw)), tmp_path)[1]
    assert "o: not differentiable (requires_grad is False)" in detached
    wrong_dtype = failure(lambda **kw: (honest(**kw)[0].double(), honest(**kw)[1]), tmp_path)[1]
    assert "o: expected dtype torch.float32, got torch.float64" in wrong_dtype


class _RaisingBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError("this kernel has no backward")


def test_a_raising_backward_is_a_failure_naming_the_backward(tmp_path):
    honest = kernel("gdn")

    def no_backward(q, **rest):
        return honest(q=_RaisingBackward.apply(q), **rest)
    result, message = failure(no_backward, tmp_path)
    assert "the callable's backward (torch.autograd.grad) raised NotImplementedError: this kernel has no backward" in message
    assert result.outputs == {}


def test_a_nondeterministic_backward_fails_naming_the_gradient(tmp_path):
    honest, calls = kernel("gdn"), []

    class Flaky(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            calls.append(1)
            grad = grad.clone()
            if len(calls) == 2:
                grad[0, 0, 0, 0] = torch.nextafter(grad[0, 0, 0, 0], torch.tensor(float("inf")))
            return grad

    result, message = failure(lambda k, **rest: honest(k=Flaky.apply(k), **rest), tmp_path)
    assert "dk: two runs on the same inputs differ in 1 of 3200 elements (nondeterministic)" in message


def test_touching_inputs_or_cotangents_is_a_failure_naming_them(tmp_path):
    honest = kernel("gdn")

    def writes_past_v(v, **rest):
        with torch.no_grad():
            v._base[-1] = 0.0
        return honest(v=v, **rest)

    class ScalesItsGradient(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad.mul_(2)  # in place: the cotangent handed in

    assert "v: written past its last element" in failure(writes_past_v, tmp_path)[1]
    touches_do = failure(lambda **kw: (ScalesItsGradient.apply(honest(**kw)[0]), honest(**kw)[1]), tmp_path)[1]
    assert "do: the callable modified this input" in touches_do
    assert "nondeterministic" not in touches_do  # the second run gets do as the case has it


def test_a_callable_taking_the_cotangents_returns_the_gradients_itself(tmp_path):
    """The numpy path: no device, the callable gets do and dht and returns the gradients."""
    def gradients(defect=None):
        def run(q, k, v, g, beta, scale, do, initial_state, dht):
            leaves = [torch.from_numpy(np.array(x)).requires_grad_(True) for x in (q, k, v, g, beta, initial_state)]
            o, S = kernel("gdn", defect)(*leaves[:5], scale, leaves[5])
            grads = torch.autograd.grad([o, S], leaves, [torch.from_numpy(do), torch.from_numpy(dht)])
            return dict(zip(["dq", "dk", "dv", "dg", "dbeta", "dh0"], (x.numpy() for x in grads)))
        return run
    case = larc.Case.prepare("gdn-backward", dtype="fp32", shape=SHAPE, seed=5, knobs=dict(H0, **WEAK))
    assert case.run(gradients(), save_dir=tmp_path).passed
    assert failed(case.run(gradients("dk_scaled"), save_dir=tmp_path)) == {"dk"}

    def drops_dh0(q, k, v, g, beta, scale, do, initial_state, dht):
        grads = gradients()(q, k, v, g, beta, scale, do, initial_state, dht)
        del grads["dh0"]
        return grads
    assert "dh0: missing from what the callable returned (every gradient of gdn-backward is judged)" in \
        case.run(drops_dh0, save_dir=tmp_path).message()


def test_run_grad_true_on_a_forward_case_and_cases_grad_true():
    case = larc.Case.prepare("gla", dtype="fp32", shape=SHAPE, seed=5)
    r = case.run(kernel("gla"), device="cpu", grad=True)
    assert r.passed and r.json["mechanism"] == "gla-backward" and set(r.outputs) == GLA_GRADIENTS
    assert case.run(kernel("gla"), device="cpu").json["mechanism"] == "gla"  # the forward case is still one
    planned = larc.cases("gdn", dtypes=["fp32"], grad=True, random=1)
    assert planned and all(c.is_gradient and c.spec["mechanism"] == "gdn-backward" for c in planned)


def test_a_gradient_failure_is_saved_and_larc_diff_replays_it(tmp_path):
    result, message = failure(kernel("gdn", "dk_scaled"), tmp_path, knobs=H0)
    assert os.path.exists(result.fixture) and os.path.exists(result.candidate)
    assert f"larc diff {result.fixture} {result.candidate}" in message
    replayed = larc.Case.from_fixture(result.fixture)
    assert replayed.is_gradient and replayed.spec["mechanism"] == "gdn-backward"
    again = replayed.run(kernel("gdn", "dk_scaled"), device="cpu", save_dir=tmp_path / "again")
    assert failed(again) == {"dk"}
    program = os.environ.get("LARC_PROGRAM")
    if not program or not os.access(program, os.X_OK):
        pytest.skip("LARC_PROGRAM (the larc program) is not built here: the replay by `larc diff` is not checked")
    run = subprocess.run([program, "diff", result.fixture, result.candidate], capture_output=True, text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "dk: FAIL" in run.stdout and "dq: pass" in run.stdout, run.stdout


PLUGIN_TEST_FILE = '''
import pytest
from torch_recurrences import kernel

@pytest.mark.larc("gla", grad=True, dtypes=["fp32"], shapes=[(1, 100, 2, 16, 16)], knobs={"decay_max": 0.05})
def test_gla_backward(larc_case):
    larc_case.gate(kernel("gla"), device="cpu")

@pytest.mark.larc("gla", grad=True, dtypes=["fp32"], shapes=[(1, 100, 2, 16, 16)], knobs={"decay_max": 0.05})
def test_gla_backward_dv_shifted(larc_case):
    larc_case.gate(kernel("gla", "dv_shifted"), device="cpu")
'''


def test_the_plugin_marker_takes_grad(pytester):
    pytester.makepyfile(torch_recurrences=(pathlib.Path(__file__).parent / "torch_recurrences.py").read_text(),
                        test_kernels=PLUGIN_TEST_FILE)
    saved = pytester.path / "failures"
    args = ["-p", "larc.pytest_plugin", "-p", "no:cacheprovider", "--larc"]
    # Not shrunk (--larc-shrink 0), so that the folder holds the one failing case the replay below runs.
    result = pytester.runpytest_subprocess(*args, "--larc-shrink", "0", f"--larc-save={saved}")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*larc: gla-backward fp32 [[]1,100,2,16,16[]]*FAIL (kernel torch_gla_dv_shifted)*",
                                 "*dq * pass at fp32*", "*dv * FAIL at fp32*", "*reproduce:   larc diff *"])
    assert len(list(saved.glob("*gla-backward*.candidate.safetensors"))) == 1
    replay = pytester.runpytest_subprocess(*args, f"--larc-replay={saved}", f"--larc-save={pytester.path / 'again'}")
    replay.assert_outcomes(passed=1, failed=1)  # the saved gradient case, replayed by both tests
    replay.stdout.fnmatch_lines(["*test_gla_backward_dv_shifted?fixture:*"])
