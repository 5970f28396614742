"""FLA's kernels gated by larc in-process on CUDA tensors (docs/python.md), with the grade FLA's
arithmetic promises: io for bf16/fp16 inputs, io:tf32-truncated for fp32 ones (Triton feeds fp32
registers to TF32 tensor cores unconverted). Run with `pytest --larc examples/python` where torch, FLA
and a GPU are; the tests skip elsewhere. Each test runs the gate's cases for its kernel: the shapes
below, --larc-random N random ones within the limits, or --larc-replay fixtures."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("fla")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

from larc.fla import KERNELS  # noqa: E402

SHAPES = [(1, 64, 2, 64, 64), (2, 300, 4, 64, 64), (1, 1000, 2, 128, 128)]
CASES = dict(dtypes=["bf16", "fp16", "fp32"], shapes=SHAPES, limits={"head_dims": [64, 128]})


@pytest.mark.larc("gdn", **CASES)
def test_chunk_gated_delta_rule(larc_case):
    larc_case.gate(KERNELS["chunk_gated_delta_rule"], device="cuda", grade="io:tf32-truncated")


@pytest.mark.larc("gdn", **CASES)
def test_fused_recurrent_gated_delta_rule(larc_case):
    larc_case.gate(KERNELS["fused_recurrent_gated_delta_rule"], device="cuda", grade="io:tf32-truncated")


@pytest.mark.larc("gla", **CASES)
def test_chunk_gla(larc_case):
    larc_case.gate(KERNELS["chunk_gla"], device="cuda", grade="io:tf32-truncated")


# FLA's chunk_delta_rule refuses float32 inputs ("does not support float32"): its cases are bf16 and fp16.
@pytest.mark.larc("deltanet", **dict(CASES, dtypes=["bf16", "fp16"]))
def test_chunk_delta_rule(larc_case):
    larc_case.gate(KERNELS["chunk_delta_rule"], device="cuda", grade="io:tf32-truncated")
