#!/usr/bin/env python3
"""FP8 E4M3 accuracy of ours (the installed `fmha` package) and of FlashAttention-3 (the
`fa3-fwd` wheel) on the same quantised inputs, against a float64 evaluation on the
dequantised values.

Inputs are N(0, 1) (or N(0, peak) for Q, for peaked scores), quantised per tensor with the
scale amax / 448; both libraries get the same E4M3 tensors and scales (ours: q_scale, k_scale,
v_scale; FA3: q/k/v_descale). Ours writes FP16, FA3 BF16: the table gives each output's own
rounding beside its error (max |O_64 rounded to the output type - O_64|).

usage: python3 fp8_accuracy.py FA3_DIR [--json OUT.json]   (FA3_DIR: the unpacked fa3-fwd wheel)
"""
import argparse
import json
import math
import sys

import torch

import fmha


def quantize(x):
    scale = x.abs().max().item() / 448.0
    q = (x / scale).to(torch.float8_e4m3fn)
    return q, scale, q.double() * scale


def reference(q, k, v, causal):
    """float64 attention, one head at a time: q [S_q, Hq, D], k/v [S_k, Hkv, D]."""
    sq, hq, d = q.shape
    sk, hkv = k.shape[0], k.shape[1]
    out = torch.empty(sq, hq, d, dtype=torch.float64, device=q.device)
    allowed = None
    if causal:
        i = torch.arange(sq, device=q.device)[:, None] + (sk - sq)
        allowed = torch.arange(sk, device=q.device)[None, :] <= i
    for h in range(hq):
        s = (q[:, h] @ k[:, h // (hq // hkv)].T) / math.sqrt(d)
        if allowed is not None:
            s = s.masked_fill(~allowed, -math.inf)
        out[:, h] = torch.softmax(s, dim=-1) @ v[:, h // (hq // hkv)]
    return out


def errors(got, exact):
    diff = (got.double() - exact).abs()
    return diff.max().item(), diff.mean().item()


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("fa3_dir")
    ap.add_argument("--json")
    args = ap.parse_args()
    sys.path.insert(0, args.fa3_dir)
    import fa3_fwd_config
    sys.modules["flash_attn_config"] = fa3_fwd_config
    import fa3_fwd_interface as fa3

    torch.manual_seed(0)
    dev = torch.device("cuda")
    # (name, S_q, S_k, Hq, Hkv, D, causal, spread of Q)
    problems = [("llm causal 32/8", 4096, 4096, 32, 8, 128, True, 1.0),
                ("llm causal 32/8, peaked", 4096, 4096, 32, 8, 128, True, 4.0),
                ("vit 16/16", 2048, 2048, 16, 16, 128, False, 1.0),
                ("vit 16/16 D=80", 2048, 2048, 16, 16, 80, False, 1.0)]
    rows = []
    print(f"{'problem':26s} {'ours max':>9s} {'ours mean':>9s} {'fp16 rnd':>9s} "
          f"{'FA3 max':>9s} {'FA3 mean':>9s} {'bf16 rnd':>9s}  (absolute; max |O_64| in the last column)")
    for name, sq, sk, hq, hkv, d, causal, spread in problems:
        q8, qs, q64 = quantize(torch.randn(sq, hq, d, device=dev) * spread)
        k8, ks, k64 = quantize(torch.randn(sk, hkv, d, device=dev))
        v8, vs, v64 = quantize(torch.randn(sk, hkv, d, device=dev))
        exact = reference(q64, k64, v64, causal)
        if causal:
            kv = torch.stack([k8, v8]).permute(0, 2, 1, 3).unsqueeze(0).contiguous()  # [1, 2, Hkv, S_k, D]
            cu = torch.tensor([0, sk], dtype=torch.int32, device=dev)
            ours = fmha.llm_attention(q8.unsqueeze(0), kv, cu, q_scale=qs, k_scale=ks, v_scale=vs)[0]
        else:
            cu = torch.tensor([0, sq], dtype=torch.int32, device=dev)
            ours = fmha.vit_attention(q8, k8, v8, cu, sq, q_scale=qs, k_scale=ks, v_scale=vs)
        row = dict(problem=name, sq=sq, sk=sk, heads=hq, kv_heads=hkv, head_dim=d, causal=causal,
                   max_abs_exact=exact.abs().max().item())
        row["ours_max"], row["ours_mean"] = errors(ours, exact)
        row["fp16_rounding"] = errors(exact.half(), exact)[0]
        try:
            desc = lambda s: torch.full((1, hkv), s, dtype=torch.float32, device=dev)
            fa = fa3.flash_attn_func(q8.unsqueeze(0), k8.unsqueeze(0), v8.unsqueeze(0), causal=causal,
                                     q_descale=desc(qs), k_descale=desc(ks), v_descale=desc(vs))
            fa = fa[0] if isinstance(fa, tuple) else fa
            row["fa3_max"], row["fa3_mean"] = errors(fa[0], exact)
        except Exception as e:  # FA3's FP8 lacks some head dims
            row["fa3_error"] = repr(e)[:200]
        row["bf16_rounding"] = errors(exact.bfloat16(), exact)[0]
        rows.append(row)
        fmt = lambda key: f"{row[key]:9.2e}" if key in row else f"{'-':>9s}"
        print(f"{name:26s} {fmt('ours_max')} {fmt('ours_mean')} {fmt('fp16_rounding')} {fmt('fa3_max')} "
              f"{fmt('fa3_mean')} {fmt('bf16_rounding')}  {row['max_abs_exact']:.3f}", flush=True)
    if args.json:
        json.dump(rows, open(args.json, "w"), indent=1)


if __name__ == "__main__":
    main()
