"""fmha: fused multi-head attention (prefill, paged KV, ragged packed Q, vision varlen).

With PyTorch installed, the four modes take tensors (fmha.llm_attention, paged_attention,
paged_ragged_attention, vit_attention; torch.library ops fmha::*). Underneath, and without
PyTorch, the C API through ctypes: Runner takes device pointers (ints). The library is found
through FMHA_LIBRARY, beside the package (pip install), or in the repository's build/."""
from .runner import BF16, FP8, HALF, FmhaError, Runner, args, can_implement, last_error, version

__all__ = ["BF16", "FP8", "HALF", "FmhaError", "Runner", "args", "can_implement", "last_error", "version"]

try:
    from .ops import llm_attention, output_dtype, paged_attention, paged_ragged_attention, vit_attention
except ModuleNotFoundError as e:  # no PyTorch: the pointer-level API alone
    if e.name != "torch":
        raise
else:
    __all__ += ["llm_attention", "output_dtype", "paged_attention", "paged_ragged_attention", "vit_attention"]
