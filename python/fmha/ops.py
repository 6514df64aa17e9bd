"""The four modes on PyTorch tensors, as torch.library custom ops (fmha::*), so that
torch.compile traces them (fake implementations give the shapes) and CUDA graphs capture them.

Each function checks shapes, dtypes, devices and contiguity before anything reaches the
library (ValueError / TypeError), allocates the output (or fills `out=`) and returns it, with
the LSE as a second result when return_lse is set. The output is FP16 for FP16 and FP8 input,
BF16 for BF16; `out_dtype=torch.bfloat16` makes FP8 input write BF16 (`out=` must match). Layouts and semantics are the runner's
(docs/SEMANTICS.md); `window_left` is its slidingWindowSize: a row sees the keys from
`window_left` positions before its own up to its own (None: no window).

A runner per (device, shape) is created on first use and kept for the life of the process (each
holds its split-KV workspace once a call splits; a CUDA graph captured through it stays valid),
so an engine whose shapes vary widely should pass runner= with runners of its own (also for
preflight ahead of a capture, or a split-KV setting)."""
import ctypes
import math
from typing import Optional

import torch

from . import _capi
from .runner import BF16, FP8, HALF, FmhaError, Runner, args, last_error, lib

INT32_MAX = _capi.INT32_MAX

_INPUT_TYPES = {torch.float16: HALF, torch.bfloat16: BF16, torch.float8_e4m3fn: FP8}
_runners = {}


def output_dtype(dtype, out_dtype=None):
    """The output dtype for an input dtype: BF16 for BF16, FP16 for FP16 and, unless out_dtype
    asks for torch.bfloat16, FP8. out_dtype (None: the default) must be that default for 16-bit
    input, float16 or bfloat16 for FP8."""
    default = torch.bfloat16 if dtype == torch.bfloat16 else torch.float16
    if out_dtype is None or out_dtype == default:
        return default
    if dtype == torch.float8_e4m3fn and out_dtype == torch.bfloat16:
        return out_dtype
    raise TypeError(f"out_dtype: {out_dtype} is not an output of {dtype} input (float16 or bfloat16 for "
                    f"float8_e4m3fn; the input's own type for 16-bit input)")


def _bf16_output(q, out):
    """The C field bf16_output: FP8 input writing a BF16 output tensor."""
    return int(q.dtype == torch.float8_e4m3fn and out.dtype == torch.bfloat16)


def _input_type(name, t):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dtype not in _INPUT_TYPES:
        raise TypeError(f"{name}: dtype {t.dtype} is not supported (float16, bfloat16 or float8_e4m3fn)")
    return _INPUT_TYPES[t.dtype]


def _check_tensor(name, t, ndim, device, dtype=None):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dim() != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got shape {tuple(t.shape)}")
    if dtype is not None and t.dtype != dtype:
        raise TypeError(f"{name}: expected dtype {dtype}, got {t.dtype}")
    if t.device != device:
        raise ValueError(f"{name}: on {t.device}, expected {device} (the device of q)")
    if not t.is_contiguous():
        raise ValueError(f"{name}: must be contiguous (row-major, last dimension innermost)")


def _check_shape(name, t, shape):
    if tuple(t.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {tuple(shape)}, got {tuple(t.shape)}")


def _check_same_dtype(q, **others):
    for name, t in others.items():
        if t.dtype != q.dtype:
            raise TypeError(f"{name}: dtype {t.dtype} differs from q's {q.dtype}")


def _check_q(q, ndim):
    _input_type("q", q)
    if q.device.type != "cuda":
        raise ValueError(f"q: must be a CUDA tensor, got device {q.device}")
    _check_tensor("q", q, ndim, q.device)


def _check_index(name, t, length, device):
    _check_tensor(name, t, 1, device, torch.int32)
    _check_shape(name, t, (length,))


def _scale(scale, head_dim):
    s = 1.0 / math.sqrt(head_dim) if scale is None else float(scale)
    if not (math.isfinite(s) and s > 0):
        raise ValueError(f"scale: must be finite and > 0, got {s}")
    return s


def _window(window_left):
    if window_left is None:
        return INT32_MAX
    w = int(window_left)
    if w < 0:
        raise ValueError(f"window_left: must be >= 0 or None, got {w}")
    return min(w, INT32_MAX)


def _outputs(out, shape, dtype, device, lse_shape, return_lse):
    if out is None:
        out = torch.empty(shape, dtype=dtype, device=device)
    else:
        _check_tensor("out", out, len(shape), device, dtype)
        _check_shape("out", out, shape)
    lse_t = torch.empty(lse_shape, dtype=torch.float32, device=device) if return_lse else None
    return out, lse_t


def _result(out, lse, return_lse):
    return (out, lse) if return_lse else out


def _get_runner(runner, device, dims):
    """The caller's runner (its dims checked) or the cached one for (device, dims)."""
    if runner is not None:
        have = (runner.num_q_heads, runner.num_kv_heads, runner.head_dim, runner.batch_size, runner.seq_len_q,
                runner.kv_cache_capacity)
        if have != dims:
            names = ("num_q_heads", "num_kv_heads", "head_dim", "batch_size", "seq_len_q", "kv_cache_capacity")
            diff = ", ".join(f"{n} {h} (tensors: {d})" for n, h, d in zip(names, have, dims) if h != d)
            raise ValueError(f"runner: built for other shapes: {diff}")
        return runner
    key = (device.index,) + dims
    found = _runners.get(key)
    if found is None:
        found = _runners[key] = Runner(*dims)
    return found


def _ptr(t):
    return 0 if t is None else t.data_ptr()


def _launch(mode, handle, device, **fields):
    """One call of the library on q's device and its current stream."""
    with torch.cuda.device(device):
        a = args(mode, stream=torch.cuda.current_stream(device).cuda_stream, **fields)
        ok = getattr(lib(), f"fmha_run_{_capi.MODES[mode][1]}_args")(handle, ctypes.byref(a))
    if not ok:
        raise FmhaError(last_error())


# ---- The custom ops: out-variants (they fill out and lse; the functions below allocate). ----

@torch.library.custom_op("fmha::llm_out", mutates_args=("out", "lse"), device_types="cuda")
def _llm_out(runner: int, q: torch.Tensor, kv: torch.Tensor, cu_kv_seqlens: torch.Tensor, out: torch.Tensor,
             lse: Optional[torch.Tensor], scale: float, window_left: int, q_scale: float, k_scale: float,
             v_scale: float, skip_softmax: float) -> None:
    _launch("llm", runner, q.device, q=q.data_ptr(), kv=kv.data_ptr(), o=out.data_ptr(),
            cu_kv_seq_lens=cu_kv_seqlens.data_ptr(), attention_scale=scale, sliding_window_size=window_left,
            input_data_type=_INPUT_TYPES[q.dtype], q_scale=q_scale, k_scale=k_scale, v_scale=v_scale,
            skip_softmax_scale_factor=skip_softmax, lse=_ptr(lse), bf16_output=_bf16_output(q, out))


@torch.library.custom_op("fmha::paged_out", mutates_args=("out", "lse"), device_types="cuda")
def _paged_out(runner: int, q: torch.Tensor, kv_pool: torch.Tensor, page_table: torch.Tensor,
               cu_kv_seqlens: torch.Tensor, out: torch.Tensor, lse: Optional[torch.Tensor],
               block_begin: Optional[torch.Tensor], block_end: Optional[torch.Tensor], scale: float,
               window_left: int, causal: bool, q_scale: float, k_scale: float, v_scale: float,
               skip_softmax: float) -> None:
    _launch("paged", runner, q.device, q=q.data_ptr(), paged_kv_pool=kv_pool.data_ptr(),
            kv_cache_page_list=page_table.data_ptr(), o=out.data_ptr(), cu_kv_seq_lens=cu_kv_seqlens.data_ptr(),
            num_pages=kv_pool.shape[0], max_pages_per_seq=page_table.shape[2], tokens_per_page=kv_pool.shape[1],
            attention_scale=scale, sliding_window_size=window_left, input_data_type=_INPUT_TYPES[q.dtype],
            q_scale=q_scale, k_scale=k_scale, v_scale=v_scale, is_causal=causal,
            skip_softmax_scale_factor=skip_softmax, bidirectional_block_begin=_ptr(block_begin),
            bidirectional_block_end=_ptr(block_end), lse=_ptr(lse), bf16_output=_bf16_output(q, out))


@torch.library.custom_op("fmha::paged_ragged_out", mutates_args=("out", "lse"), device_types="cuda")
def _paged_ragged_out(runner: int, q: torch.Tensor, kv_pool: torch.Tensor, page_table: torch.Tensor,
                      cu_q_seqlens: torch.Tensor, cu_kv_seqlens: torch.Tensor, max_q_seqlen: int,
                      out: torch.Tensor, lse: Optional[torch.Tensor], scale: float, window_left: int,
                      q_scale: float, k_scale: float, v_scale: float) -> None:
    _launch("paged_ragged", runner, q.device, q=q.data_ptr(), paged_kv_pool=kv_pool.data_ptr(),
            kv_cache_page_list=page_table.data_ptr(), o=out.data_ptr(), cu_q_seq_lens=cu_q_seqlens.data_ptr(),
            cu_kv_seq_lens=cu_kv_seqlens.data_ptr(), total_q_seq_len=q.shape[0], max_q_seq_len=max_q_seqlen,
            num_flat_pages=kv_pool.shape[0], max_pages_per_seq=page_table.shape[2],
            tokens_per_page=kv_pool.shape[1], attention_scale=scale, sliding_window_size=window_left,
            input_data_type=_INPUT_TYPES[q.dtype], q_scale=q_scale, k_scale=k_scale, v_scale=v_scale,
            lse=_ptr(lse), bf16_output=_bf16_output(q, out))


@torch.library.custom_op("fmha::vit_out", mutates_args=("out", "lse"), device_types="cuda")
def _vit_out(runner: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, cu_seqlens: torch.Tensor,
             max_seqlen: int, out: torch.Tensor, lse: Optional[torch.Tensor], scale: float, q_scale: float,
             k_scale: float, v_scale: float) -> None:
    _launch("vit", runner, q.device, q=q.data_ptr(), k=k.data_ptr(), v=v.data_ptr(), o=out.data_ptr(),
            cu_seq_lens=cu_seqlens.data_ptr(), total_seq_len=q.shape[0], max_seq_len=max_seqlen,
            batch_size=cu_seqlens.shape[0] - 1, attention_scale=scale, input_data_type=_INPUT_TYPES[q.dtype],
            q_scale=q_scale, k_scale=k_scale, v_scale=v_scale, lse=_ptr(lse), bf16_output=_bf16_output(q, out))


# The outputs are filled in place, so the fake (meta) implementations have nothing to return.
for _op in (_llm_out, _paged_out, _paged_ragged_out, _vit_out):
    _op.register_fake(lambda *args, **kwargs: None)


# ---- The functions. ----

def _fp8_scales(q, q_scale, k_scale, v_scale):
    scales = (float(q_scale), float(k_scale), float(v_scale))
    if q.dtype == torch.float8_e4m3fn:
        for name, s in zip(("q_scale", "k_scale", "v_scale"), scales):
            if not (math.isfinite(s) and s > 0):
                raise ValueError(f"{name}: must be finite and > 0, got {s}")
    return scales


def llm_attention(q, kv, cu_kv_seqlens, *, scale=None, window_left=None, q_scale=1.0, k_scale=1.0, v_scale=1.0,
                  skip_softmax=0.0, return_lse=False, out=None, out_dtype=None, runner=None):
    """LLM prefill over a contiguous KV cache, causal (bottom-right) with an optional window.

    q: [B, S_q, Hq, D]; kv: [B, 2, Hkv, capacity, D] (K then V); cu_kv_seqlens: int32 [B+1]
    (sequence b has cu[b+1] - cu[b] keys). Returns out [B, S_q, Hq, D] (and lse float32
    [B, Hq, S_q] with return_lse)."""
    _check_q(q, 4)
    b, s_q, hq, d = q.shape
    _check_tensor("kv", kv, 5, q.device)
    _check_same_dtype(q, kv=kv)
    if kv.shape[0] != b or kv.shape[1] != 2 or kv.shape[4] != d:
        raise ValueError(f"kv: expected shape [{b}, 2, Hkv, capacity, {d}] for q {tuple(q.shape)}, "
                         f"got {tuple(kv.shape)}")
    hkv, cap = kv.shape[2], kv.shape[3]
    _check_index("cu_kv_seqlens", cu_kv_seqlens, b + 1, q.device)
    qs, ks, vs = _fp8_scales(q, q_scale, k_scale, v_scale)
    r = _get_runner(runner, q.device, (hq, hkv, d, b, s_q, cap))
    out, lse = _outputs(out, (b, s_q, hq, d), output_dtype(q.dtype, out_dtype), q.device, (b, hq, s_q), return_lse)
    _llm_out(r.handle, q, kv, cu_kv_seqlens, out, lse, _scale(scale, d), _window(window_left), qs, ks, vs,
             float(skip_softmax))
    return _result(out, lse, return_lse)


def _check_pool(q, kv_pool, page_table, b, d):
    _check_tensor("kv_pool", kv_pool, 4, q.device)
    _check_same_dtype(q, kv_pool=kv_pool)
    if kv_pool.shape[3] != d:
        raise ValueError(f"kv_pool: expected shape [num_pages, page_size, Hkv, {d}], got {tuple(kv_pool.shape)}")
    _check_tensor("page_table", page_table, 3, q.device, torch.int32)
    if page_table.shape[0] != b or page_table.shape[1] != 2:
        raise ValueError(f"page_table: expected shape [{b}, 2, max_pages_per_seq] (K pages, then V pages), "
                         f"got {tuple(page_table.shape)}")
    return kv_pool.shape[2], page_table.shape[2] * kv_pool.shape[1]


def paged_attention(q, kv_pool, page_table, cu_kv_seqlens, *, causal=True, window_left=None, scale=None,
                    bidirectional_blocks=None, q_scale=1.0, k_scale=1.0, v_scale=1.0, skip_softmax=0.0,
                    return_lse=False, out=None, out_dtype=None, runner=None):
    """Batched Q over a paged KV cache (chunked prefill, decode).

    q: [B, S_q, Hq, D]; kv_pool: [num_pages, page_size, Hkv, D]; page_table: int32
    [B, 2, max_pages_per_seq] (K pages, then V pages); cu_kv_seqlens: int32 [B+1].
    bidirectional_blocks: None or (begin, end), int32 [B, S_q] each, inclusive key positions
    (-1: none). Returns out [B, S_q, Hq, D] (and lse [B, Hq, S_q])."""
    _check_q(q, 4)
    b, s_q, hq, d = q.shape
    hkv, cap = _check_pool(q, kv_pool, page_table, b, d)
    _check_index("cu_kv_seqlens", cu_kv_seqlens, b + 1, q.device)
    begin = end = None
    if bidirectional_blocks is not None:
        if not isinstance(bidirectional_blocks, (tuple, list)) or len(bidirectional_blocks) != 2:
            raise TypeError("bidirectional_blocks: expected a (begin, end) pair of tensors")
        begin, end = bidirectional_blocks
        for name, t in (("bidirectional_blocks[0]", begin), ("bidirectional_blocks[1]", end)):
            _check_tensor(name, t, 2, q.device, torch.int32)
            _check_shape(name, t, (b, s_q))
    qs, ks, vs = _fp8_scales(q, q_scale, k_scale, v_scale)
    r = _get_runner(runner, q.device, (hq, hkv, d, b, s_q, cap))
    out, lse = _outputs(out, (b, s_q, hq, d), output_dtype(q.dtype, out_dtype), q.device, (b, hq, s_q), return_lse)
    _paged_out(r.handle, q, kv_pool, page_table, cu_kv_seqlens, out, lse, begin, end, _scale(scale, d),
               _window(window_left), bool(causal), qs, ks, vs, float(skip_softmax))
    return _result(out, lse, return_lse)


def paged_ragged_attention(q, kv_pool, page_table, cu_q_seqlens, cu_kv_seqlens, max_q_seqlen, *, window_left=None,
                           scale=None, q_scale=1.0, k_scale=1.0, v_scale=1.0, return_lse=False, out=None,
                           out_dtype=None, runner=None):
    """Packed ragged Q over a paged KV cache, causal (the new tokens end each history).

    q: [total_q, Hq, D]; sequence b owns rows cu_q_seqlens[b] .. cu_q_seqlens[b+1]-1 and has
    cu_kv_seqlens[b+1] - cu_kv_seqlens[b] keys including its new ones; max_q_seqlen: the
    largest query count (an int). Returns out [total_q, Hq, D] (and lse [Hq, total_q])."""
    _check_q(q, 3)
    total, hq, d = q.shape
    _check_tensor("cu_q_seqlens", cu_q_seqlens, 1, q.device, torch.int32)
    b = cu_q_seqlens.shape[0] - 1
    if b < 1:
        raise ValueError("cu_q_seqlens: needs at least 2 entries (B+1)")
    hkv, cap = _check_pool(q, kv_pool, page_table, b, d)
    _check_index("cu_kv_seqlens", cu_kv_seqlens, b + 1, q.device)
    if not isinstance(max_q_seqlen, int) or max_q_seqlen < 0:
        raise TypeError(f"max_q_seqlen: expected an int >= 0, got {max_q_seqlen!r}")
    qs, ks, vs = _fp8_scales(q, q_scale, k_scale, v_scale)
    r = _get_runner(runner, q.device, (hq, hkv, d, b, 0, cap))
    out, lse = _outputs(out, (total, hq, d), output_dtype(q.dtype, out_dtype), q.device, (hq, total), return_lse)
    _paged_ragged_out(r.handle, q, kv_pool, page_table, cu_q_seqlens, cu_kv_seqlens, max_q_seqlen, out, lse,
                      _scale(scale, d), _window(window_left), qs, ks, vs)
    return _result(out, lse, return_lse)


def vit_attention(q, k, v, cu_seqlens, max_seqlen, *, scale=None, q_scale=1.0, k_scale=1.0, v_scale=1.0,
                  return_lse=False, out=None, out_dtype=None, runner=None):
    """Packed variable-length full attention (vision encoders): each token sees its whole sequence.

    q, k, v: [total, H, D]; cu_seqlens: int32 [B+1]; max_seqlen: the longest sequence (an int).
    Returns out [total, H, D] (and lse [H, total])."""
    _check_q(q, 3)
    total, h, d = q.shape
    for name, t in (("k", k), ("v", v)):
        _check_tensor(name, t, 3, q.device)
        _check_shape(name, t, q.shape)
    _check_same_dtype(q, k=k, v=v)
    _check_tensor("cu_seqlens", cu_seqlens, 1, q.device, torch.int32)
    if cu_seqlens.shape[0] < 2:
        raise ValueError("cu_seqlens: needs at least 2 entries (B+1)")
    if not isinstance(max_seqlen, int) or max_seqlen < 0:
        raise TypeError(f"max_seqlen: expected an int >= 0, got {max_seqlen!r}")
    qs, ks, vs = _fp8_scales(q, q_scale, k_scale, v_scale)
    r = _get_runner(runner, q.device, (h, h, d, 0, 0, 0))
    out, lse = _outputs(out, (total, h, d), output_dtype(q.dtype, out_dtype), q.device, (h, total), return_lse)
    _vit_out(r.handle, q, k, v, cu_seqlens, max_seqlen, out, lse, _scale(scale, d), qs, ks, vs)
    return _result(out, lse, return_lse)
