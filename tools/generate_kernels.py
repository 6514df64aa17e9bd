#!/usr/bin/env python3
"""Writes the one support table (support_table.h: the head dims the API takes and the kernel
head dim each runs in, per family), one explicit-instantiation .cu file per kernel instance,
the X-macro lists the dispatcher reads, and the source lists CMake compiles. Dispatch,
canImplement, fmha info, the tests and the fuzzer read these; adding a head dim is one edit
of HEAD_DIMS.
Usage: generate_kernels.py OUT_DIR [--sm90]   (--sm90: the build targets sm_90a)"""
import pathlib
import sys

# The head dims the API takes: (API head dim, portable kernel head dim, Hopper kernel head dim
# or 0 for none, paged modes only). The portable family pads to a multiple of 16 (72 runs in
# the 80 instance, its last columns zero); the Hopper family to a native wgmma width (72-96
# run in 128: TMA zero-fills the columns past D). D=512 exists for the paged modes only.
HEAD_DIMS = [
    (64, 64, 64, False),
    (72, 80, 128, False),
    (80, 80, 128, False),
    (96, 96, 128, False),
    (128, 128, 128, False),
    (256, 256, 256, False),
    (512, 512, 0, True),
]

# Portable family (sm_80+): every element type.
SM80_ELEMENTS = ["kFp16", "kBf16", "kFp8"]
SM80_HEAD_DIMS = sorted({p for _, p, _, _ in HEAD_DIMS})
# Head dims whose default portable tiles outgrow a 99 KB (D=128, 256) or 163 KB (D=512)
# block: they also get the compact configuration (src/kernels/sm80/tile_sm80.h).
SM80_COMPACT_DIMS = [128, 256, 512]
# Hopper family (sm_90a): 16-bit input, the native wgmma head dims; skip-softmax variants for
# every element type (FP16, BF16, FP8 E4M3).
SM90_ELEMENTS = ["kFp16", "kBf16"]
SM90_SKIP_ELEMENTS = ["kFp16", "kBf16", "kFp8"]
# Kernel head dims 72, 80 and 96 (every element type, FP8 E4M3 included): the D=128 tiles with
# Q.K^T over the head's columns rounded up to whole k-steps (TileSm90::kQKBytes), for the
# default and persistent tiles; skip-softmax and the one-warpgroup tiles run these head dims in
# the D=128 instances (the dispatcher falls back to them). FP8 at 72 also takes its 72-byte
# rows, skip-softmax included, which no TMA descriptor takes with a head stride of 72 bytes
# (8-byte cp.async pieces, or TMA boxes over a token's heads as one row; TileSm90::kRows8).
SM90_TRIMMED_DIMS = [72, 80, 96]
# Hopper tile shapes beside the default (TileShape in src/params.h), by (element, kernel head
# dim): dense instances of the listed addressings; the heuristics choose them per problem
# (src/heuristics.cpp: tileShapeFor).
SM90_SHAPES = {
    ("kFp16", 64): [("kOneWarpGroup", ["kStrided"]), ("kPersistent", ["kStrided", "kPaged"]),
                    ("kThreeWarpGroups", ["kStrided"])],
    ("kBf16", 64): [("kOneWarpGroup", ["kStrided"]), ("kPersistent", ["kStrided", "kPaged"]),
                    ("kThreeWarpGroups", ["kStrided"])],
    ("kFp8", 64): [("kOneWarpGroup", ["kStrided"]), ("kWideKeys", ["kStrided", "kPaged"]), ("kPersistent", ["kStrided", "kPaged"]),
                   ("kThreeWarpGroups", ["kStrided"])],
    ("kFp16", 128): [("kPersistent", ["kStrided", "kPaged"]), ("kOneWarpGroup", ["kPaged"])],
    ("kBf16", 128): [("kPersistent", ["kStrided", "kPaged"]), ("kOneWarpGroup", ["kPaged"])],
    ("kFp8", 128): [("kPersistent", ["kStrided", "kPaged"])],
    ("kFp16", 256): [("kWideKeys", ["kStrided"])],
    ("kBf16", 256): [("kWideKeys", ["kStrided"])],
    **{(e, d): [("kPersistent", ["kStrided", "kPaged"])] for e in ("kFp16", "kBf16", "kFp8") for d in SM90_TRIMMED_DIMS},
}
SHAPE_SUFFIX = {"kOneWarpGroup": "_onewg", "kWideKeys": "_widekeys", "kPersistent": "_persistent",
                "kThreeWarpGroups": "_threewg"}
SM90_HEAD_DIMS = sorted({h for _, _, h, _ in HEAD_DIMS if h} | set(SM90_TRIMMED_DIMS))
# Kernel head dims that only paged-mode API head dims reach: no contiguous-KV instance.
PAGED_ONLY_DIMS = {p for _, p, _, paged in HEAD_DIMS if paged} - {p for _, p, _, paged in HEAD_DIMS if not paged}
ADDRESSING = ["kStrided", "kPaged"]


def instances(elements, dims, compact_dims=()):
    for elem in elements:
        for dim in dims:
            for kv in ADDRESSING:
                if dim in PAGED_ONLY_DIMS and kv != "kPaged":
                    continue
                for compact in (False, True) if dim in compact_dims else (False,):
                    yield elem, dim, kv, compact


def write_if_changed(path, text):
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def family(out, arch, elements, dims, compact_dims=(), skip_elements=(), shapes=None):
    """compact_dims (sm80): the head dims with a compact configuration too; skip_elements
    (sm90): the element types with a skip-softmax variant too. Either is the instance's
    fourth template argument (sm90: always written). shapes (sm90): (element, head dim) ->
    the tile shapes built beside the default (dense), the fifth argument."""
    names = []
    listed = []
    for elem, dim, kv, compact in instances(elements, dims, compact_dims):
        variants = [(compact, "_compact" if compact else "", None)] if arch == "sm80" else \
            [(False, "", "kDefault")] + \
            ([(True, "_skip", "kDefault")] if elem in skip_elements and (dim not in SM90_TRIMMED_DIMS or
                                                              (elem, dim) == ("kFp8", 72)) else []) + \
            [(False, SHAPE_SUFFIX[s], s) for s, kvs in (shapes or {}).get((elem, dim), []) if kv in kvs]
        for flag, suffix, shape in variants:
            listed.append((elem, dim, kv, flag, shape))
            name = f"fwd_{arch}_{elem[1:].lower()}_d{dim}_{kv[1:].lower()}{suffix}.cu"
            names.append(str(out / name))
            extra = f", {'true' if flag else 'false'}" if arch == "sm90" or flag else ""
            if shape and shape != "kDefault":
                extra += f", fmha::TileShape::{shape}"
            write_if_changed(out / name,
                             f"// Generated by tools/generate_kernels.py: one {arch} kernel instance.\n"
                             f'#include "kernels/{arch}/launch_{arch}.cuh"\n\n'
                             f"template struct fmha::{arch}::Kernel{arch.capitalize()}<fmha::ElementKind::{elem}, {dim}, "
                             f"fmha::KvAddressing::{kv}{extra}>;\n")
    table = f"// Generated by tools/generate_kernels.py: every built {arch} instance.\n"
    table += "".join(f"FMHA_{arch.upper()}_INSTANCE({e}, {d}, {k}, {'true' if f else 'false'}"
                     + (f", {s})\n" if arch == "sm90" else ")\n")
                     for e, d, k, f, s in listed)
    write_if_changed(out / f"instances_{arch}.inc", table)
    (out / f"sources_{arch}.txt").write_text(";".join(names))


def support_table(out):
    rows = ",\n".join(f"    {{{a}, {p}, {h}, {'true' if paged else 'false'}}}" for a, p, h, paged in HEAD_DIMS)
    write_if_changed(out / "support_table.h",
                     "// Generated by tools/generate_kernels.py from its HEAD_DIMS: the head dims the API takes\n"
                     "// and the kernel head dim each runs in, per family (0: none). The built instances are in\n"
                     "// instances_sm80.inc / instances_sm90.inc.\n"
                     "#pragma once\n\n"
                     "namespace fmha::support {\n\n"
                     "struct HeadDim {\n"
                     "    int api;         // head dim of the caller's tensors\n"
                     "    int portable;    // portable (sm80) kernel head dim\n"
                     "    int hopper;      // Hopper (sm90) kernel head dim, 0: not in that family\n"
                     "    bool pagedOnly;  // the paged modes only\n"
                     "};\n\n"
                     f"inline constexpr HeadDim kHeadDims[] = {{\n{rows}}};\n\n"
                     "// The row of an API head dim; null for a head dim the API does not take.\n"
                     "inline constexpr HeadDim const* find(int api) {\n"
                     "    for (HeadDim const& h : kHeadDims)\n"
                     "        if (h.api == api) return &h;\n"
                     "    return nullptr;\n"
                     "}\n\n"
                     "}  // namespace fmha::support\n")


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    support_table(out)
    family(out, "sm80", SM80_ELEMENTS, SM80_HEAD_DIMS, SM80_COMPACT_DIMS)
    family(out, "sm90", SM90_ELEMENTS + ["kFp8"] if "--sm90" in sys.argv else [], SM90_HEAD_DIMS,
           skip_elements=SM90_SKIP_ELEMENTS, shapes=SM90_SHAPES)


if __name__ == "__main__":
    main()
