#!/usr/bin/env python3
"""The Hopper tables of docs/PERF.md from one device call's sweeps (`device_check.sh tables`):
one Markdown table per dtype, ours beside cuDNN and FA2 (SDPA) and FlashAttention-3.

usage: perf_tables.py FP16.json BF16.json FP8.json [--png PLOT.png] [--only fp8] > tables.md

FP16.json carries FA3's BF16 and FP8 columns (peers_fa3.py ran on it); the BF16 table takes
FA3 BF16 and the FP8 table FA3 FP8 from it, row by row (the three sweeps have the same rows).
SDPA has no FP8: the FP8 table shows cuDNN FP16 for context. The last column divides ours by
the fastest peer of the table's precision (cuDNN and FA3 for 16-bit input, FA3 FP8 for FP8).
--only fp8 prints the FP8 table alone (FP16.json: SDPA in FP16 and FA3 on the FP8 sweep's rows;
BF16.json is not read). --fa3-also OTHER.json LABEL: FA3's readings of another call on the same
rows (its FP16.json) in a column of their own; the last column then divides by the higher FA3
reading (FA3's short rows move by tens of percent between calls).
"""
import argparse
import json


def fmt(x):
    return "-" if x is None else f"{x:.0f}"


def same_rows(a, b):
    return (a["row"], a["mode"], a["head_dim"], a["lq"]) == (b["row"], b["mode"], b["head_dim"], b["lq"])


def table(rows, fa3_rows, dtype, also=None, also_label=""):
    dtype = "fp8" if dtype.startswith("fp8") else dtype
    fa3_key = "fa3_fp8_tflops" if dtype == "fp8" else "fa3_bf16_tflops"
    fa3_name = "FA3 FP8" if dtype == "fp8" else "FA3 BF16"
    cudnn_rows = fa3_rows if dtype == "fp8" else rows
    head = ["mode", "D", "H/Hkv", "B", "Lq", "Lk", "mask", "page", f"ours {dtype}",
            "cuDNN FP16" if dtype == "fp8" else "cuDNN", "FA2" if dtype != "fp8" else "FA2 FP16", fa3_name]
    head += [f"{fa3_name}, {also_label}"] if also else []
    head += ["ours / best peer"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, (r, f, c) in enumerate(zip(rows, fa3_rows, cudnn_rows)):
        if not same_rows(r, f) or (also and not same_rows(r, also[i])):
            raise SystemExit(f"row {r['row']}: the sweeps do not have the same rows")
        fa3 = f.get(fa3_key)
        fa3_also = also[i].get(fa3_key) if also else None
        peers = [fa3, fa3_also] if dtype == "fp8" else [c.get("cudnn_tflops"), fa3, fa3_also]
        best = max((p for p in peers if p), default=None)
        ours = r.get("ours_tflops")
        ratio = f"{ours / best:.2f}" if ours and best else "-"
        cells = [r["mode"], str(r["head_dim"]), f"{r['heads']}/{r['kv_heads']}", str(r["batch"]), str(r["lq"]),
                 str(r["lk"]), r["mask"], str(r["page_size"] or "-"), fmt(ours), fmt(c.get("cudnn_tflops")),
                 fmt(c.get("fa2_tflops")), fmt(fa3)]
        cells += [fmt(fa3_also)] if also else []
        out.append("| " + " | ".join(cells + [ratio]) + " |")
    return "\n".join(out)


def plot(rows, path):
    """TFLOPS against sequence length for the dense rows (B*S = 16k, H*D = 2048), one panel a
    head dim and mask: ours and every peer the rows carry."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    dense = [r for r in rows if r["heads"] * r["head_dim"] == 2048 and r["batch"] * r["lq"] == 16384
             and not r["page_size"]]
    dims = sorted({r["head_dim"] for r in dense})
    fig, axes = plt.subplots(2, len(dims), figsize=(4 * len(dims), 7), squeeze=False)
    for col, d in enumerate(dims):
        for row_i, mask in enumerate(("none", "causal")):
            ax = axes[row_i][col]
            sel = sorted((r for r in dense if r["head_dim"] == d and r["mask"] == mask), key=lambda r: r["lq"])
            xs = [r["lq"] for r in sel]
            for key, label in (("ours_tflops", "ours"), ("cudnn_tflops", "cuDNN"), ("fa2_tflops", "FA2"),
                               ("fa3_bf16_tflops", "FA3 BF16")):
                ys = [r.get(key) for r in sel]
                if any(y is not None for y in ys):
                    ax.plot(xs, [float("nan") if y is None else y for y in ys], marker="o", label=label)
            ax.set_xscale("log", base=2)
            ax.set_title(f"D={d}, mask={mask}")
            ax.set_xlabel("sequence length")
            ax.set_ylabel("TFLOPS")
            ax.grid(True, alpha=0.3)
            ax.legend()
    meta = rows[0]
    fig.suptitle(f"{meta['dtype'].upper()} attention forward, {meta.get('device')}, commit {meta.get('commit')} "
                 "(B*S=16k, H*D=2048)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("fp16")
    ap.add_argument("bf16")
    ap.add_argument("fp8")
    ap.add_argument("--png", help="plot the FP16 rows with every peer")
    ap.add_argument("--only", choices=["fp8"], help="print one table")
    ap.add_argument("--fa3-also", nargs=2, metavar=("OTHER_FP16_JSON", "LABEL"),
                    help="another call's FA3 readings on the same rows, in a column of their own")
    args = ap.parse_args()
    also = json.load(open(args.fa3_also[0])) if args.fa3_also else None
    fp16, fp8 = (json.load(open(p)) for p in (args.fp16, args.fp8))
    bf16 = None if args.only else json.load(open(args.bf16))
    if args.png:
        plot(fp16, args.png)
    meta = fp16[0]
    print(f"<!-- {meta.get('device')}, commit {meta.get('commit')}, {meta.get('date')}, "
          f"torch {meta.get('torch')}, cuDNN {meta.get('cudnn_version')} -->")
    for name, rows in (("FP16", fp16), ("BF16", bf16), ("FP8 E4M3 (FP16 output)", fp8)):
        if args.only and rows is not fp8:
            continue
        print(f"\n### {name}\n")
        print(table(rows, fp16, rows[0]["dtype"], also, args.fa3_also[1] if also else ""))


if __name__ == "__main__":
    main()
