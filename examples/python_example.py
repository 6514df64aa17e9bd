"""fmha from PyTorch: a Llama-style prefill, then decode steps over a paged KV cache, and a
Qwen-VL-style vision encoder call over packed images; each checked against PyTorch's SDPA.

    pip install .            # from the repository root (builds the library through CMake)
    python examples/python_example.py
"""
import torch
import torch.nn.functional as F

import fmha

dev = torch.device("cuda")
torch.manual_seed(0)


def check(name, got, want):
    err = (got.float() - want.float()).abs().max().item()
    print(f"{name:<44} max |fmha - sdpa| = {err:.2e}")
    assert err < 2e-2, name


# ---- Llama-3-8B attention shapes: 32 query heads, 8 KV heads, head dim 128, BF16. ----
hq, hkv, d = 32, 8, 128
lens = [1000, 2500]  # two prompts, prefilled into a cache of 4096 slots per sequence
b, s, cap = len(lens), max(lens), 4096
q = torch.randn(b, s, hq, d, device=dev, dtype=torch.bfloat16)
kv = torch.randn(b, 2, hkv, cap, d, device=dev, dtype=torch.bfloat16)  # [B, K/V, Hkv, capacity, D]
cu_kv = torch.tensor([0, lens[0], lens[0] + lens[1]], dtype=torch.int32, device=dev)
# Each sequence's queries are the last s rows of its history (bottom-right causal): with
# s = max(lens) the shorter prompt's first rows see no key and come back as zeros.
out = fmha.llm_attention(q, kv, cu_kv)
for i, n in enumerate(lens):
    rows = q[i, s - n:].transpose(0, 1)  # the n rows that end the history: [Hq, n, D]
    k, v = kv[i, 0, :, :n], kv[i, 1, :, :n]
    want = F.scaled_dot_product_attention(rows, k, v, is_causal=True, enable_gqa=True)
    check(f"prefill, sequence {i} ({n} tokens)", out[i, s - n:].transpose(0, 1), want)

# ---- Decode: one new token per sequence over a paged cache (pages of 64 tokens). ----
page = 64
hist = [n + 1 for n in lens]  # the prompt plus the new token
per_seq = cap // page
pool = torch.randn(2 * b * per_seq, page, hkv, d, device=dev, dtype=torch.bfloat16)  # [pages, T, Hkv, D]
table = torch.randperm(2 * b * per_seq, device=dev).to(torch.int32).view(b, 2, per_seq)  # K pages, V pages
cu_hist = torch.tensor([0, hist[0], hist[0] + hist[1]], dtype=torch.int32, device=dev)
q1 = torch.randn(b, 1, hq, d, device=dev, dtype=torch.bfloat16)
out1, lse = fmha.paged_attention(q1, pool, table, cu_hist, return_lse=True)
for i, n in enumerate(hist):
    k = pool[table[i, 0].long()].reshape(-1, hkv, d)[:n].transpose(0, 1)
    v = pool[table[i, 1].long()].reshape(-1, hkv, d)[:n].transpose(0, 1)
    want = F.scaled_dot_product_attention(q1[i].transpose(0, 1), k, v, enable_gqa=True)
    check(f"decode step, sequence {i} ({n} keys)", out1[i].transpose(0, 1), want)

# ---- Qwen2-VL vision encoder shapes: 16 heads, head dim 80, images packed into one batch. ----
patches = [1024, 256, 4096]  # patch tokens per image
h, dv = 16, 80
total = sum(patches)
qv, kvv, vv = (torch.randn(total, h, dv, device=dev, dtype=torch.float16) for _ in range(3))
cu = torch.tensor([0] + [sum(patches[:i + 1]) for i in range(len(patches))], dtype=torch.int32, device=dev)
outv = fmha.vit_attention(qv, kvv, vv, cu, max(patches))
start = 0
for i, n in enumerate(patches):
    sl = slice(start, start + n)
    want = F.scaled_dot_product_attention(qv[sl].transpose(0, 1), kvv[sl].transpose(0, 1), vv[sl].transpose(0, 1))
    check(f"vision encoder, image {i} ({n} patches)", outv[sl].transpose(0, 1), want)
    start += n
print("all results match SDPA")
