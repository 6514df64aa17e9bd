#!/usr/bin/env python3
"""Adds PyTorch SDPA timings (cuDNN and FlashAttention-2 backends) to the rows written by
`fmha bench --json`, measured in the same run on the same GPU and the same way (the row's
`launches` per timed sample), and writes the merged JSON, a Markdown table and a plot.

usage: compare_sdpa.py OURS.json OUT.json [--md OUT.md] [--png OUT.png] [--iters N]
                       [--rounds N --fmha BIN]

With --rounds N (N > 1) each row is timed N times, ours and each backend in turn (ours in a
fresh `BIN bench --row I` process, with the environment of this one, e.g. the kernel family),
and keeps the medians over the rounds and every round's figures: a drift of the GPU's speed
during the run then moves both sides of a ratio alike.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from perf_tables import plot


def time_ms(fn, iters, launches=1):
    """Median ms of one launch, timed as `fmha bench` does: a sample is one launch between two
    events, or `launches` back-to-back launches behind an untimed one (divided by the count)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        if launches > 1:
            fn()
        a.record()
        for _ in range(launches):
            fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / launches)
    return statistics.median(times)


def sdpa_ms(row, backend, iters):
    """Median ms of SDPA on the row's shape (the dense equivalent for paged/varlen rows)."""
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(row["dtype"], torch.float16)
    b, h, hk, lq, lk, d = row["batch"], row["heads"], row["kv_heads"], row["lq"], row["lk"], row["head_dim"]
    q = torch.randn(b, h, lq, d, device="cuda", dtype=dtype)
    k = torch.randn(b, hk, lk, d, device="cuda", dtype=dtype)
    v = torch.randn(b, hk, lk, d, device="cuda", dtype=dtype)
    causal = row["mask"] == "causal"
    if causal and lq != lk:
        return None  # SDPA's is_causal is top-left aligned; no like-for-like row
    gqa = h != hk
    try:
        with sdpa_kernel([backend]):
            fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
            fn()
            return time_ms(fn, iters, row.get("launches", 1))
    except RuntimeError as e:  # the backend does not take this shape
        print(f"  {backend.name} cannot run {row['mode']} D={d} Lq={lq}: {str(e).splitlines()[0][:100]}")
        return None


def rerun_row(fmha, row, iters, extra=()):
    """The row as one fresh `fmha bench --row` process writes it, on the row's sweep index (the
    quick or decode sweep where the row says so; extra: more flags), or None where it failed."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "row.json")
        cmd = [fmha, "bench", "--row", str(row["row"]), "--iters", str(iters), "--dtype", row["dtype"],
               "--launches", str(row.get("launches", 1)), "--commit", row.get("commit", "unknown"), "--json", path]
        cmd += {"quick": ["--quick"], "decode": ["--decode"]}.get(row.get("sweep"), []) + list(extra)
        done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0 or not os.path.exists(path):
            print(f"  ours, row {row['row']}: {cmd} failed ({done.returncode}): {done.stdout[-200:]}")
            return None
        again = json.load(open(path))[0]
        same = ("mode", "head_dim", "heads", "kv_heads", "batch", "lq", "lk", "mask", "page_size")
        if any(again[k] != row[k] for k in same):
            raise SystemExit(f"row {row['row']} of the sweep is not the row of the input JSON")
        return again


def ours_round(fmha, row, iters):
    """TFLOPS of one fresh `fmha bench --row` process on the row's sweep index."""
    again = rerun_row(fmha, row, iters)
    return again.get("ours_tflops") if again else None  # absent where the row failed (its "error" says why)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ours")
    ap.add_argument("out")
    ap.add_argument("--md")
    ap.add_argument("--png")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--fmha", help="the fmha binary that wrote OURS.json (needed with --rounds)")
    args = ap.parse_args()
    if args.rounds > 1 and not args.fmha:
        ap.error("--rounds needs --fmha")
    rows = json.load(open(args.ours))
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    backends = (("cudnn", SDPBackend.CUDNN_ATTENTION), ("fa2", SDPBackend.FLASH_ATTENTION))
    for r in rows:
        sdpa_ok = r["dtype"] in ("fp16", "bf16")
        if args.rounds > 1:
            r["rounds"] = {"ours_tflops": [], "cudnn_tflops": [], "fa2_tflops": []}
            for _ in range(args.rounds):
                r["rounds"]["ours_tflops"].append(ours_round(args.fmha, r, args.iters))
                for key, backend in backends:
                    ms = sdpa_ms(r, backend, args.iters) if sdpa_ok else None
                    r["rounds"][f"{key}_tflops"].append((r["flops"] / (ms * 1e-3) / 1e12) if ms else None)
            for key, series in r["rounds"].items():
                got = [v for v in series if v is not None]
                r[key] = statistics.median(got) if len(got) == len(series) else None
                r[key.replace("tflops", "ms")] = r["flops"] / (r[key] * 1e12) * 1e3 if r[key] else None
            print(f"  row {r['row']}: ours {r['rounds']['ours_tflops']} fa2 {r['rounds']['fa2_tflops']}")
        else:
            for key, backend in backends:
                ms = sdpa_ms(r, backend, args.iters) if sdpa_ok else None
                r[f"{key}_ms"] = ms
                r[f"{key}_tflops"] = (r["flops"] / (ms * 1e-3) / 1e12) if ms else None
        r.setdefault("ours_tflops", None)  # a row that failed in fmha bench carries "error" instead
        ours = r["ours_tflops"]
        r["ratio_vs_cudnn"] = (ours / r["cudnn_tflops"]) if ours and r.get("cudnn_tflops") else None
        r["ratio_vs_fa2"] = (ours / r["fa2_tflops"]) if ours and r.get("fa2_tflops") else None
        if "rounds" in r and r["ratio_vs_fa2"] is not None:  # each round's ours / FA2
            r["rounds"]["ratio_vs_fa2"] = [o / f for o, f in zip(r["rounds"]["ours_tflops"], r["rounds"]["fa2_tflops"])]
        r["torch"] = torch.__version__
        r["cudnn_version"] = torch.backends.cudnn.version()
    json.dump(rows, open(args.out, "w"), indent=1)

    fmt = lambda v: "-" if v is None else f"{v:.0f}"
    fmt2 = lambda v: "-" if v is None else f"{v:.2f}"
    lines = ["| mode | dtype | D | H/Hkv | B | Lq | Lk | mask | page | ours TFLOPS | cuDNN | FA2 | ours/cuDNN | ours/FA2 |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['mode']} | {r['dtype']} | {r['head_dim']} | {r['heads']}/{r['kv_heads']} | {r['batch']} | "
                     f"{r['lq']} | {r['lk']} | {r['mask']} | {r['page_size'] or '-'} | {fmt(r['ours_tflops'])} | "
                     f"{fmt(r['cudnn_tflops'])} | {fmt(r['fa2_tflops'])} | {fmt2(r['ratio_vs_cudnn'])} | "
                     f"{fmt2(r['ratio_vs_fa2'])} |")
    if args.rounds > 1:
        lines[0] += " ours/FA2 per round (min-max) |"
        lines[1] += "---|"
        for i, r in enumerate(rows):
            per = r.get("rounds", {}).get("ratio_vs_fa2")
            lines[i + 2] += f" {min(per):.2f}-{max(per):.2f} |" if per else " - |"
    table = "\n".join(lines)
    print(table)
    if args.md:
        open(args.md, "w").write(table + "\n")
    if args.png:
        plot(rows, args.png)


if __name__ == "__main__":
    main()
