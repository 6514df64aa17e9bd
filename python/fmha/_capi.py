"""ctypes declarations of the library's C API (include/fmha/fmha_c.h): the runner handle, the
per-mode argument structs and the functions that take them. The structs mirror the C
layout field for field; the tests check each against the library's own init function."""
import ctypes
import os
from ctypes import POINTER, c_bool, c_char_p, c_float, c_int32, c_size_t, c_void_p

INT32_MAX = 2**31 - 1


class LlmArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("q", c_void_p), ("kv", c_void_p), ("o", c_void_p),
                ("cu_kv_seq_lens", c_void_p), ("stream", c_void_p), ("attention_scale", c_float),
                ("sliding_window_size", c_int32), ("input_data_type", c_int32), ("q_scale", c_float),
                ("k_scale", c_float), ("v_scale", c_float), ("skip_softmax_scale_factor", c_float),
                ("lse", c_void_p), ("bf16_output", c_int32)]


class PagedArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("q", c_void_p), ("paged_kv_pool", c_void_p),
                ("kv_cache_page_list", c_void_p), ("o", c_void_p), ("cu_kv_seq_lens", c_void_p),
                ("num_pages", c_int32), ("max_pages_per_seq", c_int32), ("tokens_per_page", c_int32),
                ("stream", c_void_p), ("attention_scale", c_float), ("sliding_window_size", c_int32),
                ("input_data_type", c_int32), ("q_scale", c_float), ("k_scale", c_float), ("v_scale", c_float),
                ("is_causal", c_bool), ("skip_softmax_scale_factor", c_float),
                ("bidirectional_block_begin", c_void_p), ("bidirectional_block_end", c_void_p),
                ("lse", c_void_p), ("bf16_output", c_int32)]


class PagedRaggedArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("q", c_void_p), ("paged_kv_pool", c_void_p),
                ("kv_cache_page_list", c_void_p), ("o", c_void_p), ("cu_q_seq_lens", c_void_p),
                ("cu_kv_seq_lens", c_void_p), ("total_q_seq_len", c_int32), ("max_q_seq_len", c_int32),
                ("num_flat_pages", c_int32), ("max_pages_per_seq", c_int32), ("tokens_per_page", c_int32),
                ("stream", c_void_p), ("attention_scale", c_float), ("sliding_window_size", c_int32),
                ("input_data_type", c_int32), ("q_scale", c_float), ("k_scale", c_float), ("v_scale", c_float),
                ("lse", c_void_p), ("bf16_output", c_int32)]


class VitArgs(ctypes.Structure):
    _fields_ = [("struct_size", c_size_t), ("q", c_void_p), ("k", c_void_p), ("v", c_void_p), ("o", c_void_p),
                ("cu_seq_lens", c_void_p), ("total_seq_len", c_int32), ("max_seq_len", c_int32),
                ("batch_size", c_int32), ("stream", c_void_p), ("attention_scale", c_float),
                ("input_data_type", c_int32), ("q_scale", c_float), ("k_scale", c_float), ("v_scale", c_float),
                ("lse", c_void_p), ("bf16_output", c_int32)]


# mode -> (struct, C name stem); preflight of the paged mode takes use_bidirectional too.
MODES = {
    "llm": (LlmArgs, "llm"),
    "paged": (PagedArgs, "paged"),
    "paged_ragged": (PagedRaggedArgs, "paged_ragged"),
    "vit": (VitArgs, "vit"),
}


def _library_path():
    """FMHA_LIBRARY, else a libfmha.so beside this package, else the repository's build/."""
    env = os.environ.get("FMHA_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "libfmha.so"),
                      os.path.join(here, "..", "..", "build", "libfmha.so")):
        if os.path.exists(candidate):
            return os.path.normpath(candidate)
    raise OSError("libfmha.so not found: set FMHA_LIBRARY to its path (cmake --build builds it as build/libfmha.so)")


def load():
    lib = ctypes.CDLL(_library_path())
    runner = c_void_p
    lib.fmha_runner_create.restype = runner
    lib.fmha_runner_create.argtypes = [c_int32] * 6
    lib.fmha_runner_destroy.restype = None
    lib.fmha_runner_destroy.argtypes = [runner]
    lib.fmha_runner_set_split_kv.restype = c_bool
    lib.fmha_runner_set_split_kv.argtypes = [runner, c_int32]
    lib.fmha_runner_workspace_bytes.restype = c_size_t
    lib.fmha_runner_workspace_bytes.argtypes = [runner]
    lib.fmha_version.restype = c_int32
    lib.fmha_version.argtypes = []
    lib.fmha_last_error.restype = c_char_p
    lib.fmha_last_error.argtypes = []
    for struct, stem in MODES.values():
        getattr(lib, f"fmha_{stem}_args_init").restype = None
        getattr(lib, f"fmha_{stem}_args_init").argtypes = [POINTER(struct)]
        getattr(lib, f"fmha_run_{stem}_args").restype = c_bool
        getattr(lib, f"fmha_run_{stem}_args").argtypes = [runner, POINTER(struct)]
        pre = getattr(lib, f"fmha_preflight_{stem}_args")
        pre.restype = c_bool
        pre.argtypes = [runner, POINTER(struct)] + ([c_bool] if stem == "paged" else [])
    lib.fmha_can_implement.restype = c_bool
    lib.fmha_can_implement.argtypes = [c_int32, c_int32]
    lib.fmha_can_implement_vit.restype = c_bool
    lib.fmha_can_implement_vit.argtypes = [c_int32, c_int32]
    lib.fmha_can_implement_paged_ragged.restype = c_bool
    lib.fmha_can_implement_paged_ragged.argtypes = [c_int32] * 6
    return lib
