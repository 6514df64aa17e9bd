"""fmha: the attention runner's C API from Python (ctypes). Device buffers pass as pointers
(ints), so any framework's tensors work: a PyTorch tensor's data_ptr(), a CuPy array's
data.ptr. The library is found through FMHA_LIBRARY, beside the package, or in build/."""
from .runner import BF16, FP8, HALF, FmhaError, Runner, args, can_implement, last_error, version

__all__ = ["BF16", "FP8", "HALF", "FmhaError", "Runner", "args", "can_implement", "last_error", "version"]
