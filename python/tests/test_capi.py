"""The Python binding's C layer on a machine without a GPU: every argument struct against the
library's own layout (its size and defaults, and fields the library reads back through its
validation messages), the error path, the split-KV setting and the version. Run with
FMHA_LIBRARY=build/libfmha.so python -m pytest python/tests (conftest.py picks the package)."""
import ctypes
import os
import unittest

import fmha
from fmha import _capi


class StructLayout(unittest.TestCase):
    def test_sizes_match_the_library(self):
        # fmha_*_args_init writes sizeof(the C struct) into struct_size.
        for mode, (struct, _) in _capi.MODES.items():
            with self.subTest(mode=mode):
                self.assertEqual(fmha.args(mode).struct_size, ctypes.sizeof(struct))

    def test_defaults_are_the_cxx_structs(self):
        for mode in _capi.MODES:
            with self.subTest(mode=mode):
                a = fmha.args(mode)
                self.assertEqual(a.input_data_type, fmha.HALF)
                self.assertEqual((a.q_scale, a.k_scale, a.v_scale), (1.0, 1.0, 1.0))
                self.assertEqual(a.attention_scale, 0.0)
                self.assertIn(a.q, (None, 0))
                self.assertIn(a.lse, (None, 0))
                if hasattr(a, "sliding_window_size"):
                    self.assertEqual(a.sliding_window_size, _capi.INT32_MAX)
        self.assertTrue(fmha.args("paged").is_causal)

    def test_unknown_field_is_a_type_error(self):
        with self.assertRaisesRegex(TypeError, "no argument 'window'"):
            fmha.args("llm", window=3)
        with self.assertRaisesRegex(ValueError, "mode 'decode'"):
            fmha.args("decode")


class Validation(unittest.TestCase):
    """Each refusal names a field's value as the library read it: the field sits where C has it."""

    def refused(self, runner, mode, pattern, **fields):
        with self.assertRaises(fmha.FmhaError) as ctx:
            runner.run(mode, **fields)
        self.assertRegex(str(ctx.exception), pattern)
        self.assertRegex(fmha.last_error(), pattern)

    def test_llm(self):
        with fmha.Runner(8, 2, 128, 2, 4, 1024) as r:
            self.refused(r, "llm", r"attentionScale \(-1\)", attention_scale=-1.0)
            self.refused(r, "llm", r"slidingWindowSize \(-5\)", attention_scale=0.125, sliding_window_size=-5)
            self.refused(r, "llm", r"FP8 scales \(q 0, k 2, v 3\)", attention_scale=0.125, input_data_type=fmha.FP8,
                         q_scale=0.0, k_scale=2.0, v_scale=3.0)
            self.refused(r, "llm", r"skipSoftmaxScaleFactor \(-1\)", attention_scale=0.125,
                         skip_softmax_scale_factor=-1.0)
            self.refused(r, "llm", r"qPtr is null", attention_scale=0.125)
            self.refused(r, "llm", r"kvPtr is null", attention_scale=0.125, q=16)
            self.refused(r, "llm", r"input data type int8", attention_scale=0.125, input_data_type=2)
        with fmha.Runner(8, 2, 100) as r:
            self.refused(r, "llm", r"head dim 100 is not supported", attention_scale=0.125)

    def test_paged(self):
        with fmha.Runner(8, 2, 128, 2, 4, 1024) as r:
            self.refused(r, "paged", r"needs the causal mask", attention_scale=0.125, is_causal=False,
                         sliding_window_size=10)
            self.refused(r, "paged", r"both be set", attention_scale=0.125, bidirectional_block_begin=64)
            self.refused(r, "paged", r"numPages \(0\)", attention_scale=0.125, max_pages_per_seq=16,
                         tokens_per_page=64)
            self.refused(r, "paged", r"tokensPerPage \(24\)", attention_scale=0.125, num_pages=40,
                         max_pages_per_seq=16, tokens_per_page=24)
            self.refused(r, "paged", r"kvCacheCapacity \(1024\) must equal .* \(2048\)", attention_scale=0.125,
                         num_pages=40, max_pages_per_seq=32, tokens_per_page=64)

    def test_paged_ragged(self):
        with fmha.Runner(8, 2, 128, 2, 4, 1024) as r:
            self.refused(r, "paged_ragged", r"totalQSeqLen \(0\)", attention_scale=0.125)
            self.refused(r, "paged_ragged", r"maxQSeqLen \(9\) must be in \[1, totalQSeqLen = 4\]",
                         attention_scale=0.125, total_q_seq_len=4, max_q_seq_len=9)
            self.refused(r, "paged_ragged", r"numFlatPages \(0\)", attention_scale=0.125, total_q_seq_len=4,
                         max_q_seq_len=3)

    def test_vit(self):
        with fmha.Runner(4, 4, 80) as r:
            self.refused(r, "vit", r"batchSize \(0\)", attention_scale=0.125)
            self.refused(r, "vit", r"totalSeqLen \(-3\)", attention_scale=0.125, batch_size=2, total_seq_len=-3)
            self.refused(r, "vit", r"maxSeqLen \(0\)", attention_scale=0.125, batch_size=2, total_seq_len=8)
        with fmha.Runner(4, 2, 80) as r:
            self.refused(r, "vit", r"numKVHeads \(2\) must equal numQHeads \(4\)", attention_scale=0.125)


class RunnerState(unittest.TestCase):
    def test_split_kv_setting(self):
        with fmha.Runner(8, 2, 128, 1, 1, 4096) as r:
            self.assertEqual(r.workspace_bytes, 0)
            r.set_split_kv(8)
            r.set_split_kv(0)
            with self.assertRaisesRegex(fmha.FmhaError, "setSplitKv"):
                r.set_split_kv(65)

    def test_version_and_predicates(self):
        self.assertEqual(fmha.version()[:2], (0, 4))
        self.assertTrue(fmha.can_implement(128, 90))
        self.assertTrue(fmha.can_implement(80, 80, mode="vit"))
        self.assertFalse(fmha.can_implement(100, 90))
        self.assertFalse(fmha.can_implement(128, 75))

    def test_close_twice(self):
        r = fmha.Runner(8, 2, 128)
        r.close()
        r.close()


if __name__ == "__main__":
    unittest.main()
