# The CCQ T = 1 finding of reports/h200/torch/README.md: the failing case's kᵀq, its condition and the
# float32 relative errors of its 8-term sum over random summation orders. Run with the larc package:
#   PYTHONPATH=build/python python3 reports/h200/torch/ccq_t1_dot_orders.py
import random

import numpy as np
import larc

random.seed(1)
c = larc.Case.prepare("ccq-gdn", "fp32", (1, 1, 1, 8, 8), seed=1,
                      knobs={"entries": 1, "key_set": 1, "zero_decay_fraction": 0.25})
x = c.inputs()
p = c.parameters()
print({k: (v.shape if hasattr(v, "shape") else v) for k, v in x.items()}, {k: v for k, v in p.items()})
q, k, v, beta = (x[n][0, 0, 0].astype(np.float64) for n in ("q", "k", "v", "beta"))
scale = p["scale"]
exact_dot = sum(np_q * np_k for np_q, np_k in zip(q, k))
cond = np.sum(np.abs(q * k)) / abs(exact_dot)
print("kq", exact_dot, "sum|q k|/|kq| =", cond)
o = c.oracle("o")[0, 0, 0]
# float32 dot products in random summation orders (with and without FMA-like single rounding of products)
q32, k32 = q.astype(np.float32), k.astype(np.float32)
errs = []
for trial in range(2000):
    order = list(range(8)); random.shuffle(order)
    acc = np.float32(0)
    for i in order:
        acc = np.float32(acc + np.float32(q32[i] * k32[i]))
    errs.append(abs(float(acc) - exact_dot) / abs(exact_dot))
errs = np.array(errs)
print("relative error of kq over 2000 float32 summation orders: median %.2e, 90%% %.2e, max %.2e" % (np.median(errs), np.quantile(errs, 0.9), errs.max()))
print("u32 =", 2**-24, "; kernel's o relative error 1.12e-6, reference forms 2.7e-7..5.2e-7")
