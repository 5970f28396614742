"""flash-linear-attention's kernels as larc callables: each takes a case's inputs by larc's names
(FLA's layout) and returns (o, final_state), so that

    larc.gate(larc.fla.KERNELS["chunk_gated_delta_rule"], mechanism="gdn", dtype="bf16", device="cuda")

gates FLA's kernel. A name ending in _qk_l2norm is FLA's function called with use_qk_l2norm_in_kernel=True
(raw q and k, normalised inside the kernel), gated on the mechanism that normalises them too:

    larc.gate(larc.fla.KERNELS["chunk_gated_delta_rule_qk_l2norm"], mechanism="gdn-qk-l2norm", dtype="bf16", device="cuda")
 Each is also the forward that grad=True differentiates: FLA's backward runs through
torch autograd on FLA's functions, with the case's cotangents (docs/python.md, "Gradient cases"):

    larc.gate(larc.fla.KERNELS["fused_recurrent_gla"], mechanism="gla", dtype="bf16", device="cuda", grad=True)

FLA is imported when a kernel is first called."""
import importlib
import inspect

# larc's name of an FLA call -> (larc mechanism, FLA module)
FUNCTIONS = {
    "chunk_gated_delta_rule": ("gdn", "fla.ops.gated_delta_rule"),
    "fused_recurrent_gated_delta_rule": ("gdn", "fla.ops.gated_delta_rule"),
    "chunk_delta_rule": ("deltanet", "fla.ops.delta_rule"),
    "fused_recurrent_delta_rule": ("deltanet", "fla.ops.delta_rule"),
    "chunk_gla": ("gla", "fla.ops.gla"),
    "fused_recurrent_gla": ("gla", "fla.ops.gla"),
    "chunk_log_linear_attn": ("log-linear", "fla.ops.log_linear_attn"),
    "chunk_gated_delta_rule_qk_l2norm": ("gdn-qk-l2norm", "fla.ops.gated_delta_rule"),
    "chunk_delta_rule_qk_l2norm": ("deltanet-qk-l2norm", "fla.ops.delta_rule"),
}
# The suffix of a call with use_qk_l2norm_in_kernel=True.
QK_L2NORM = "_qk_l2norm"


def function(name):
    """FLA's function behind larc's name `name` (for a _qk_l2norm name, the function it calls with
    use_qk_l2norm_in_kernel=True); ImportError when FLA or the function is missing."""
    return getattr(importlib.import_module(FUNCTIONS[name][1]), name.removesuffix(QK_L2NORM))


def _options(name):
    """The keyword arguments FLA's delta rules are called with under larc's name `name`."""
    return {"use_qk_l2norm_in_kernel": True} if name.endswith(QK_L2NORM) else {}


def _gated_delta_rule(name):
    def run(q, k, v, g, beta, scale, initial_state=None):
        return function(name)(q, k, v, g=g, beta=beta, scale=scale, initial_state=initial_state, output_final_state=True,
                              **_options(name))
    run.__qualname__ = f"fla.{name}"
    return run


def _delta_rule(name):
    def run(q, k, v, beta, scale, initial_state=None):
        return function(name)(q, k, v, beta=beta, scale=scale, initial_state=initial_state, output_final_state=True,
                              **_options(name))
    run.__qualname__ = f"fla.{name}"
    return run


def chunk_gla(q, k, v, gk, scale, initial_state=None):
    return function("chunk_gla")(q, k, v, g=gk, scale=scale, initial_state=initial_state, output_final_state=True)


def fused_recurrent_gla(q, k, v, gk, scale, initial_state=None):
    return function("fused_recurrent_gla")(q, k, v, gk=gk, scale=scale, initial_state=initial_state,
                                           output_final_state=True)


def chunk_log_linear_attn(q, k, v, g, level_scales, scale=None):
    """FLA's log-linear attention: o only (its final state is per level, not one [B,H,K,V] tensor). Older
    FLA versions take no scale; they apply none, which must then be larc's."""
    fn = function("chunk_log_linear_attn")
    kwargs = {}
    if "scale" in inspect.signature(fn).parameters:
        kwargs["scale"] = 1.0 if scale is None else scale
    elif scale not in (None, 1.0):
        raise ValueError(f"this FLA's chunk_log_linear_attn takes no scale; the case needs scale {scale}")
    o, _ = fn(q, k, v, g, level_scales, **kwargs)
    return o


chunk_gla.__qualname__ = "fla.chunk_gla"
fused_recurrent_gla.__qualname__ = "fla.fused_recurrent_gla"
chunk_log_linear_attn.__qualname__ = "fla.chunk_log_linear_attn"
KERNELS = {
    "chunk_gated_delta_rule": _gated_delta_rule("chunk_gated_delta_rule"),
    "fused_recurrent_gated_delta_rule": _gated_delta_rule("fused_recurrent_gated_delta_rule"),
    "chunk_delta_rule": _delta_rule("chunk_delta_rule"),
    "fused_recurrent_delta_rule": _delta_rule("fused_recurrent_delta_rule"),
    "chunk_gated_delta_rule_qk_l2norm": _gated_delta_rule("chunk_gated_delta_rule_qk_l2norm"),
    "chunk_delta_rule_qk_l2norm": _delta_rule("chunk_delta_rule_qk_l2norm"),
    "chunk_gla": chunk_gla,
    "fused_recurrent_gla": fused_recurrent_gla,
    "chunk_log_linear_attn": chunk_log_linear_attn,
}
