"""A forward kernel's gradients through torch autograd, as larc's gradient twins define them
(docs/gate.md "Gradient cases"): L = sum(do * o) + sum(dht * final_state), differentiated with respect
to the forward's inputs, each gradient named as the twin names it (q -> dq, initial_state -> dh0, ...).

Used by larc's gate (grad=True, python/larc/_case.py); it needs torch alone
(neither numpy nor the native library), and torch is imported by the caller's tensors, not here."""

# A forward input -> the gradient twin's output holding its gradient.
GRADIENT_OF = {"q": "dq", "k": "dk", "v": "dv", "g": "dg", "gk": "dgk", "beta": "dbeta", "eta": "deta",
               "level_scales": "dlevel_scales", "lambda": "dlambda", "initial_state": "dh0", "initial_normalizer": "dz0"}
INPUT_OF = {d: i for i, d in GRADIENT_OF.items()}


class BackwardRaised(Exception):
    """The backward (torch.autograd.grad through the callable's graph) raised `error`."""

    def __init__(self, error):
        super().__init__(f"{type(error).__name__}: {error}")
        self.error = error


def by_name(returned, order, owner="the mechanism"):
    """What a callable returned as {output name: value}: a dict as it is, a tuple or list in `order` (the
    outputs of `owner`), or anything else as "o" alone. Returns (dict, problem or None); None values (an
    output not computed) are left out, but for "o"."""
    if isinstance(returned, dict):
        items = list(returned.items())
    elif isinstance(returned, (tuple, list)):
        if len(returned) > len(order):
            return {}, (f"the callable returned {len(returned)} values; {owner} has {len(order)} outputs "
                        f"({', '.join(order)})")
        items = list(zip(order, returned))
    else:
        items = [("o", returned)]
    return {n: x for n, x in items if x is not None or n == "o"}, None


def differentiate(outputs, leaves, do, dht=None):
    """torch.autograd.grad of L = <do, o> + <dht, final_state> (no second term when dht is None) with
    respect to `leaves` ({forward input name: tensor with requires_grad}). Returns ({gradient name:
    tensor, or None where the graph does not reach the input}, problems): a problem, naming the output,
    when o or final_state is missing or not differentiable, and then no gradients. Raises BackwardRaised
    when the backward raises."""
    import torch

    pairs, problems = [("o", do)], []
    if dht is not None:
        pairs.append(("final_state", dht))
    for name, c in pairs:
        x = outputs.get(name)
        if x is None:
            problems.append(f"{name}: missing from what the callable returned" +
                            (" (the loss has the term <dht, final_state>: the case has a cotangent dht)" if name != "o" else ""))
        elif not isinstance(x, torch.Tensor):
            problems.append(f"{name}: expected a torch tensor, got {type(x).__module__}.{type(x).__name__}")
        elif tuple(x.shape) != tuple(c.shape):
            problems.append(f"{name}: shape {list(x.shape)} is not its cotangent's {list(c.shape)}")
        elif not x.requires_grad:
            problems.append(f"{name}: not differentiable (requires_grad is False): the callable must compute it from "
                            "its inputs with torch operations or a torch.autograd.Function")
    if problems:
        return {}, problems
    names = list(leaves)
    try:
        grads = torch.autograd.grad([outputs[n] for n, _ in pairs], [leaves[n] for n in names],
                                    grad_outputs=[c for _, c in pairs], allow_unused=True)
    except Exception as e:  # the kernel's backward (or autograd refusing its graph): the caller reports it
        raise BackwardRaised(e) from e
    return {GRADIENT_OF[n]: g for n, g in zip(names, grads)}, []
