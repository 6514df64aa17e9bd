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
                       [--rounds N --fmha BIN [--splits N]] [--fa3-splits N]

--fa3-splits N (N > 0) forces FA3's num_splits instead of its heuristic, so that a sweep of N finds
the most the peer's kernel reaches on a row (each row records the count as fa3_num_splits).

With --rounds N (N > 1) each row is timed N times, ours (a fresh `BIN bench --decode --row I`
process, `--splits N` passed on where OURS.json was made with it) and each peer in turn, and the
row keeps the medians over the rounds and every round's figures: FA3's split rows move by tens of
percent from one call to the next, and a drift of the GPU's speed then falls on both sides of a
ratio alike.
"""
import argparse
import json
import statistics
import sys


def peers(row, fa3, iters, only=None, fa3_splits=0):
    """The peers' times of one row (only: "fa3" or "cudnn" times that peer alone; fa3_splits > 0:
    FA3's num_splits forced)."""
    b, h, hk, lq, lk, d = row["batch"], row["heads"], row["kv_heads"], row["lq"], row["lk"], row["head_dim"]
    launches = row.get("launches", 10)

    def fa3_ms():
        q = torch.randn(b, lq, h, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(b, lk, hk, d, device="cuda", dtype=torch.bfloat16)
        v = torch.randn(b, lk, hk, d, device="cuda", dtype=torch.bfloat16)
        lens = torch.full((b,), lk, device="cuda", dtype=torch.int32)
        fn = lambda: fa3.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, causal=True, num_splits=fa3_splits)
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


def with_rounds(row, fa3, a, rerun_row):
    """The row timed a.rounds times, ours (rerun_row: compare_sdpa's) and the peers in turn;
    medians and each round's ms."""
    keys = ("ours",) + tuple(k for peer, k in (("fa3", "fa3_bf16"), ("cudnn", "cudnn")) if a.only in (None, peer))
    series = {k: [] for k in keys}
    extra = ["--splits", str(a.splits)] if a.splits is not None else []
    for _ in range(a.rounds):
        again = rerun_row(a.fmha, row, a.iters, extra)
        series["ours"].append(again.get("ours_ms") if again else None)
        got = peers(row, fa3, a.iters, a.only, a.fa3_splits)
        for k in keys[1:]:
            series[k].append(got.get(f"{k}_ms"))
            if f"{k}_error" in got:
                row[f"{k}_error"] = got[f"{k}_error"]
    row["rounds"] = {f"{k}_ms": v for k, v in series.items()}
    for k, v in series.items():
        if all(x is not None for x in v):
            row[f"{k}_ms"] = statistics.median(v)
            row[f"{k}_tbps"] = row["kv_bytes"] / (row[f"{k}_ms"] * 1e-3) / 1e12
        else:  # a failed round leaves the row without that side's median
            row.pop(f"{k}_ms", None)
            row.pop(f"{k}_tbps", None)
    if "fa3_bf16" in series and all(x is not None for x in series["ours"] + series["fa3_bf16"]):
        row["rounds"]["ours_over_fa3"] = [f / o for o, f in zip(series["ours"], series["fa3_bf16"])]


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
        ratio = f"{r['fa3_bf16_ms'] / r['ours_ms']:.2f}" if r.get("fa3_bf16_ms") and r.get("ours_ms") else "-"
        lines.append(f"| {r['batch']} | {r['lk']} | {r['lq']} | {r['heads']}/{r['kv_heads']} | {r['page_size']} | "
                     f"{cell('ours')} | {r.get('splits', '-')} | {cell('fa3_bf16')} | {cell('cudnn')} | {ratio} |")
    if any("rounds" in r for r in rows):  # medians over rounds: each round's ours / FA3 beside them
        lines[0] += " ours / FA3 per round (min-max) |"
        lines[1] += "---|"
        for i, r in enumerate(rows):
            per = r.get("rounds", {}).get("ours_over_fa3")
            lines[i + 2] += f" {min(per):.2f}-{max(per):.2f} |" if per else " - |"
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
    ap.add_argument("--rounds", type=int, default=1, help="time every row N times, ours and the peers in turn")
    ap.add_argument("--fmha", help="the fmha binary that wrote OURS.json (needed with --rounds)")
    ap.add_argument("--splits", type=int, help="with --rounds: the --splits OURS.json was made with")
    ap.add_argument("--fa3-splits", type=int, default=0, help="FA3's num_splits (default 0: its heuristic)")
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error("--rounds needs a positive count")
    if a.rounds > 1 and not a.fmha:
        ap.error("--rounds needs --fmha")
    if a.fa3_splits < 0:
        ap.error("--fa3-splits takes 0 (FA3's heuristic) or a count")
    if a.splits is not None and a.rounds == 1:
        ap.error("--splits goes with --rounds (the reruns' part count)")
    sys.path.insert(0, a.fa3_dir)
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    import fa3_fwd_config
    sys.modules["flash_attn_config"] = fa3_fwd_config
    import fa3_fwd_interface as fa3
    from compare_sdpa import rerun_row, time_ms  # the same timing as fmha bench and the SDPA comparison
    rows = [r for r in json.load(open(a.ours)) if "ours_ms" in r]
    if a.rows is not None:
        rows = [r for r in rows if r["row"] in a.rows]
    for r in rows:  # ours_tbps: fmha bench's, from the same kv_bytes the peers divide
        r["fa3_num_splits"] = a.fa3_splits
        if a.rounds > 1:
            with_rounds(r, fa3, a, rerun_row)
        else:
            r.update(peers(r, fa3, a.iters, a.only, a.fa3_splits))
        print(r["row"], r["batch"], r["lk"], r["lq"], f"{r['heads']}/{r['kv_heads']}", r["page_size"],
              "ours", round(r.get("ours_tbps", 0), 2), "splits", r.get("splits"), "fa3", round(r.get("fa3_bf16_tbps", 0), 2),
              "cudnn", round(r.get("cudnn_tbps", 0), 2), r.get("fa3_bf16_error", ""), flush=True)
    json.dump(rows, open(a.out, "w"), indent=1)
    if a.md:
        open(a.md, "w").write(markdown(rows))
