#!/usr/bin/env python3
"""Draws the figures of larc's accuracy report (docs/accuracy) from the data `larc report` wrote.

    plot_accuracy.py --data DIR --out DIR FIGURE...

Each FIGURE is the name of one figure (error_vs_T, timestep_error, state_norms, vla_jacobian, recall,
oracle_certification, gradient_error_vs_T, dg_forms); FIGURE.png is written into --out from the CSV/JSON files in --data. Nothing is
computed here beyond grouping and taking maxima: the numbers come from larc. `larc report` runs this
script after writing the data; run it alone to redraw a figure. Needs matplotlib (Debian's
python3-matplotlib); uses the Agg backend (no display).
"""
import argparse
import csv
import json
import math
import os
import sys
from collections import defaultdict

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError as e:  # larc checks for matplotlib before computing; this is for direct runs
    sys.exit(f"plot_accuracy.py: matplotlib is missing ({e}); install Debian's python3-matplotlib")

DTYPE_COLOURS = {"bf16": "tab:red", "fp16": "tab:orange", "fp32": "tab:blue"}
FORM_STYLES = {"serial": ("o", "-"), "chunked": ("s", "--"), "streamed": ("^", ":")}
MECH_COLOURS = {}


def mech_colour(name):
    """One colour per mechanism in order of appearance: tab10's, then tab20's light shades (20 in all)."""
    if name not in MECH_COLOURS:
        i = len(MECH_COLOURS) % 20
        MECH_COLOURS[name] = plt.get_cmap("tab10")(i) if i < 10 else plt.get_cmap("tab20")(2 * (i - 10) + 1)
    return MECH_COLOURS[name]


def read_csv(data, name):
    with open(os.path.join(data, name), newline="") as f:
        return list(csv.DictReader(f))


def number(s):
    return float(s) if s != "" else math.nan


def positive(x, floor):
    """Log axes cannot show 0: exact results are drawn at `floor` (the captions say so)."""
    return x if x > 0 else floor


def panel_grid(n, width=3.6, height=2.8, cols=4):
    cols = min(cols, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    flat = [a for row in axes for a in row]
    for a in flat[n:]:
        a.set_visible(False)
    return fig, flat[:n]


def error_vs_T(data, out):
    rows = read_csv(data, "error_vs_T.csv")
    mechanisms = list(dict.fromkeys(r["mechanism"] for r in rows))
    fig, axes = panel_grid(len(mechanisms))
    unit = {r["dtype"]: number(r["unit_roundoff"]) for r in rows}
    for ax, mech in zip(axes, mechanisms):
        worst = defaultdict(float)  # (source, kernel, form, dtype, T) -> max over seeds
        for r in rows:
            if r["mechanism"] == mech:
                key = (r["source"], r["kernel"], r["form"], r["dtype"], int(r["T"]))
                worst[key] = max(worst[key], number(r["max_rel_err"]))
        curves = defaultdict(list)
        for (source, kernel, form, dtype, T), e in sorted(worst.items()):
            curves[(source, kernel, form, dtype)].append((T, positive(e, 1e-17)))
        for (source, kernel, form, dtype), pts in curves.items():
            xs, ys = zip(*pts)
            if source == "h200":
                # One legend entry per dtype: the panel names the mechanism, and its kernels (plain and
                # varlen) share the entry.
                ax.plot(xs, ys, "x", color=DTYPE_COLOURS.get(dtype, "black"), markersize=7, markeredgewidth=1.6,
                        label=f"H200 kernels {dtype}")
            else:
                marker, line = FORM_STYLES.get(form, ("d", "-."))
                ax.plot(xs, ys, marker=marker, linestyle=line, color=DTYPE_COLOURS.get(dtype, "gray"), markersize=4,
                        label=f"{form} {dtype}")
        for dtype, u in unit.items():
            ax.axhline(u, color=DTYPE_COLOURS.get(dtype, "gray"), linewidth=0.8, linestyle=(0, (4, 3)), alpha=0.7)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(mech, fontsize=10)
        ax.set_xlabel("T")
        ax.set_ylabel("max_t rel. error")
        ax.grid(True, which="major", alpha=0.3)
    handles, labels = [], []
    for ax in axes:
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in labels:
                handles.append(h)
                labels.append(l)
    fig.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), fontsize=8, frameon=False)
    fig.suptitle("Error against the dd oracle versus T (worst timestep, worst seed); dashed: the dtype's unit roundoff u",
                 fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 0.97))
    fig.savefig(out, dpi=110)


def timestep_error(data, out):
    rows = read_csv(data, "timestep_error.csv")
    with open(os.path.join(data, "accuracy_grid.json")) as f:
        chunk = json.load(f)["chunk"]
    mechanisms = list(dict.fromkeys(r["mechanism"] for r in rows if r["form"] == "chunked"))
    fig, axes = plt.subplots(len(mechanisms), 1, figsize=(11, 1.6 * len(mechanisms) + 0.8), sharex=True, squeeze=False)
    T = max(int(r["T"]) for r in rows)
    for ax, mech in zip([a[0] for a in axes], mechanisms):
        for form, colour in (("serial", "tab:gray"), ("chunked", "tab:blue")):
            pts = [(int(r["t"]), positive(number(r["rel_err"]), 1e-17)) for r in rows if r["mechanism"] == mech and r["form"] == form]
            if pts:
                xs, ys = zip(*pts)
                ax.plot(xs, ys, color=colour, linewidth=0.7, label=form)
        for b in range(chunk, T, chunk):
            ax.axvline(b - 0.5, color="black", linewidth=0.5, linestyle=":", alpha=0.6)
        ax.set_yscale("log")
        ax.set_ylabel(mech, fontsize=9)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0][0].legend(loc="upper left", fontsize=8, ncol=2)
    axes[-1][0].set_xlabel("timestep t")
    fig.suptitle(f"fp32 relative error per timestep at T = {T}: chunked (C = {chunk}) and serial; dotted: chunk boundaries",
                 fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(out, dpi=80)  # dense noisy lines: a lower resolution keeps the PNG small


def state_norms(data, out):
    rows = read_csv(data, "state_norms.csv")
    means = sorted({number(r["value_mean"]) for r in rows})
    fig, axes = plt.subplots(1, len(means), figsize=(6.2 * len(means), 4.4), squeeze=False)
    for ax, vm in zip(axes[0], means):
        for mech in dict.fromkeys(r["mechanism"] for r in rows):
            pts = [(int(r["t"]), number(r["mean_norm"]), number(r["min_norm"]), number(r["max_norm"]))
                   for r in rows if r["mechanism"] == mech and number(r["value_mean"]) == vm]
            t, m, lo, hi = zip(*pts)
            ax.plot(t, m, color=mech_colour(mech), label=mech)
            ax.fill_between(t, lo, hi, color=mech_colour(mech), alpha=0.15, linewidth=0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("t (tokens written)")
        ax.set_ylabel("‖S_t‖_F")
        ax.set_title(f"values of mean {vm:g}", fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=8)
    trials = rows[0]["trials"]
    fig.suptitle(f"State norm versus t, memory level, d = 32 (mean over {trials} trials; band: smallest to largest)",
                 fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(out, dpi=110)


def vla_jacobian(data, out):
    rows = read_csv(data, "vla_jacobian.csv")
    fig, ax = plt.subplots(figsize=(7.5, 5))
    c = [number(r["c"]) for r in rows]
    n = [number(r["spectral_norm"]) for r in rows]
    ax.scatter(c, n, s=8, alpha=0.6, color="tab:blue", label=f"‖J_t‖₂ measured (SVD), {len(rows)} steps")
    grid = [i / 400 for i in range(1, 401)]
    closed = [math.sqrt((3 - 2 * x + math.sqrt(5 - 4 * x)) / 2) for x in grid]
    ax.plot(grid, closed, color="black", linewidth=1.2, label="closed form √((3 − 2c + √(5 − 4c))/2)")
    ax.axhline(1, color="tab:red", linestyle="--", linewidth=1, label="paper's claim ‖J_t‖₂ = 1")
    ax.axhline((1 + math.sqrt(5)) / 2, color="gray", linestyle=":", linewidth=1, label="φ = (1+√5)/2 (c → 0)")
    ax.set_xlim(0, 1.02)
    ax.set_xlabel("c = k̂_t · α̂_t")
    ax.set_ylabel("‖J_t‖₂")
    ax.set_title("VLA per-step Jacobian J_t = I − k̂_t α̂_tᵀ (d_h ≥ 2)", fontsize=11)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def recall(data, out):
    rows = read_csv(data, "recall.csv")
    fig, axes = plt.subplots(1, 2, figsize=(12.5, 4.4))
    for ax, sweep, x, label in ((axes[0], "pairs", "pairs", "pairs n (no fillers, T = n)"),
                                (axes[1], "length", "T", "sequence length T (n = 8 pairs among fillers)")):
        for mech in dict.fromkeys(r["mechanism"] for r in rows):
            pts = [(int(r[x]), number(r["accuracy"])) for r in rows if r["sweep"] == sweep and r["mechanism"] == mech]
            xs, ys = zip(*pts)
            ax.plot(xs, ys, marker="o", markersize=4, color=mech_colour(mech), label=mech)
        ax.set_xscale("log", base=2)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel(label)
        ax.set_ylabel("recall accuracy")
        ax.grid(True, alpha=0.3)
    axes[0].axvline(32, color="gray", linestyle=":", linewidth=1)
    axes[0].text(32, 0.5, " n = d_h", fontsize=8, color="gray")
    axes[1].legend(fontsize=8)
    fig.suptitle(f"Recall at the memory level, d_h = 32 (mean over {rows[0]['trials']} trials)", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(out, dpi=110)


def oracle_certification(data, out):
    rows = read_csv(data, "oracle_certification.csv")
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
    floor = 1e-18
    for mech in dict.fromkeys(r["mechanism"] for r in rows):
        mine = [r for r in rows if r["mechanism"] == mech]
        worst = defaultdict(float)
        for r in mine:
            worst[int(r["T"])] = max(worst[int(r["T"])], number(r["double_vs_dd"]))
        xs = sorted(worst)
        left.plot(xs, [positive(worst[t], floor) for t in xs], marker="o", markersize=3, color=mech_colour(mech), label=mech)
        f128 = sorted((int(r["T"]), number(r["float128_vs_dd"])) for r in mine if r["float128_vs_dd"] != "")
        if f128:
            left.plot([t for t, _ in f128], [positive(e, floor) for _, e in f128], marker="x", linestyle="none",
                      color=mech_colour(mech))
        margin = defaultdict(lambda: math.inf)
        for r in mine:
            if r["dtype"] == "fp32":
                margin[int(r["T"])] = min(margin[int(r["T"])], number(r["certification_margin"]))
        xs = sorted(margin)
        right.plot(xs, [margin[t] for t in xs], marker="o", markersize=3, color=mech_colour(mech), label=mech)
    left.axhline(2.0 ** -53, color="gray", linestyle=":", linewidth=1)
    left.annotate("u64 = 2⁻⁵³", (0.01, 2.0 ** -53), xycoords=("axes fraction", "data"), fontsize=8, color="gray",
                  va="bottom")
    left.set_title("rung differences: double − dd (o), float128 − dd (x, 0 drawn at 1e-18)", fontsize=10)
    left.set_ylabel("max_t ‖x_t − o_t‖ / ‖o_t‖")
    right.axhline(1000, color="tab:red", linestyle="--", linewidth=1, label="required: 1000")
    right.set_title("fp32 certification margin min_t u‖o_t‖ / estimate_t (worst seed)", fontsize=10)
    right.set_ylabel("margin")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("T")
        ax.grid(True, which="major", alpha=0.3)
    right.legend(fontsize=7, ncol=2)
    fig.suptitle("The oracle's self-certification (serial form; dd_real oracle kept in float64)", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(out, dpi=110)


GRADIENT_MARKERS = ["o", "s", "^", "v", "D", "P", "X", "*"]


def gradient_error_vs_T(data, out):
    rows = read_csv(data, "gradient_error_vs_T.csv")
    twins = list(dict.fromkeys(r["mechanism"] for r in rows))
    fig, axes = panel_grid(len(twins))
    unit = {r["dtype"]: number(r["unit_roundoff"]) for r in rows}
    for ax, twin in zip(axes, twins):
        mine = [r for r in rows if r["mechanism"] == twin]
        gradients = list(dict.fromkeys(r["gradient"] for r in mine))
        worst = defaultdict(float)  # (gradient, dtype, T) -> max over seeds
        for r in mine:
            key = (r["gradient"], r["dtype"], int(r["T"]))
            worst[key] = max(worst[key], number(r["rel_rms"]))
        curves = defaultdict(list)
        for (gradient, dtype, T), e in sorted(worst.items()):
            curves[(gradient, dtype)].append((T, positive(e, 1e-17)))
        for (gradient, dtype), pts in curves.items():
            xs, ys = zip(*pts)
            marker = GRADIENT_MARKERS[gradients.index(gradient) % len(GRADIENT_MARKERS)]
            ax.plot(xs, ys, marker=marker, color=DTYPE_COLOURS.get(dtype, "gray"), markersize=4, linewidth=0.9,
                    label=gradient if dtype == "fp32" else None)
        for dtype, u in unit.items():
            ax.axhline(u, color=DTYPE_COLOURS.get(dtype, "gray"), linewidth=0.8, linestyle=(0, (4, 3)), alpha=0.7)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(twin, fontsize=10)
        ax.set_xlabel("T")
        ax.set_ylabel("‖y − o‖ / ‖o‖")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=6, ncol=2, title="marker: gradient", title_fontsize=6)
    fig.suptitle("Gradients: float serial adjoint against the dd oracle versus T (whole tensor, worst seed); colour: "
                 "dtype (bf16 red, fp16 orange, fp32 blue); dashed: the dtype's unit roundoff u", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(out, dpi=110)


def dg_forms(data, out):
    rows = read_csv(data, "dg_forms.csv")
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8))
    styles = {"direct": ("o", "-"), "identity": ("s", "--")}
    for ax, column in ((left, "rel_rms"), (right, "max_rel_err")):
        worst = defaultdict(float)  # (form, dtype, T) -> max over seeds
        for r in rows:
            key = (r["form"], r["dtype"], int(r["T"]))
            worst[key] = max(worst[key], number(r[column]))
        curves = defaultdict(list)
        for (form, dtype, T), e in sorted(worst.items()):
            curves[(form, dtype)].append((T, positive(e, 1e-17)))
        for (form, dtype), pts in curves.items():
            xs, ys = zip(*pts)
            marker, line = styles.get(form, ("d", "-."))
            ax.plot(xs, ys, marker=marker, linestyle=line, color=DTYPE_COLOURS.get(dtype, "gray"), markersize=4,
                    label=f"{form} {dtype}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("T")
        ax.grid(True, which="major", alpha=0.3)
    left.set_title("whole tensor ‖dg − dg_dd‖ / ‖dg_dd‖", fontsize=10)
    right.set_title("worst token max_t |dg_t − dg_dd,t| / |dg_dd,t|", fontsize=10)
    left.legend(fontsize=7, ncol=2)
    fig.suptitle("GDN's dg under strong decay (g ~ U(−8, −3)) in float: direct form α_t⟨P_t, D_t⟩ against the "
                 "identity Σ_{s≥t}(o_s·do_s − v_s·dv_s) + ⟨S_T, dht⟩", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    fig.savefig(out, dpi=110)


FIGURES = {f.__name__: f for f in (error_vs_T, timestep_error, state_norms, vla_jacobian, recall, oracle_certification,
                                   gradient_error_vs_T, dg_forms)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="directory of the data files (larc report's OUT/data)")
    ap.add_argument("--out", required=True, help="directory the PNGs are written to")
    ap.add_argument("figures", nargs="+", help="figure names: " + ", ".join(FIGURES))
    args = ap.parse_args()
    unknown = [f for f in args.figures if f not in FIGURES]
    if unknown:
        ap.error(f"unknown figure(s) {', '.join(unknown)}; known: {', '.join(FIGURES)}")
    for name in args.figures:
        FIGURES[name](args.data, os.path.join(args.out, name + ".png"))
        plt.close("all")


if __name__ == "__main__":
    main()
