"""GDN and GLA token by token in torch, float32 arithmetic (FLA's semantics: o in the inputs' dtype, the
final state float32), so that torch autograd through the loop is an honest serial backward; and planted
defects in that backward, each a bug a hand-written backward kernel could have, the forward untouched:

  dropped_carry  dL/dS is not carried from a chunk (64 tokens) into the one before it
  dk_scaled      dk scaled by 0.99
  dv_shifted     dv one token late (dv[t] holds the gradient of v[t-1])
  decay_chain    the decay's gradient without the chain factor: d exp(g)/dg taken as 1
  dh0_detached   the initial state detached: no gradient for it at all
"""
import torch

CHUNK = 64


class _EditGradient(torch.autograd.Function):
    """The identity, whose backward hands edit(gradient) on."""

    @staticmethod
    def forward(ctx, x, edit):
        ctx.edit = edit
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return ctx.edit(grad), None


class _ExpWithoutChain(torch.autograd.Function):
    """exp(g) forward; the backward passes the gradient through unscaled (missing the factor exp(g))."""

    @staticmethod
    def forward(ctx, g):
        return torch.exp(g)

    @staticmethod
    def backward(ctx, grad):
        return grad


def _shift_one_token(grad):
    return torch.cat([torch.zeros_like(grad[:, :1]), grad[:, :-1]], dim=1)


def _edited(x, defect, name):
    edits = {("dk_scaled", "k"): lambda d: d * 0.99, ("dv_shifted", "v"): _shift_one_token}
    edit = edits.get((defect, name))
    return x if edit is None else _EditGradient.apply(x, edit)


def _start_state(initial_state, B, H, K, V, defect, like):
    if initial_state is None:
        return torch.zeros(B, H, K, V, dtype=torch.float32, device=like.device)
    return initial_state.detach().float() if defect == "dh0_detached" else initial_state.float()


def _carry(S, t, defect):
    if defect == "dropped_carry" and t > 0 and t % CHUNK == 0:
        return _EditGradient.apply(S, torch.zeros_like)
    return S


def _decay(g, defect):
    return _ExpWithoutChain.apply(g) if defect == "decay_chain" else torch.exp(g)


def gdn(q, k, v, g, beta, scale, initial_state=None, defect=None):
    """FLA's chunk_gated_delta_rule: S = exp(g) S; S += k (beta (v - k^T S))^T; o = scale q^T S."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    qf, kf, vf = q.float(), _edited(k.float(), defect, "k"), _edited(v.float(), defect, "v")
    gf, bf = g.float(), beta.float()
    S = _start_state(initial_state, B, H, K, V, defect, q)
    outs = []
    for t in range(T):
        S = _carry(S, t, defect) * _decay(gf[:, t], defect)[..., None, None]
        kt = kf[:, t]
        u = bf[:, t][..., None] * (vf[:, t] - torch.einsum("bhk,bhkv->bhv", kt, S))
        S = S + kt[..., None] * u[..., None, :]
        outs.append(scale * torch.einsum("bhk,bhkv->bhv", qf[:, t], S))
    return torch.stack(outs, dim=1).to(q.dtype), S


def gla(q, k, v, gk, scale, initial_state=None, defect=None):
    """FLA's chunk_gla: S = diag(exp(gk)) S + k v^T; o = scale q^T S."""
    B, T, H, K = q.shape
    V = v.shape[-1]
    qf, kf, vf = q.float(), _edited(k.float(), defect, "k"), _edited(v.float(), defect, "v")
    gf = gk.float()
    S = _start_state(initial_state, B, H, K, V, defect, q)
    outs = []
    for t in range(T):
        S = _carry(S, t, defect) * _decay(gf[:, t], defect)[..., None]
        S = S + kf[:, t][..., None] * vf[:, t][..., None, :]
        outs.append(scale * torch.einsum("bhk,bhkv->bhv", qf[:, t], S))
    return torch.stack(outs, dim=1).to(q.dtype), S


def kernel(mechanism="gdn", defect=None):
    """A forward callable taking the case's inputs by larc's names; returns (o, final_state)."""
    if mechanism == "gdn":
        def run(q, k, v, g, beta, scale, initial_state=None):
            return gdn(q, k, v, g, beta, scale, initial_state, defect)
    else:
        def run(q, k, v, gk, scale, initial_state=None):
            return gla(q, k, v, gk, scale, initial_state, defect)
    run.__qualname__ = f"torch_{mechanism}_{defect or 'honest'}"
    return run
