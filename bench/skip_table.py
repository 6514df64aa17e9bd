#!/usr/bin/env python3
"""docs/PERF.md's skip-softmax table rows from one `fmha bench --skip-sweep --json` file: per
structured problem, its dense run, then each factor's drop and P.V-skip fractions (the kernel's
counters), time, TFLOPS (the dense count: the sweep's problem is causal, 4 * D multiply-adds
per allowed (query, key) pair), speedup over dense and error against dense.

usage: skip_table.py SWEEP.json
"""
import json
import re
import sys


def dense_flops(problem):
    """FLOPs of the causal problem named by the row's `problem` (e.g. 'llm fp16 B=1 H=32/8 D=128 Lq=16384 Lk=16384')."""
    f = dict(re.findall(r"(B|D|Lq|Lk)=(\d+)", problem))
    heads = int(re.search(r"H=(\d+)/", problem).group(1))
    b, d, lq, lk = (int(f[k]) for k in ("B", "D", "Lq", "Lk"))
    if lq > lk:
        raise ValueError(f"{problem}: more queries than keys")
    pairs = lq * (lk - lq) + lq * (lq + 1) // 2  # query q (last lq of lk) sees lk - lq + q + 1 keys
    return 4 * d * pairs * heads * b


def err(x, fmt):
    return "0" if x == 0 else format(x, fmt)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        rows = json.load(f)
    seen = []
    for r in rows:
        key = (r["structured_segment"], r["structured_prev"])
        flops = dense_flops(r["problem"])
        if key not in seen:
            seen.append(key)
            print(f"| {key[0]}-key segments, weight {key[1]} | 0 (dense kernel) | - | {r['dense_ms']:.3f} | "
                  f"{flops / r['dense_ms'] / 1e9:.0f} | 1.000 | - | - |")
        if r["factor"] < 1e-20:
            factor = "1e-30 (nothing qualifies)" if len(seen) == 1 else "1e-30"
        else:
            factor = f"{r['factor']:g}"
        dropped = 100 * r["warp_tiles_dropped"] / r["warp_tiles_visited"]
        skipped = 100 * r["tiles_skipped"] / r["tiles_visited"]
        print(f"| | {factor} | {dropped:.1f}% / {skipped:.1f}% | {r['ms']:.3f} | {flops / r['ms'] / 1e9:.0f} | "
              f"{r['speedup']:.3f} | {err(r['max_err'], '.3g')} | {err(r['mean_err'], '.1e')} |")


if __name__ == "__main__":
    main()
