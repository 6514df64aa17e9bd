#!/usr/bin/env python3
"""Adds FlashAttention-3 and cuDNN (PyTorch SDPA) timings to the rows of `fmha bench --decode
--json`, timed the way `fmha bench` times (a sample is the row's `launches` back-to-back
launches behind an untimed one; the median of 20), and the bandwidth each reaches: the row's
K/V bytes over the time.

FA3 is the `fa3-fwd` wheel (../shared/peers/README.md says how to bring it to the GPU machine):
flash_attn_with_kvcache in BF16 over a contiguous cache with its own split heuristic
(num_splits=0), causal. cuDNN is SDPA's cuDNN backend in FP16 without a mask: for one new query
a bottom-right causal mask allows every key, and for up to 8 it excludes at most 28 pairs of a
sequence (SDPA's is_causal is top-left aligned, not the same mask).

usage: decode_peers.py FA3_DIR OURS.json OUT.json [--md OUT.md] [--only fa3|cudnn] [--rows I,J]
"""
import argparse
import json
import sys


def peers(row, fa3, iters, only=None):
    """The peers' times of one row (only: "fa3" or "cudnn" times that peer alone)."""
    b, h, hk, lq, lk, d = row["batch"], row["heads"], row["kv_heads"], row["lq"], row["lk"], row["head_dim"]
    launches = row.get("launches", 10)

    def fa3_ms():
        q = torch.randn(b, lq, h, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, lk, hk, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, lk, hk, d, device="cuda", dtype=torch.bfloat16)
        lens = torch.full((b,), lk, device="cuda", dtype=torch.int32)
        fn = lambda: fa3.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, causal=True, num_splits=0)
        return time_ms(fn, iters, launches)

    def cudnn_ms():
        q = torch.randn(b, h, lq, d, device="cuda", dtype=torch.float16)
        k = torch.randn(b, hk, lk, d, device="cuda", dtype=torch.float16)
        v = torch.randn(b, hk, lk, d, device="cuda", dtype=torch.float16)
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            fn = lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=h != hk)
            return time_ms(fn, iters, launches)

    out = {}
    for peer, key, timed in (("fa3", "fa3_bf16", fa3_ms), ("cudnn", "cudnn", cudnn_ms)):
        if only not in (None, peer):
            continue
        try:
            out[f"{key}_ms"] = timed()
            out[f"{key}_tbps"] = row["kv_bytes"] / (out[f"{key}_ms"] * 1e-3) / 1e12
        except Exception as e:  # noqa: BLE001 (a peer that cannot run the row is reported, not fatal)
            out[f"{key}_error"] = repr(e)[:200]
        torch.cuda.empty_cache()  # (the peer's tensors are gone with its function)
    return out


def row_list(text):
    """--rows: a set of row indices."""
    try:
        return {int(x) for x in text.split(",")}
    except ValueError:
        raise argparse.ArgumentTypeError(f"comma-separated row indices, not {text!r}") from None


def markdown(rows):
    lines = ["| B | context | new queries | H/Hkv | page | ours TB/s (us) | splits | FA3 BF16 TB/s (us) | cuDNN TB/s (us) | ours / FA3 |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        def cell(key):
            ms = r.get(f"{key}_ms")
            return "-" if ms is None else f"{r[f'{key}_tbps']:.2f} ({ms * 1e3:.0f})"
        ratio = f"{r['fa3_bf16_ms'] / r['ours_ms']:.2f}" if r.get("fa3_bf16_ms") else "-"
        lines.append(f"| {r['batch']} | {r['lk']} | {r['lq']} | {r['heads']}/{r['kv_heads']} | {r['page_size']} | "
                     f"{cell('ours')} | {r.get('splits', '-')} | {cell('fa3_bf16')} | {cell('cudnn')} | {ratio} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("fa3_dir")
    ap.add_argument("ours")
    ap.add_argument("out")
    ap.add_argument("--md")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--only", choices=["fa3", "cudnn"],
                    help="time one peer alone (a profiler's run: ncu -k regex:... python3 bench/decode_peers.py ...)")
    ap.add_argument("--rows", type=row_list, help="comma-separated row indices of OURS.json to time (default: all)")
    a = ap.parse_args()
    sys.path.insert(0, a.fa3_dir)
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import fa3_fwd_config
    sys.modules["flash_attn_config"] = fa3_fwd_config
    import fa3_fwd_interface as fa3
    from compare_sdpa import time_ms  # the same timing as fmha bench and the SDPA comparison
    rows = [r for r in json.load(open(a.ours)) if "ours_ms" in r]
    if a.rows is not None:
        rows = [r for r in rows if r["row"] in a.rows]
    for r in rows:  # ours_tbps: fmha bench's, from the same kv_bytes the peers divide
        r.update(peers(r, fa3, a.iters, a.only))
        print(r["row"], r["batch"], r["lk"], r["lq"], f"{r['heads']}/{r['kv_heads']}", r["page_size"],
              "ours", round(r["ours_tbps"], 2), "splits", r.get("splits"), "fa3", round(r.get("fa3_bf16_tbps", 0), 2),
              "cudnn", round(r.get("cudnn_tbps", 0), 2), r.get("fa3_bf16_error", ""), flush=True)
    json.dump(rows, open(a.out, "w"), indent=1)
    if a.md:
        open(a.md, "w").write(markdown(rows))
