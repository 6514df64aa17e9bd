"""The runner over the C API, for callers that hold device pointers (as Python ints): the
same four modes, preflight and split-KV setting as fmha::FmhaRunner. Arguments go by the C
structs' field names; fields left out keep the library's defaults (fmha_*_args_init)."""
import ctypes

from . import _capi

_lib = None


def lib():
    """The loaded library (once per process)."""
    global _lib
    if _lib is None:
        _lib = _capi.load()
    return _lib


class FmhaError(RuntimeError):
    """A call the library refused or could not launch; the message is the library's."""


# fmha::DataType values the runner takes.
HALF, FP8, BF16 = 1, 6, 7


def version():
    """(major, minor, patch) of the loaded library."""
    v = lib().fmha_version()
    return v // 10000, v // 100 % 100, v % 100


def last_error():
    return lib().fmha_last_error().decode()


def args(mode, **fields):
    """The mode's C argument struct with the library's defaults, then `fields` set. Pointers
    are ints (0: NULL). An unknown field is a TypeError naming the ones the mode has."""
    if mode not in _capi.MODES:
        raise ValueError(f"mode {mode!r}: one of {sorted(_capi.MODES)}")
    struct, stem = _capi.MODES[mode]
    a = struct()
    getattr(lib(), f"fmha_{stem}_args_init")(ctypes.byref(a))
    names = [n for n, _ in struct._fields_ if n != "struct_size"]
    for name, value in fields.items():
        if name not in names:
            raise TypeError(f"{mode}: no argument {name!r} (the mode takes {', '.join(names)})")
        setattr(a, name, value)
    return a


class Runner:
    """fmha::FmhaRunner: heads and head dim, and for the batched modes the batch, the query
    rows per sequence and the KV cache capacity (see include/fmha/fmha.h)."""

    def __init__(self, num_q_heads, num_kv_heads, head_dim, batch_size=0, seq_len_q=0, kv_cache_capacity=0):
        self.num_q_heads, self.num_kv_heads, self.head_dim = num_q_heads, num_kv_heads, head_dim
        self.batch_size, self.seq_len_q, self.kv_cache_capacity = batch_size, seq_len_q, kv_cache_capacity
        self._handle = lib().fmha_runner_create(num_q_heads, num_kv_heads, head_dim, batch_size, seq_len_q,
                                                kv_cache_capacity)
        if not self._handle:
            raise FmhaError(last_error())

    @property
    def handle(self):
        """The C runner (fmha_runner*) as an int; what the torch ops take."""
        if not self._handle:
            raise ValueError("runner: closed")
        return self._handle

    def close(self):
        if getattr(self, "_handle", None):
            lib().fmha_runner_destroy(self._handle)
            self._handle = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _check(self, ok):
        if not ok:
            raise FmhaError(last_error())

    def run(self, mode, **fields):
        """One call of mode ('llm', 'paged', 'paged_ragged' or 'vit') with the C struct's
        fields; raises FmhaError with the library's message when it is refused."""
        a = args(mode, **fields)
        self._check(getattr(lib(), f"fmha_run_{_capi.MODES[mode][1]}_args")(self._handle, ctypes.byref(a)))

    def preflight(self, mode, use_bidirectional=False, **fields):
        """The variant the matching run would select, prepared ahead (and, in the paged modes,
        the split-KV workspace allocated); not during stream capture."""
        a = args(mode, **fields)
        fn = getattr(lib(), f"fmha_preflight_{_capi.MODES[mode][1]}_args")
        extra = (use_bidirectional,) if mode == "paged" else ()
        self._check(fn(self._handle, ctypes.byref(a), *extra))

    def set_split_kv(self, parts):
        """Split-KV in the paged modes: 0 automatic, 1 never, 2..64 forced parts."""
        self._check(lib().fmha_runner_set_split_kv(self._handle, parts))

    @property
    def workspace_bytes(self):
        return lib().fmha_runner_workspace_bytes(self._handle)


def can_implement(head_size, sm_version, mode="llm"):
    """Whether this build has a kernel for the head size on SM version sm_version (FP16;
    mode 'llm' or 'vit')."""
    fn = lib().fmha_can_implement_vit if mode == "vit" else lib().fmha_can_implement
    return bool(fn(head_size, sm_version))
