"""The larc package with numpy callables: an honest numpy GDN passes every case; the API refuses
wrong arguments naming them; whatever the callable does wrong (shape, dtype, type, NaN, raising,
nondeterminism, touching its inputs) is a failure naming the output or input; failures are saved as
fixtures that Case.from_fixture and `larc diff` replay."""
import importlib.util
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import larc
from larc import _context
from numpy_gdn import kernel

SHAPE = (1, 100, 2, 16, 16)


def test_registry_lists_gdn_with_fla_layout():
    gdn = larc.mechanisms()["gdn"]
    assert [i["name"] for i in gdn["inputs"]][:5] == ["q", "k", "v", "g", "beta"]
    assert [o["name"] for o in gdn["outputs"]] == ["o", "final_state"]


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("initial_state", [0, 2])
def test_honest_numpy_gdn_passes(dtype, initial_state, tmp_path):
    r = larc.gate(kernel(), mechanism="gdn", dtype=dtype, shape=SHAPE, seed=3, knobs={"initial_state": initial_state},
                  save_dir=tmp_path)
    assert r.passed and set(r.outputs) == {"o", "final_state"}
    assert r.outputs["o"].worst_ratio <= 1 and r.outputs["o"].grade_met != "none"
    assert not list(tmp_path.iterdir())  # nothing saved for a pass


def test_honest_numpy_gdn_passes_every_grid_case(tmp_path):
    cases = larc.cases("gdn", dtypes=["fp32"])
    assert len(cases) >= 6 and len({c.id for c in cases}) == len(cases)
    for case in cases:
        case.gate(kernel(), save_dir=tmp_path)


def test_case_ids_say_dtype_shape_seed_and_state():
    ids = [c.id for c in larc.cases("gdn", dtypes=["bf16"], seed=7, random=2)]
    assert "bf16-1x100x2x16x8-s7" in ids and "bf16-1x100x2x16x8-s7-h0" in ids
    assert sum(i.startswith("random") for i in ids) == 2


def test_cases_respect_the_kernels_limits():
    cases = larc.cases("gdn", dtypes=["fp32"], limits={"min_K": 16}, random=4)
    assert cases and all(int(c.spec["shape"].split(",")[3]) >= 16 for c in cases)


def test_only_ragged_kernels_get_the_varlen_cases():
    plain = larc.cases("gdn", dtypes=["fp32"])
    ragged = larc.cases("gdn", dtypes=["fp32"], limits={"ragged": True})
    assert not any(c.spec["knobs"].get("varlen") for c in plain)
    varlen = [c for c in ragged if c.spec["knobs"].get("varlen") == 1]
    assert varlen and all("seq_lens" in [i["name"] for i in c.info["inputs"]] for c in varlen)


def test_wrong_plan_arguments_raise_value_error_naming_them():
    for kwargs, named in [({"limits": {"max_T": "long"}}, "max_T"), ({"limits": {"max_X": 1}}, "max_X"),
                          ({"limits": {"ragged": "yes"}}, "ragged"),
                          ({"dtypes": ["fp8"]}, "dtypes"), ({"random": -1}, "random"), ({"shapes": [(1, 2)]}, "shapes"),
                          ({"fixtures": ["/no/such/file"]}, "fixtures"), ({"knobs": {"bogus": 1}}, "bogus")]:
        with pytest.raises(ValueError, match=named):
            larc.cases("gdn", **kwargs)


def test_a_selection_that_leaves_no_case_names_the_arguments_given_and_the_grids_shapes():
    # The grid's largest head size is 32: head sizes 64 and 128 need shapes of their own.
    with pytest.raises(ValueError) as e:
        larc.cases("gdn", dtypes=["bf16"], limits={"head_dims": [64, 128]})
    assert str(e.value).startswith("dtypes, limits: nothing to run: no case of gdn meets dtypes=['bf16'], "
                                   "limits={'head_dims': [64, 128]}; the grid offers ")
    assert "(2, 160, 2, 32, 32)" in str(e.value) and str(e.value).endswith("give shapes= that the limits accept")
    assert "--" not in str(e.value)  # not the CLI's options
    assert len(larc.cases("gdn", dtypes=["bf16"], shapes=[(1, 20, 1, 64, 64)], limits={"head_dims": [64, 128]})) == 1
    with pytest.raises(ValueError, match=r"^shapes, limits: nothing to run: no case of gdn meets "
                                         r"shapes=\[\(1, 20, 1, 8, 8\)\], limits=\{'min_K': 16\}; "
                                         r"the grid offers .* \(1, 20, 1, 8, 8\)$"):
        larc.cases("gdn", shapes=[(1, 20, 1, 8, 8)], limits={"min_K": 16})
    with pytest.raises(ValueError, match=r"^grid: nothing to run: no case of gdn meets grid=False; the grid is off$"):
        larc.cases("gdn", grid=False)


def test_wrong_arguments_raise_value_error_naming_them():
    honest = kernel()
    for kwargs, named in [({"mechanism": "nope"}, "mechanism"), ({"mechanism": "gdn", "dtype": "fp8"}, "dtype"),
                          ({"mechanism": "gdn", "shape": (1, 2, 3)}, "shape"),
                          ({"mechanism": "gdn", "shape": (1, 0, 1, 8, 8)}, "shape"),
                          ({"mechanism": "gdn", "runs": 0}, "runs"), ({"mechanism": "gdn", "grade": "tf16"}, "grade"),
                          ({"mechanism": "gdn", "knobs": {"bogus": 1}}, "bogus"),
                          ({"mechanism": "gdn", "grade_of": {"o": "x"}}, "grade_of"),
                          ({"mechanism": "gdn", "seed": -1}, "seed")]:
        with pytest.raises(ValueError, match=named):
            larc.gate(honest, shape=kwargs.pop("shape", SHAPE), **kwargs)
    with pytest.raises(ValueError, match="fn"):
        larc.gate("not callable", mechanism="gdn")
    with pytest.raises(ValueError, match="grade_of"):
        larc.gate(honest, mechanism="gdn", shape=SHAPE, grade_of={"x": "io"})


def test_wrong_gradient_arguments_raise_value_error_naming_them(monkeypatch):
    honest = kernel()
    # Every forward mechanism has a gradient twin: a mechanism without one is met in the registry less one.
    without_twin = {n: m for n, m in larc.mechanisms().items() if n != "ccq-gdn-backward"}
    monkeypatch.setattr(larc._case, "_registry", without_twin)
    with pytest.raises(ValueError, match="grad: ccq-gdn has no gradient twin"):
        larc.gate(honest, mechanism="ccq-gdn", grad=True)
    monkeypatch.undo()
    with pytest.raises(ValueError, match="grad: expected True or False"):
        larc.gate(honest, mechanism="gdn", grad="yes")
    with pytest.raises(ValueError, match="device: a forward callable on a gradient case is differentiated by torch"):
        larc.gate(honest, mechanism="gdn", shape=SHAPE, grad=True)
    with pytest.raises(ValueError, match="initial_state: gradient cases need a kernel that takes an initial state"):
        larc.cases("gdn", grad=True, initial_state=False)
    with pytest.raises(ValueError, match="grad: this is a gradient case"):
        larc.Case.prepare("gdn-backward", shape=SHAPE).run(honest, grad=False)


def test_a_gradient_callable_missing_a_gradient_fails_naming_it(tmp_path):
    """A callable taking the cotangents returns the gradients itself (no torch needed); every gradient of
    the twin is judged, so one left out fails the case naming it, and the case is saved."""
    case = larc.Case.prepare("gdn-backward", shape=SHAPE, seed=2)
    outputs = {o["name"]: o for o in case.info["outputs"]}

    def without_dh0(q, k, v, g, beta, scale, do, dht):
        return {n: np.zeros(o["shape"], np.float32) for n, o in outputs.items() if n != "dh0"}
    result = case.run(without_dh0, save_dir=tmp_path)
    assert not result.passed and result.outputs == {}
    assert "dh0: missing from what the callable returned (every gradient of gdn-backward is judged)" in result.message()
    assert os.path.exists(result.fixture) and result.candidate is None


def failure(fn, tmp_path, **kwargs):
    with pytest.raises(larc.GateFailure) as e:
        larc.gate(fn, mechanism="gdn", shape=SHAPE, save_dir=tmp_path, **kwargs)
    return e.value.result, str(e.value)


@pytest.mark.parametrize("bad, expected", [
    (lambda o, S: (o[:, :-1], S), "o: expected shape [1, 100, 2, 16], got [1, 99, 2, 16]"),
    (lambda o, S: (o.astype(np.float64), S), "o: expected dtype float32, got float64"),
    (lambda o, S: (o, S.astype(np.float16)), "final_state: expected dtype float32, got float16"),
    (lambda o, S: (o.tolist(), S), "o: expected a numpy array (no device given), got builtins.list"),
    (lambda o, S: (o, S, S), "returned 3 values; gdn has 2 outputs"),
    (lambda o, S: {"o": o, "state": S}, "state: not an output of gdn"),
    (lambda o, S: None, "o: expected a numpy array (no device given), got builtins.NoneType"),
])
def test_malformed_outputs_fail_naming_the_output(bad, expected, tmp_path):
    honest = kernel()

    def malformed(q, k, v, g, beta, scale):
        return bad(*honest(q, k, v, g, beta, scale))
    result, message = failure(malformed, tmp_path)
    assert expected in message
    assert result.fixture and os.path.exists(result.fixture)  # the inputs are saved even when nothing was judged


def test_nan_where_the_oracle_is_finite_fails_naming_the_output(tmp_path):
    honest = kernel()

    def nan_at_t5(q, k, v, g, beta, scale):
        o, S = honest(q, k, v, g, beta, scale)
        o[0, 5, 1, 3] = np.nan
        return o, S
    result, message = failure(nan_at_t5, tmp_path)
    assert not result.outputs["o"].passed and result.outputs["o"].non_finite == 1
    assert result.outputs["final_state"].passed
    assert "o" in message and "1 non finite" in message


def test_a_raising_callable_is_a_failure(tmp_path):
    def boom(q, k, v, g, beta, scale):
        raise RuntimeError("kernel launch failed")
    result, message = failure(boom, tmp_path)
    assert "the callable raised RuntimeError: kernel launch failed" in message


def test_nondeterminism_is_a_failure_naming_the_output(tmp_path):
    honest, calls = kernel(), []

    def flaky(q, k, v, g, beta, scale):
        o, S = honest(q, k, v, g, beta, scale)
        calls.append(1)
        o[0, 0, 0, 0] = np.nextafter(o[0, 0, 0, 0], np.float32(np.inf)) if len(calls) == 2 else o[0, 0, 0, 0]
        return o, S
    result, message = failure(flaky, tmp_path)
    assert "o: two runs on the same inputs differ in 1 of 3200 elements (nondeterministic)" in message
    assert not result.json["deterministic"]


def test_touching_the_inputs_is_a_failure_naming_the_input(tmp_path):
    honest = kernel()

    def scales_q(q, k, v, g, beta, scale):
        q *= 2
        return honest(q, k, v, g, beta, scale)

    def writes_past_v(q, k, v, g, beta, scale):
        v.base[-1] = 0.0
        return honest(q, k, v, g, beta, scale)
    assert "q: the callable modified this input" in failure(scales_q, tmp_path)[1]
    assert "v: written past its last element" in failure(writes_past_v, tmp_path)[1]


def test_an_input_modified_in_place_fails_alone_as_every_run_gets_the_cases_inputs(tmp_path):
    honest, k_seen = kernel(), []

    def scales_k_afterwards(q, k, v, g, beta, scale):
        k_seen.append(k.copy())
        out = honest(q, k, v, g, beta, scale)
        k *= 2
        return out
    result, message = failure(scales_k_afterwards, tmp_path, shrink=False)
    assert "k: the callable modified this input" in message
    assert "nondeterministic" not in message and result.json["deterministic"]
    assert len(k_seen) == 2 and np.array_equal(k_seen[0], k_seen[1])


def test_a_failure_outside_pytest_gives_the_larc_gate_call_that_reruns_it(tmp_path, monkeypatch):
    numpy_gdn_dropped_carry = kernel("dropped_carry")
    result, message = failure(numpy_gdn_dropped_carry, tmp_path, knobs={"decay_max": 0.5}, grade="io", shrink=False)
    call = ("larc.gate(numpy_gdn_dropped_carry, mechanism='gdn', dtype='fp32', shape=(1, 100, 2, 16, 16), seed=1, "
            "knobs={'decay_max': 0.5}, grade='io')")
    assert f"  rerun:       {call}\n" in message
    # Run as printed, it fails the same way (not shrunk again, saved elsewhere).
    monkeypatch.setitem(_context.current, "shrink", 0)
    monkeypatch.setenv("LARC_SAVE_DIR", str(tmp_path / "again"))
    with pytest.raises(larc.GateFailure) as again:
        eval(call, {"larc": larc, "numpy_gdn_dropped_carry": numpy_gdn_dropped_carry})
    assert again.value.result.outputs["o"].json == result.outputs["o"].json
    # A case read from a fixture reruns from it; a callable without a name to type is fn.
    replayed = larc.Case.from_fixture(result.fixture).run(lambda **kw: numpy_gdn_dropped_carry(**kw), save_dir=tmp_path,
                                                          shrink=False, runs=3)
    assert replayed.json["rerun"] == f"larc.Case.from_fixture({result.fixture!r}).gate(fn, runs=3)"


def test_parameters_reach_only_callables_that_name_them():
    seen = {}

    def takes_kwargs(**kw):
        seen.update(kw)
        return kernel()(kw["q"], kw["k"], kw["v"], kw["g"], kw["beta"], kw["scale"])
    larc.gate(takes_kwargs, mechanism="gdn", shape=SHAPE)
    assert seen["scale"] == pytest.approx(16 ** -0.5) and "initial_state" not in seen
    with pytest.raises(ValueError, match="initial_state"):
        larc.gate(lambda q, k, v, g, beta, scale: None, mechanism="gdn", shape=SHAPE, knobs={"initial_state": 2})


def test_check_judges_your_inputs_against_larcs_oracle(tmp_path):
    case = larc.Case.prepare("gdn", dtype="fp32", shape=SHAPE, seed=5)
    inputs = case.inputs()
    scale = case.parameters()["scale"]
    o, S = kernel()(**inputs, scale=scale)
    r = larc.check("gdn", inputs, {"o": o, "final_state": S})
    assert r.passed and r.json["shape"] == "1,100,2,16,16"
    o_bad, S_bad = kernel("dropped_carry")(**inputs, scale=scale)
    with pytest.raises(larc.GateFailure, match="timestep 64"):
        larc.check("gdn", inputs, (o_bad, S_bad), save_dir=tmp_path)


def test_oracle_and_inputs_round_trip_a_fixture(tmp_path):
    case = larc.Case.prepare("gdn", dtype="bf16", shape=(1, 20, 1, 8, 8), seed=2, knobs={"initial_state": 2})
    path = case.save(tmp_path / "c.safetensors")
    back = larc.Case.from_fixture(path)
    assert back.spec["shape"] == "1,20,1,8,8" and back.spec["dtype"] == "bf16"
    for name, a in case.inputs().items():
        assert np.array_equal(a, back.inputs()[name]), name
    assert np.array_equal(case.oracle("o"), back.oracle("o"))
    assert back.inputs()["initial_state"].dtype == np.float32


def test_a_failure_is_saved_and_larc_diff_replays_it(tmp_path):
    result, message = failure(kernel("dropped_carry"), tmp_path)
    assert os.path.exists(result.fixture) and os.path.exists(result.candidate)
    assert f"larc diff {result.fixture} {result.candidate}" in message
    replayed = larc.Case.from_fixture(result.fixture)
    assert replayed.spec["shape"] == "1,100,2,16,16" and replayed.spec["seed"] == 1
    with pytest.raises(larc.GateFailure, match="timestep 64"):
        replayed.gate(kernel("dropped_carry"), save_dir=tmp_path / "again")
    program = os.environ.get("LARC_PROGRAM")
    if not program or not os.access(program, os.X_OK):
        pytest.skip("LARC_PROGRAM (the larc program) is not built here: the replay by `larc diff` is not checked")
    run = subprocess.run([program, "diff", result.fixture, result.candidate], capture_output=True, text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "o: FAIL" in run.stdout and "timestep 64" in run.stdout


def test_profiles_record_and_check(tmp_path):
    case = larc.Case.prepare("gdn", dtype="fp32", shape=SHAPE, seed=4)
    accepted = case.run(kernel(), kernel="gdn-numpy")
    profile = larc.record_profile([accepted], tmp_path / "profile.json")
    assert case.run(kernel(), kernel="gdn-numpy", profile=profile).passed
    worse = case.run(kernel("wrong_decay"), kernel="gdn-numpy", profile=profile, save_dir=tmp_path)
    assert not worse.passed and worse.outputs["o"].profile_ratio > 1


def test_the_c_interface_refuses_bad_arguments_naming_them():
    from larc import _native
    lib = _native.lib()
    for call, named in [(lambda: lib.larc_plan_json(b"not json"), "options: not JSON"),
                        (lambda: lib.larc_plan_json(b'{"mechanism": "gdn", "shapez": []}'), "unknown key 'shapez'"),
                        (lambda: lib.larc_plan_json(b"{}"), "mechanism is required"),
                        (lambda: lib.larc_case_prepare(b'{"mechanism": "gdn", "shape": "1,0,1,8,8"}'), "T must be at least 1"),
                        (lambda: lib.larc_case_json(None), "case: NULL"),
                        (lambda: lib.larc_case_read_fixture(b"/no/such.safetensors"), "/no/such.safetensors")]:
        with pytest.raises(ValueError, match=named):
            _native.checked(call())


def test_fla_qk_l2norm_names_call_fla_with_use_qk_l2norm_in_kernel(monkeypatch):
    """larc.fla's *_qk_l2norm callables call FLA's function with use_qk_l2norm_in_kernel=True (the plain ones
    without it), and tools/fla_diff.py runs each on fixtures of the mechanism larc.fla names for it."""
    calls = []
    for module, name in [("fla.ops.gated_delta_rule", "chunk_gated_delta_rule"), ("fla.ops.delta_rule", "chunk_delta_rule")]:
        stub = types.ModuleType(module)
        setattr(stub, name, lambda *args, _name=name, **kwargs: calls.append((_name, kwargs)) or ("o", "S"))
        monkeypatch.setitem(sys.modules, module, stub)
    from larc import fla
    fla.KERNELS["chunk_gated_delta_rule_qk_l2norm"]("q", "k", "v", "g", "beta", 0.25)
    fla.KERNELS["chunk_delta_rule_qk_l2norm"]("q", "k", "v", "beta", 0.25)
    fla.KERNELS["chunk_gated_delta_rule"]("q", "k", "v", "g", "beta", 0.25)
    assert [(name, kwargs.get("use_qk_l2norm_in_kernel")) for name, kwargs in calls] == [
        ("chunk_gated_delta_rule", True), ("chunk_delta_rule", True), ("chunk_gated_delta_rule", None)]

    spec = importlib.util.spec_from_file_location("fla_diff", Path(__file__).resolve().parents[2] / "tools" / "fla_diff.py")
    fla_diff = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fla_diff)
    assert fla_diff.functions_of("gdn-qk-l2norm") == ["chunk_gated_delta_rule_qk_l2norm"]
    assert fla_diff.functions_of("deltanet-qk-l2norm-backward") == ["chunk_delta_rule_qk_l2norm"]
    for mechanism, functions in fla_diff.FLA_FUNCTIONS_OF_MECHANISM.items():
        assert all(fla.FUNCTIONS[f][0] == mechanism for f in functions), mechanism


STAND_IN_GDN = '''"""A stand-in for FLA's gated delta rules: the numpy GDN of the tests, with the defect FLA_STAND_IN_DEFECTS
names for a function ("fused_recurrent_gated_delta_rule=dropped_carry")."""
import os
from numpy_gdn import gdn

DEFECTS = dict(d.split("=") for d in os.environ.get("FLA_STAND_IN_DEFECTS", "").split(",") if d)


def chunk_gated_delta_rule(q, k, v, g, beta, scale, initial_state=None, output_final_state=True):
    return gdn(q, k, v, g, beta, scale, initial_state, DEFECTS.get("chunk_gated_delta_rule"))


def fused_recurrent_gated_delta_rule(q, k, v, g, beta, scale, initial_state=None, output_final_state=True):
    return gdn(q, k, v, g, beta, scale, initial_state, DEFECTS.get("fused_recurrent_gated_delta_rule"))
'''
NO_STAND_IN = '''def __getattr__(name):
    def missing(*args, **kwargs):
        raise NotImplementedError(f"{name}: no stand-in")
    return missing
'''


def run_fla_diff(tmp_path, defects=""):
    """tools/fla_diff.py with a numpy stand-in for FLA (--device none) on two fp32 GDN fixtures and one of a
    mechanism FLA has no function for; returns (exit code, output, report)."""
    stand_in = tmp_path / "stand_in"
    for module, text in [("fla/__init__.py", "__version__ = 'stand-in'\n"), ("fla/ops/__init__.py", ""),
                         ("fla/ops/gated_delta_rule.py", STAND_IN_GDN), ("fla/ops/delta_rule.py", NO_STAND_IN),
                         ("fla/ops/gla.py", NO_STAND_IN), ("fla/ops/log_linear_attn.py", NO_STAND_IN)]:
        (stand_in / module).parent.mkdir(parents=True, exist_ok=True)
        (stand_in / module).write_text(text)
    fixtures = tmp_path / "fixtures"
    if not fixtures.exists():
        for name, mechanism, knobs in [("gdn_h0_fp32", "gdn", {"initial_state": 2}), ("gdn_fp32", "gdn", None),
                                       ("kla_fp32", "kla", None)]:
            larc.Case.prepare(mechanism, shape=SHAPE, seed=2, knobs=knobs).save(fixtures / f"{name}.safetensors")
    from larc import _native
    env = dict(os.environ, PYTHONPATH=f"{stand_in}{os.pathsep}{Path(__file__).parent}", LARC_LIBRARY=_native.library_path(),
               FLA_STAND_IN_DEFECTS=defects)
    out, report = tmp_path / ("fla_" + (defects or "honest").replace("=", "_")), tmp_path / "report.md"
    tool = Path(__file__).resolve().parents[2] / "tools" / "fla_diff.py"
    run = subprocess.run([sys.executable, str(tool), str(fixtures), "--out", str(out), "--device", "none", "--report",
                          str(report)], capture_output=True, text=True, env=env)
    return run.returncode, run.stdout + run.stderr, report.read_text() if report.exists() else "", out


def test_fla_diff_judges_honest_stand_ins_in_process(tmp_path):
    rc, output, report, out = run_fla_diff(tmp_path)
    assert rc == 0, output
    assert output.splitlines()[-1].startswith("PASS: 5 fixtures, FLA ran on 4, larc: 4 pass, 0 violations, 0 errors")
    assert "kla_fp32.safetensors: skipped: no FLA counterpart run here for mechanism 'kla'" in output
    assert "| gdn_h0_fp32.safetensors | fused_recurrent_gated_delta_rule | o (fp32) |" in report
    # Every judged run's outputs are a candidate `larc diff` judges again; nothing failed, nothing saved.
    assert len(list(out.glob("*.safetensors"))) == 4 and not (out / "failures").exists()


def test_fla_diff_names_the_output_a_defective_stand_in_breaks(tmp_path):
    rc, output, report, out = run_fla_diff(tmp_path, "fused_recurrent_gated_delta_rule=dropped_carry")
    assert rc == 1, output
    assert output.splitlines()[-1].startswith("FAIL: 5 fixtures, FLA ran on 4, larc: 2 pass, 2 violations, 0 errors")
    assert "gdn_fp32.safetensors: chunk_gated_delta_rule: o fp32 [1, 100, 2, 16], final_state fp32 [1, 2, 16, 16]; " \
           "two runs bitwise equal -> larc: pass" in output
    lines = [line for line in report.splitlines() if line.startswith("| gdn_fp32.safetensors | fused_recurrent")]
    assert any(line.startswith("| gdn_fp32.safetensors | fused_recurrent_gated_delta_rule | o (fp32) |")
               and line.endswith("| **violation** |") for line in lines), lines
    assert "first: timestep 64" in report
    # The failure is saved with its candidate; `larc diff` replays the verdict from the written candidate.
    failures = sorted((out / "failures").glob("*.candidate.safetensors"))
    assert len(failures) == 2, output
    program = os.environ.get("LARC_PROGRAM")
    if program and os.access(program, os.X_OK):
        candidate = out / "gdn_fp32.fused_recurrent_gated_delta_rule.safetensors"
        run = subprocess.run([program, "diff", str(tmp_path / "fixtures" / "gdn_fp32.safetensors"), str(candidate)],
                             capture_output=True, text=True)
        assert run.returncode == 1 and "o: FAIL" in run.stdout, run.stdout + run.stderr


def o_one_percent_off(q, k, v, g, beta, scale, initial_state=None):
    o, S = kernel()(q, k, v, g, beta, scale, initial_state)
    return o * np.float32(1.01), S


def test_a_random_cases_failure_is_saved_under_a_name_a_file_system_takes(tmp_path):
    """A random case's id spells every knob it draws; with the kernel's name its saved files' names would
    pass 255 bytes: they still get names a file system takes, two cases apart, and the fixture replays
    the case."""
    saved = []
    name = "TestChunkedGatedDeltaRuleKernels.test_forward_with_dropped_carry"
    for case in larc.cases("gdn", dtypes=["fp32"], random=2, grid=False, seed=5):
        assert len(f"{name}_gdn_{case.id}.candidate.safetensors") > 255, case.id  # the case this test is about
        result = case.run(o_one_percent_off, kernel=name, save_dir=tmp_path, shrink=False)
        assert not result.passed
        assert all(len(os.path.basename(p)) <= 255 for p in (result.fixture, result.candidate))
        assert larc.Case.from_fixture(result.fixture).spec["seed"] == case.spec["seed"]
        saved.append(result.fixture)
    assert len(set(saved)) == 2
