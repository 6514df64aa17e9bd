"""The PyTorch layer on a GPU: every mode against a float64 reference on random problems
(FP16, BF16, FP8; every mask; GQA; LSE), torch.compile, CUDA graph capture and replay, and the
error path. Skipped without a CUDA device.

Tolerance as in the C++ tests: the max error against float64 is at most twice that of a
same-precision evaluation plus atol (1e-3, BF16 4e-3, times the output's range); LSE within
1e-3 relative. Outputs are poisoned with NaN first, and cache memory the mask excludes holds
NaN, so an unwritten row or a stray read shows."""
import math
import os
import random
import unittest

try:
    import torch
except ModuleNotFoundError:
    torch = None

HAS_GPU = torch is not None and torch.cuda.is_available()
if HAS_GPU:
    import fmha

NAN = float("nan")
DEVICE = "cuda"


def prefix(lens):
    """int32 [len(lens) + 1] prefix sums on the GPU."""
    total, out = 0, [0]
    for n in lens:
        total += n
        out.append(total)
    return torch.tensor(out, dtype=torch.int32, device=DEVICE)


# The Hopper family's FP8 precision: P * 256 rounded to E4M3 (then / 256), O to FP16.
E4M3_P = "e4m3_p"


def attend(q, k, v, allowed, scale, lowp=None):
    """One sequence: q [Lq, Hq, D], k/v [Lk, Hkv, D] (float64, dequantized), allowed [Lq, Lk].
    Float64 throughout, or with lowp (a dtype, or E4M3_P) the kernels' precision: P and O
    rounded to it. Returns o [Lq, Hq, D] and lse [Hq, Lq]; a row without keys gives zeros and -inf."""
    if k.shape[0] == 0:
        return (torch.zeros(q.shape, dtype=torch.float64, device=q.device),
                torch.full((q.shape[1], q.shape[0]), -math.inf, dtype=torch.float64, device=q.device))
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    acc = torch.float64 if lowp is None else torch.float32
    s = torch.einsum("qhd,khd->hqk", q.to(acc), k.to(acc)) * scale
    s = s.masked_fill(~allowed, -math.inf)
    lse = torch.logsumexp(s, dim=-1)
    m = s.amax(dim=-1, keepdim=True).clamp(min=-1e30)
    p = torch.exp(s - m)
    denom = p.sum(dim=-1, keepdim=True)
    if lowp == E4M3_P:
        p = (p * 256).to(torch.float8_e4m3fn).to(acc) / 256
    elif lowp is not None:
        p = p.to(lowp).to(acc)
    o = torch.einsum("hqk,khd->qhd", p, v.to(acc)) / denom.permute(1, 0, 2).clamp(min=1e-300)
    o = torch.where(denom.permute(1, 0, 2) > 0, o, torch.zeros_like(o))
    if lowp is not None:
        o = o.to(torch.float16 if lowp == E4M3_P else lowp)
    return o.double(), lse.double()


def causal_mask(lq, lk, window=None, device=None):
    device = device or DEVICE
    i = torch.arange(lq, device=device)[:, None] + (lk - lq)
    j = torch.arange(lk, device=device)[None, :]
    allowed = j <= i
    if window is not None:
        allowed &= j >= i - window
    return allowed


def quantize(x, dtype):
    """Random N(0,1) data in the input dtype, and its float64 value (FP8: the dequantized value
    without the scale, which the caller applies)."""
    y = x.to(dtype)
    return y, y.double()


class Check:
    """Collects exact and same-precision references row by row and compares at the end."""

    def __init__(self, test, out_dtype):
        self.test, self.out_dtype, self.parts = test, out_dtype, []

    def add(self, got, exact, lowp, got_lse=None, exact_lse=None):
        self.parts.append((got.double(), exact, lowp, got_lse, exact_lse))

    def verify(self):
        got = torch.cat([p[0].flatten() for p in self.parts])
        exact = torch.cat([p[1].flatten() for p in self.parts])
        lowp = torch.cat([p[2].flatten() for p in self.parts])
        self.test.assertTrue(torch.isfinite(got).all().item(), "non-finite output (unwritten or stray read)")
        span = max(exact.abs().max().item(), 1e-6)
        atol = (4e-3 if self.out_dtype == torch.bfloat16 else 1e-3) * span
        err = (got - exact).abs().max().item()
        bound = 2 * (lowp - exact).abs().max().item() + atol
        self.test.assertLessEqual(err, bound, f"max error {err:.3g} over the bound {bound:.3g}")
        for _, _, _, got_lse, exact_lse in self.parts:
            if got_lse is None:
                continue
            finite = torch.isfinite(exact_lse)
            self.test.assertTrue(torch.equal(torch.isfinite(got_lse), finite), "LSE: -inf rows differ")
            rel = ((got_lse.double() - exact_lse).abs() / exact_lse.abs().clamp(min=1.0))[finite]
            if rel.numel():
                self.test.assertLessEqual(rel.max().item(), 1e-3, "LSE error")


@unittest.skipUnless(HAS_GPU, "no CUDA device")
class TorchGpuTest(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(random.randrange(1 << 30))
        self.dev = torch.device(DEVICE)

    def randn(self, *shape, dtype):
        return quantize(torch.randn(*shape, device=self.dev), dtype)

    def scales(self, dtype):
        if dtype == torch.float8_e4m3fn:
            return dict(q_scale=0.5, k_scale=0.25, v_scale=2.0)
        return {}

    @staticmethod
    def precision(dtype, scales, d):
        """The dequantization scales and the precision of the kernels' P and O: the input's
        16-bit type; FP8, FP16 in the portable family and E4M3 P (E4M3_P) where the Hopper
        family runs it (sm_90, head dims 64, 80, 96, 128 and 256, not forced portable)."""
        lowp = dtype
        if dtype == torch.float8_e4m3fn:
            hopper = (torch.cuda.get_device_capability() == (9, 0) and d in (64, 80, 96, 128, 256)
                      and os.environ.get("FMHA_KERNEL_FAMILY") != "portable")
            lowp = E4M3_P if hopper else torch.float16
        return scales.get("q_scale", 1.0), scales.get("k_scale", 1.0), scales.get("v_scale", 1.0), lowp

    # ---- LLM mode ----

    def run_llm(self, dtype, d, hq, hkv, window=None, out_dtype=None):
        b, s_q, cap = 3, 37, 300
        q, q64 = self.randn(b, s_q, hq, d, dtype=dtype)
        kv, kv64 = self.randn(b, 2, hkv, cap, d, dtype=dtype)
        lens = [random.randint(0, cap) for _ in range(b)]
        lens[0] = cap
        if dtype != torch.float8_e4m3fn:
            for i, n in enumerate(lens):
                kv[i, :, :, n:] = NAN  # never read
        cu = prefix(lens)
        sc = self.scales(dtype)
        scale = 0.3
        out = torch.full((b, s_q, hq, d), NAN, dtype=fmha.output_dtype(dtype, out_dtype), device=self.dev)
        got, lse = fmha.llm_attention(q, kv, cu, scale=scale, window_left=window, return_lse=True, out=out,
                                      out_dtype=out_dtype, **sc)
        self.assertIs(got, out)
        check = Check(self, out.dtype)
        qs, ks, vs, lowp = self.precision(dtype, sc, d)
        for i, n in enumerate(lens):
            allowed = causal_mask(s_q, n, window)
            args = (q64[i] * qs, kv64[i, 0, :, :n].transpose(0, 1) * ks, kv64[i, 1, :, :n].transpose(0, 1) * vs,
                    allowed, scale)
            o, l = attend(*args)
            o_low, _ = attend(*args, lowp=lowp)
            check.add(got[i], o, o_low, lse[i], l)
        check.verify()

    def test_llm_dtypes_and_heads(self):
        for dtype in (torch.float16, torch.bfloat16, torch.float8_e4m3fn):
            for d, hq, hkv in ((64, 8, 2), (128, 4, 4)):
                with self.subTest(dtype=dtype, d=d, hq=hq, hkv=hkv):
                    self.run_llm(dtype, d, hq, hkv)

    def test_llm_fp8_bf16_output(self):
        for d in (64, 72, 128):  # 72: the portable family on every GPU
            with self.subTest(d=d):
                self.run_llm(torch.float8_e4m3fn, d, 8, 2, out_dtype=torch.bfloat16)

    def test_llm_window(self):
        self.run_llm(torch.float16, 128, 8, 1, window=23)

    # ---- Paged and ragged modes ----

    def make_pool(self, dtype, lens, page, hkv, d, extra_pages=3):
        """A shuffled pool holding each sequence's K and V pages; unused slots hold NaN."""
        per_seq = max(1, max(math.ceil(n / page) for n in lens))
        pages = 2 * per_seq * len(lens) + extra_pages
        pool, pool64 = self.randn(pages, page, hkv, d, dtype=dtype)
        order = torch.randperm(pages).tolist()
        table = torch.tensor(order[:2 * per_seq * len(lens)], dtype=torch.int32).view(len(lens), 2, per_seq)
        if dtype != torch.float8_e4m3fn:
            used = torch.zeros(pages, page, dtype=torch.bool)
            for i, n in enumerate(lens):
                for kvi in range(2):
                    for t in range(n):
                        used[table[i, kvi, t // page], t % page] = True
            pool[~used.to(self.dev)] = NAN
        return pool, pool64, table.to(self.dev), per_seq

    @staticmethod
    def gather(pool64, table, i, kvi, n, page):
        rows = [pool64[table[i, kvi, t // page], t % page] for t in range(n)]
        return torch.stack(rows) if rows else pool64.new_zeros((0,) + tuple(pool64.shape[2:]))

    def run_paged(self, dtype, d, hq, hkv, page, causal=True, window=None, bidir=False, s_q=19):
        b = 3
        lens = [random.randint(0, 200) for _ in range(b)]
        lens[0] = 200
        pool, pool64, table, per_seq = self.make_pool(dtype, lens, page, hkv, d)
        q, q64 = self.randn(b, s_q, hq, d, dtype=dtype)
        cu = prefix(lens)
        blocks = None
        begin = torch.full((b, s_q), -1, dtype=torch.int32)
        end = torch.full((b, s_q), -1, dtype=torch.int32)
        if bidir:
            for i, n in enumerate(lens):
                lo = random.randint(0, max(0, n - 1))
                rows = slice(random.randint(0, s_q // 2), s_q)
                begin[i, rows], end[i, rows] = lo, min(n + 5, lo + random.randint(0, 40))
            blocks = (begin.to(self.dev), end.to(self.dev))
        sc = self.scales(dtype)
        scale = 1 / math.sqrt(d)
        got, lse = fmha.paged_attention(q, pool, table, cu, causal=causal, window_left=window, return_lse=True,
                                        bidirectional_blocks=blocks, **sc)
        check = Check(self, got.dtype)
        qs, ks, vs, lowp = self.precision(dtype, sc, d)
        tab = table.cpu()
        for i, n in enumerate(lens):
            allowed = causal_mask(s_q, n, window) if causal else torch.ones(s_q, n, dtype=torch.bool, device=self.dev)
            j = torch.arange(n, device=self.dev)[None, :]
            allowed |= (j >= begin[i].to(self.dev)[:, None]) & (j <= end[i].to(self.dev)[:, None])
            k = self.gather(pool64, tab, i, 0, n, page) * ks
            v = self.gather(pool64, tab, i, 1, n, page) * vs
            o, l = attend(q64[i] * qs, k, v, allowed, scale)
            o_low, _ = attend(q64[i] * qs, k, v, allowed, scale, lowp=lowp)
            check.add(got[i], o, o_low, lse[i], l)
        check.verify()

    def test_paged_masks(self):
        cases = [dict(dtype=torch.float16, d=128, hq=8, hkv=2, page=16),
                 dict(dtype=torch.bfloat16, d=64, hq=4, hkv=4, page=64, causal=False),
                 dict(dtype=torch.float8_e4m3fn, d=128, hq=8, hkv=8, page=32),
                 dict(dtype=torch.float16, d=128, hq=8, hkv=2, page=16, window=30),
                 dict(dtype=torch.bfloat16, d=128, hq=8, hkv=2, page=128, bidir=True),
                 dict(dtype=torch.float16, d=128, hq=32, hkv=8, page=16, s_q=1)]
        for case in cases:
            with self.subTest(**{k: str(v) for k, v in case.items()}):
                self.run_paged(**case)

    def test_paged_ragged(self):
        for dtype, window in ((torch.float16, None), (torch.bfloat16, 40), (torch.float8_e4m3fn, None)):
            with self.subTest(dtype=dtype, window=window):
                d, hq, hkv, page = 128, 8, 2, 16
                q_lens = [random.randint(0, 40) for _ in range(4)]
                lens = [lq + random.randint(0, 150) for lq in q_lens]
                pool, pool64, table, _ = self.make_pool(dtype, lens, page, hkv, d)
                total = sum(q_lens)
                q, q64 = self.randn(total, hq, d, dtype=dtype)
                cu_q = prefix(q_lens)
                cu_k = prefix(lens)
                sc = self.scales(dtype)
                got, lse = fmha.paged_ragged_attention(q, pool, table, cu_q, cu_k, max(q_lens), window_left=window,
                                                       return_lse=True, **sc)
                check = Check(self, got.dtype)
                qs, ks, vs, lowp = self.precision(dtype, sc, d)
                tab = table.cpu()
                row = 0
                for i, (lq, n) in enumerate(zip(q_lens, lens)):
                    rows = slice(row, row + lq)
                    k = self.gather(pool64, tab, i, 0, n, page) * ks
                    v = self.gather(pool64, tab, i, 1, n, page) * vs
                    allowed = causal_mask(lq, n, window)
                    o, l = attend(q64[rows] * qs, k, v, allowed, 1 / math.sqrt(d))
                    o_low, _ = attend(q64[rows] * qs, k, v, allowed, 1 / math.sqrt(d), lowp=lowp)
                    check.add(got[rows], o, o_low, lse[:, rows], l)
                    row += lq
                check.verify()

    # ---- ViT mode ----

    def test_vit(self):
        for dtype, d in ((torch.float16, 80), (torch.bfloat16, 128), (torch.float8_e4m3fn, 64)):
            with self.subTest(dtype=dtype, d=d):
                lens = [random.randint(0, 300) for _ in range(4)] + [0]
                total, h = sum(lens), 6
                q, q64 = self.randn(total, h, d, dtype=dtype)
                k, k64 = self.randn(total, h, d, dtype=dtype)
                v, v64 = self.randn(total, h, d, dtype=dtype)
                cu = prefix(lens)
                sc = self.scales(dtype)
                got, lse = fmha.vit_attention(q, k, v, cu, max(lens), return_lse=True, **sc)
                check = Check(self, got.dtype)
                qs, ks, vs, lowp = self.precision(dtype, sc, d)
                row = 0
                for n in lens:
                    rows = slice(row, row + n)
                    allowed = torch.ones(n, n, dtype=torch.bool, device=self.dev)
                    args = (q64[rows] * qs, k64[rows] * ks, v64[rows] * vs, allowed, 1 / math.sqrt(d))
                    o, l = attend(*args)
                    o_low, _ = attend(*args, lowp=lowp)
                    check.add(got[rows], o, o_low, lse[:, rows], l)
                    row += n
                check.verify()

    # ---- torch.compile, CUDA graphs, the error path ----

    def test_torch_compile_matches_eager(self):
        b, s_q, hq, hkv, d, cap = 2, 64, 8, 2, 128, 256
        q = torch.randn(b, s_q, hq, d, device=self.dev, dtype=torch.bfloat16)
        kv = torch.randn(b, 2, hkv, cap, d, device=self.dev, dtype=torch.bfloat16)
        cu = torch.tensor([0, 200, 456], dtype=torch.int32, device=self.dev)

        def layer(q, kv, cu):
            o, lse = fmha.llm_attention(q * 0.5, kv, cu, window_left=100, return_lse=True)
            return o.float().sum(dim=-1) + lse.transpose(1, 2)

        eager = layer(q, kv, cu)
        compiled = torch.compile(layer, fullgraph=True)(q, kv, cu)
        torch.testing.assert_close(compiled, eager, rtol=1e-4, atol=1e-3)

    def test_cuda_graph_replays_new_inputs(self):
        b, s_q, hq, hkv, d, page = 4, 1, 32, 8, 128, 64
        lens = [4000, 300, 1, 2500]
        pool, _, table, per_seq = self.make_pool(torch.float16, lens, page, hkv, d)
        cu = prefix(lens)
        q = torch.randn(b, s_q, hq, d, device=self.dev, dtype=torch.float16)
        runner = fmha.Runner(hq, hkv, d, b, s_q, per_seq * page)
        runner.preflight("paged", input_data_type=fmha.HALF)
        out = torch.full((b, s_q, hq, d), NAN, dtype=torch.float16, device=self.dev)
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            fmha.paged_attention(q, pool, table, cu, out=out, runner=runner)  # warm-up outside capture
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fmha.paged_attention(q, pool, table, cu, out=out, runner=runner)
        for _ in range(2):
            q.copy_(torch.randn_like(q))
            out.fill_(NAN)
            graph.replay()
            expect = fmha.paged_attention(q, pool, table, cu)
            self.assertTrue(torch.isfinite(out).all().item())
            self.assertTrue(torch.equal(out, expect))

    def test_refusal_raises_and_writes_nothing(self):
        q = torch.randn(1, 4, 8, 128, device=self.dev, dtype=torch.float16)
        pool = torch.randn(8, 8, 2, 128, device=self.dev, dtype=torch.float16)  # pages of 8: not taken
        table = torch.arange(8, dtype=torch.int32, device=self.dev).view(1, 2, 4)
        cu = torch.tensor([0, 20], dtype=torch.int32, device=self.dev)
        out = torch.full_like(q, NAN)
        with self.assertRaises(fmha.FmhaError) as ctx:
            fmha.paged_attention(q, pool, table, cu, out=out)
        self.assertIn("tokensPerPage (8) must be a power of two", str(ctx.exception))
        torch.cuda.synchronize()
        self.assertTrue(torch.isnan(out).all().item())

    def test_opcheck(self):
        b, s_q, hq, hkv, d, cap = 1, 16, 4, 4, 64, 64
        q = torch.randn(b, s_q, hq, d, device=self.dev, dtype=torch.float16)
        kv = torch.randn(b, 2, hkv, cap, d, device=self.dev, dtype=torch.float16)
        cu = torch.tensor([0, 50], dtype=torch.int32, device=self.dev)
        runner = fmha.Runner(hq, hkv, d, b, s_q, cap)
        out = torch.empty_like(q)
        lse = torch.empty(b, hq, s_q, device=self.dev)
        args = (runner.handle, q, kv, cu, out, lse, 0.125, 2**31 - 1, 1.0, 1.0, 1.0, 0.0)
        torch.library.opcheck(torch.ops.fmha.llm_out.default, args)


if __name__ == "__main__":
    unittest.main()
