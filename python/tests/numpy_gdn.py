"""A gated delta rule in numpy with the semantics of FLA's chunk_gated_delta_rule (inputs q, k, v
[B,T,H,K|V], g [B,T,H] log-decays, beta [B,T,H], optional initial_state [B,H,K,V] in float32; outputs o
and the final state), computed token by token in float32: the honest kernel of the tests, and its
planted defects (each a bug a real kernel could have)."""
import numpy as np

CHUNK = 64


def gdn(q, k, v, g, beta, scale, initial_state=None, defect=None):
    B, T, H, K = q.shape
    V = v.shape[-1]
    f32 = np.float32
    q, k, v, g, beta = (np.asarray(x, dtype=f32) for x in (q, k, v, g, beta))
    if defect == "wrong_offset":  # the second sequence reads the first one's keys (a batch stride of 0)
        k = k.copy()
        k[1:] = k[0]
    if defect == "shared_beta":  # every head takes the first head's beta (a head stride of 0)
        beta = beta.copy()
        beta[:, :, 1:] = beta[:, :, :1]
    S = np.zeros((B, H, K, V), f32) if initial_state is None else np.array(initial_state, dtype=f32)
    o = np.empty((B, T, H, V), f32)
    for t in range(T):
        if defect == "dropped_carry" and t > 0 and t % CHUNK == 0:
            S[:] = 0  # the state is not carried into the next chunk
        decay = np.exp2(g[:, t]) if defect == "wrong_decay" else np.exp(g[:, t])  # 2^g instead of e^g
        read_before = S * decay[:, :, None, None] if defect == "off_by_one_mask" else None
        S = S * decay[:, :, None, None]
        kt = k[:, t]
        u = beta[:, t][..., None] * (v[:, t] - np.einsum("bhk,bhkv->bhv", kt, S))
        S = S + kt[..., None] * u[..., None, :]
        # off_by_one_mask: token t does not see itself (a strictly causal mask)
        o[:, t] = f32(scale) * np.einsum("bhk,bhkv->bhv", q[:, t], S if read_before is None else read_before)
    return o, S


def kernel(defect=None, out_dtype=None):
    """A callable taking FLA's arguments; out_dtype: the dtype of o (default: float16 for fp16 inputs,
    else float32)."""
    def run(q, k, v, g, beta, scale, initial_state=None):
        o, S = gdn(q, k, v, g, beta, scale, initial_state, defect)
        if q.dtype == np.float16:
            o = o.astype(np.float16)
        return (o if out_dtype is None else o.astype(out_dtype)), S
    run.__qualname__ = f"numpy_gdn_{defect or 'honest'}"
    return run


def l2norm(x, eps=1e-6):
    """FLA's in-kernel l2norm in float32: x / sqrt(||x||^2 + eps) over the last axis (one token of one head)."""
    x = np.asarray(x, dtype=np.float32)
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + np.float32(eps))


def l2norm_kernel(defect=None):
    """A callable with the semantics of FLA's chunk_gated_delta_rule(..., use_qk_l2norm_in_kernel=True): raw q
    and k normalised in float32, then the GDN above. Defect "q_not_normalized": only k is normalised."""
    def run(q, k, v, g, beta, scale, initial_state=None):
        q_read = np.asarray(q, dtype=np.float32) if defect == "q_not_normalized" else l2norm(q)
        o, S = gdn(q_read, l2norm(k), v, g, beta, scale, initial_state)
        return (o.astype(np.float16) if q.dtype == np.float16 else o), S
    run.__qualname__ = f"numpy_gdn_qk_l2norm_{defect or 'honest'}"
    return run
