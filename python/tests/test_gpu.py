"""larc.gpu: larc's own CUDA kernels on torch tensors. Without liblarc_gpu.so (a build without CUDA)
the module says so; with it the registry and argument checking work without a device; with a device
(torch.cuda), larc's kernels pass the gate from torch and planted defects around them fail."""
import json

import pytest

import larc
import larc.gpu as lg

needs_library = pytest.mark.skipif(not lg.available(), reason="larc was built without CUDA (no liblarc_gpu.so)")


def cuda_torch():
    torch = pytest.importorskip("torch")
    if not lg.available() or not torch.cuda.is_available():
        pytest.skip("needs liblarc_gpu.so and a CUDA device")
    return torch


def test_without_the_library_every_call_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setenv("LARC_GPU_LIBRARY", str(tmp_path / "absent" / "liblarc_gpu.so"))
    lg.LIBRARY.forget()
    assert not lg.available()
    with pytest.raises(RuntimeError, match="built only where CUDA"):
        lg.kernels()
    with pytest.raises(RuntimeError, match="built only where CUDA"):
        lg.kernel("gdn-fused-recurrent")
    monkeypatch.undo()
    lg.LIBRARY.forget()


@needs_library
def test_the_registry_is_gpus_and_names_each_kernels_mechanism_and_limits():
    ks = {(k["name"], k["mechanism"]): k for k in lg.kernels()}
    gdn = ks[("gdn-fused-recurrent", "gdn")]
    assert set(gdn["dtypes"]) == {"bf16", "fp16", "fp32"}
    assert gdn["limits"]["initial_state"] and gdn["limits"]["scale"]
    assert ks[("gdn-fused-recurrent-varlen", "gdn")]["limits"]["varlen"]
    mechanisms = larc.mechanisms()
    assert all(m in mechanisms for _, m in ks), "a kernel names a mechanism the harness lacks"


@needs_library
def test_unknown_kernels_and_varlen_callables_are_refused_by_name():
    with pytest.raises(ValueError, match="no larc kernel 'gdn-nonesuch'.*gdn-chunked"):
        lg.kernel("gdn-nonesuch")
    with pytest.raises(ValueError, match="cu_seqlens"):
        lg.kernel("gdn-fused-recurrent-varlen")


@needs_library
def test_malformed_launch_arguments_name_the_field():
    lib = lg._library()

    def message(args, name=b"gdn-fused-recurrent", mechanism=b"gdn"):
        ptr = lib.larc_gpu_launch(name, mechanism, 0, None, json.dumps(args).encode() if isinstance(args, dict) else args)
        assert ptr, "a malformed launch was accepted"
        return lg._take(ptr)

    q = {"data": 0, "dtype": "bf16", "shape": [1, 4, 1, 16]}
    assert "inputs.q.dtype: 'bf17'" in message({"inputs": {"q": {**q, "dtype": "bf17"}}})
    assert "inputs.q.data: expected the tensor's device address" in message({"inputs": {"q": {**q, "data": -1}}})
    assert "inputs.q.shape: expected an array of integers" in message({"inputs": {"q": {**q, "shape": [1, "T"]}}})
    assert "args: expected a JSON object" in message(b"[1, 2")
    assert "no kernel 'gdn-fused-recurrent' of mechanism 'kla'" in message({}, mechanism=b"kla")
    ptr = lib.larc_gpu_launch(b"gdn-fused-recurrent", b"gdn", -1, None, b"{}")
    assert "device: expected a device index >= 0" in lg._take(ptr)


@needs_library
def test_tensors_that_are_not_cuda_tensors_are_refused_before_any_launch():
    np = pytest.importorskip("numpy")
    with pytest.raises(ValueError, match="q: expected a torch tensor on a CUDA device"):
        lg.launch("gdn-fused-recurrent", {"q": np.zeros((1, 4, 1, 16), np.float32)}, {})


# The kernels gated from torch: one of each write rule and form, with the initial state and the read
# scale where the kernel takes them.
GATED = [("gdn-fused-recurrent", "gdn"), ("gdn-chunked", "gdn"), ("deltanet-fused-recurrent", "deltanet"),
         ("kla-chunked", "kla"), ("gla-fused-recurrent", "gla"), ("la-fused-recurrent", "la")]


@pytest.mark.parametrize("name,mechanism", GATED, ids=[n for n, _ in GATED])
@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_larcs_kernels_pass_the_gate_from_torch(name, mechanism, dtype):
    cuda_torch()
    k = lg.kernel(name, mechanism)
    knobs = {"initial_state": 2} if k.entry["limits"]["initial_state"] else {}
    if k.entry["limits"]["scale"]:
        knobs["scale_factor"] = 2.0
    result = larc.gate(k, mechanism=mechanism, dtype=dtype, shape=(1, 130, 2, 64, 64), seed=3, knobs=knobs,
                       device="cuda")
    assert result.passed


def test_planted_defects_around_a_kernel_fail_naming_the_output():
    torch = cuda_torch()
    k = lg.kernel("gdn-chunked", "gdn")

    def scale_off(scale, **inputs):  # the read scale 1 % off
        return k(scale=scale * 1.01, **inputs)

    def initial_state_dropped(initial_state, **inputs):
        return k(initial_state=torch.zeros_like(initial_state), **inputs)

    def last_token_stale(**inputs):  # o's last token left as another token's
        out = k(**inputs)
        out["o"][:, -1] = out["o"][:, -2]
        return out

    # The initial state's part of the final state has decayed away by T = 130 (g down to -1): o's first
    # tokens are where dropping it shows.
    for defect, output in [(scale_off, "o"), (initial_state_dropped, "o"), (last_token_stale, "o")]:
        with pytest.raises(larc.GateFailure) as failure:
            larc.gate(defect, mechanism="gdn", dtype="fp32", shape=(1, 130, 2, 64, 64), seed=3,
                      knobs={"initial_state": 2}, device="cuda", save_dir=None)
        line = next(x for x in str(failure.value).splitlines() if x.startswith(f"  {output} "))
        assert "FAIL" in line, f"{defect.__name__}: {line}"


def test_a_launch_the_kernel_refuses_raises_its_message():
    torch = cuda_torch()
    q = torch.zeros((1, 8, 1, 16), dtype=torch.bfloat16, device="cuda")
    with pytest.raises(ValueError, match="gdn-fused-recurrent"):
        lg.launch("gdn-fused-recurrent", {"q": q, "k": q}, {"o": torch.zeros((1, 8, 1, 17), device="cuda")})


def test_a_launch_runs_on_torchs_current_stream():
    torch = cuda_torch()
    k = lg.kernel("gdn-fused-recurrent", "gdn")
    case = larc.Case.prepare("gdn", "fp32", (1, 64, 1, 16, 16), seed=1)
    inputs, parameters = case.inputs(device="cuda"), case.parameters()
    on_default = k(**inputs, **parameters)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        on_side = k(**inputs, **parameters)
    side.synchronize()  # only the side stream: the result is complete if the kernel ran there
    assert torch.equal(on_side["o"], on_default["o"]) and torch.equal(on_side["final_state"], on_default["final_state"])
