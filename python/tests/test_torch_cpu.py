"""The PyTorch layer without a GPU: argument checking, output shapes through fake tensors, and
the ops' registration. Fake CUDA tensors stand in for device tensors; nothing launches."""
import math
import unittest

try:
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode
except ModuleNotFoundError:
    torch = None

if torch is not None:
    import fmha


@unittest.skipIf(torch is None, "PyTorch is not installed")
class TorchCpuTest(unittest.TestCase):
    def setUp(self):
        self.mode = FakeTensorMode()
        self.mode.__enter__()
        self.addCleanup(self.mode.__exit__, None, None, None)

    @staticmethod
    def cuda(*shape, dtype=torch.float16 if torch else None):
        return torch.empty(*shape, dtype=dtype, device="cuda")

    def llm_inputs(self, b=2, s=5, hq=8, hkv=2, d=64, cap=32, dtype=None):
        dtype = dtype or torch.float16
        return (self.cuda(b, s, hq, d, dtype=dtype), self.cuda(b, 2, hkv, cap, d, dtype=dtype),
                self.cuda(b + 1, dtype=torch.int32))

    def paged_inputs(self, b=2, s=5, hq=8, hkv=2, d=128, pages=6, page=16, per_seq=3, dtype=None):
        dtype = dtype or torch.float16
        return (self.cuda(b, s, hq, d, dtype=dtype), self.cuda(pages, page, hkv, d, dtype=dtype),
                self.cuda(b, 2, per_seq, dtype=torch.int32), self.cuda(b + 1, dtype=torch.int32))

    # ---- Shapes and dtypes of the results (the fake implementations). ----

    def test_llm_shapes_and_dtypes(self):
        for dtype, out_dtype in ((torch.float16, torch.float16), (torch.bfloat16, torch.bfloat16),
                                 (torch.float8_e4m3fn, torch.float16)):
            q, kv, cu = self.llm_inputs(dtype=dtype)
            out, lse = fmha.llm_attention(q, kv, cu, return_lse=True)
            self.assertEqual(tuple(out.shape), (2, 5, 8, 64))
            self.assertEqual(out.dtype, out_dtype)
            self.assertEqual(tuple(lse.shape), (2, 8, 5))
            self.assertEqual(lse.dtype, torch.float32)
            self.assertEqual(out.device.type, "cuda")

    def test_paged_and_ragged_shapes(self):
        q, pool, table, cu = self.paged_inputs()
        out = fmha.paged_attention(q, pool, table, cu, causal=False)
        self.assertEqual(tuple(out.shape), tuple(q.shape))
        begin = self.cuda(2, 5, dtype=torch.int32)
        out, lse = fmha.paged_attention(q, pool, table, cu, bidirectional_blocks=(begin, begin.clone()),
                                        return_lse=True)
        self.assertEqual(tuple(lse.shape), (2, 8, 5))
        qr = self.cuda(11, 8, 128)
        out, lse = fmha.paged_ragged_attention(qr, pool, table, cu, cu, 7, return_lse=True)
        self.assertEqual(tuple(out.shape), (11, 8, 128))
        self.assertEqual(tuple(lse.shape), (8, 11))

    def test_vit_shapes_and_out(self):
        q = self.cuda(40, 4, 80, dtype=torch.bfloat16)
        cu = self.cuda(3, dtype=torch.int32)
        out = self.cuda(40, 4, 80, dtype=torch.bfloat16)
        got = fmha.vit_attention(q, q.clone(), q.clone(), cu, 20, out=out)
        self.assertIs(got, out)

    def test_ops_write_only_out_and_lse(self):
        for name in ("llm_out", "paged_out", "paged_ragged_out", "vit_out"):
            schema = getattr(torch.ops.fmha, name).default._schema
            written = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
            self.assertEqual(written, ["out", "lse"], name)

    def test_cached_runner_per_shape(self):
        q, kv, cu = self.llm_inputs()
        fmha.llm_attention(q, kv, cu)
        fmha.llm_attention(q, kv, cu)
        keys = [k for k in fmha.ops._runners if k[1:] == (8, 2, 64, 2, 5, 32)]
        self.assertEqual(len(keys), 1)

    # ---- Argument checking: each failure names the argument. ----

    def assertRaisesNaming(self, exc, name, fn, *args, **kwargs):
        with self.assertRaises(exc) as ctx:
            fn(*args, **kwargs)
        self.assertIn(name, str(ctx.exception))

    def test_llm_checks(self):
        q, kv, cu = self.llm_inputs()
        self.assertRaisesNaming(TypeError, "q", fmha.llm_attention, q.float(), kv, cu)
        self.assertRaisesNaming(TypeError, "q", fmha.llm_attention, [1.0], kv, cu)
        self.assertRaisesNaming(ValueError, "q", fmha.llm_attention, q[0], kv, cu)
        self.assertRaisesNaming(ValueError, "q", fmha.llm_attention, q.transpose(1, 2), kv, cu)
        self.assertRaisesNaming(TypeError, "kv", fmha.llm_attention, q, kv.to(torch.bfloat16), cu)
        self.assertRaisesNaming(ValueError, "kv", fmha.llm_attention, q, kv[:, :1], cu)
        self.assertRaisesNaming(ValueError, "kv", fmha.llm_attention, q, kv[:1], cu)
        self.assertRaisesNaming(TypeError, "cu_kv_seqlens", fmha.llm_attention, q, kv, cu.long())
        self.assertRaisesNaming(ValueError, "cu_kv_seqlens", fmha.llm_attention, q, kv, cu[:2])
        self.assertRaisesNaming(ValueError, "scale", fmha.llm_attention, q, kv, cu, scale=-1.0)
        self.assertRaisesNaming(ValueError, "scale", fmha.llm_attention, q, kv, cu, scale=math.inf)
        self.assertRaisesNaming(ValueError, "window_left", fmha.llm_attention, q, kv, cu, window_left=-1)
        out = self.cuda(2, 5, 8, 64, dtype=torch.bfloat16)
        self.assertRaisesNaming(TypeError, "out", fmha.llm_attention, q, kv, cu, out=out)
        self.assertRaisesNaming(ValueError, "out", fmha.llm_attention, q, kv, cu, out=self.cuda(2, 5, 8, 32))
        q8, kv8, _ = self.llm_inputs(dtype=torch.float8_e4m3fn)
        self.assertRaisesNaming(ValueError, "k_scale", fmha.llm_attention, q8, kv8, cu, k_scale=0.0)
        self.assertRaisesNaming(ValueError, "v_scale", fmha.llm_attention, q8, kv8, cu, v_scale=math.nan)

    def test_device_checks(self):
        q, kv, cu = self.llm_inputs()
        self.assertRaisesNaming(ValueError, "q", fmha.llm_attention, torch.empty(2, 5, 8, 64, dtype=torch.float16),
                                kv, cu)
        self.assertRaisesNaming(ValueError, "cu_kv_seqlens", fmha.llm_attention, q, kv,
                                torch.empty(3, dtype=torch.int32))

    def test_paged_checks(self):
        q, pool, table, cu = self.paged_inputs()
        self.assertRaisesNaming(ValueError, "kv_pool", fmha.paged_attention, q, pool[..., :64], table, cu)
        self.assertRaisesNaming(TypeError, "page_table", fmha.paged_attention, q, pool, table.long(), cu)
        self.assertRaisesNaming(ValueError, "page_table", fmha.paged_attention, q, pool, table[:, :1], cu)
        self.assertRaisesNaming(ValueError, "page_table", fmha.paged_attention, q, pool, table[:1], cu)
        begin = self.cuda(2, 5, dtype=torch.int32)
        self.assertRaisesNaming(TypeError, "bidirectional_blocks", fmha.paged_attention, q, pool, table, cu,
                                bidirectional_blocks=begin)
        self.assertRaisesNaming(ValueError, "bidirectional_blocks[1]", fmha.paged_attention, q, pool, table, cu,
                                bidirectional_blocks=(begin, begin[:, :4].contiguous()))
        qr = self.cuda(11, 8, 128)
        self.assertRaisesNaming(TypeError, "max_q_seqlen", fmha.paged_ragged_attention, qr, pool, table, cu, cu,
                                7.0)
        self.assertRaisesNaming(ValueError, "cu_q_seqlens", fmha.paged_ragged_attention, qr, pool, table,
                                cu[:1], cu, 7)
        self.assertRaisesNaming(ValueError, "q", fmha.paged_ragged_attention, q, pool, table, cu, cu, 7)

    def test_vit_checks(self):
        q = self.cuda(40, 4, 64)
        cu = self.cuda(3, dtype=torch.int32)
        self.assertRaisesNaming(ValueError, "k", fmha.vit_attention, q, self.cuda(40, 2, 64), q, cu, 20)
        self.assertRaisesNaming(TypeError, "v", fmha.vit_attention, q, q, q.to(torch.bfloat16), cu, 20)
        self.assertRaisesNaming(TypeError, "max_seqlen", fmha.vit_attention, q, q, q, cu, None)
        self.assertRaisesNaming(ValueError, "cu_seqlens", fmha.vit_attention, q, q, q, cu[:1], 20)

    def test_runner_must_match_the_tensors(self):
        q, kv, cu = self.llm_inputs()
        with fmha.Runner(8, 2, 64, 2, 5, 32) as good:
            fmha.llm_attention(q, kv, cu, runner=good)
        with fmha.Runner(8, 2, 64, 2, 6, 32) as other:
            self.assertRaisesNaming(ValueError, "seq_len_q 6 (tensors: 5)", fmha.llm_attention, q, kv, cu,
                                    runner=other)
        closed = fmha.Runner(8, 2, 64, 2, 5, 32)
        closed.close()
        self.assertRaisesNaming(ValueError, "closed", fmha.llm_attention, q, kv, cu, runner=closed)

    def test_output_dtype(self):
        self.assertEqual(fmha.output_dtype(torch.float8_e4m3fn), torch.float16)
        self.assertEqual(fmha.output_dtype(torch.bfloat16), torch.bfloat16)
        # out_dtype: BF16 output for FP8 input; 16-bit input writes its own type only.
        self.assertEqual(fmha.output_dtype(torch.float8_e4m3fn, torch.bfloat16), torch.bfloat16)
        self.assertEqual(fmha.output_dtype(torch.float8_e4m3fn, torch.float16), torch.float16)
        self.assertEqual(fmha.output_dtype(torch.float16, torch.float16), torch.float16)
        for dtype, out_dtype in ((torch.float16, torch.bfloat16), (torch.bfloat16, torch.float16),
                                 (torch.float8_e4m3fn, torch.float32)):
            with self.assertRaisesRegex(TypeError, "out_dtype"):
                fmha.output_dtype(dtype, out_dtype)


if __name__ == "__main__":
    unittest.main()
