#!/usr/bin/env python3
"""Where a kernel's spills sit, from its SASS, without a GPU: splits each matching function at
its CTA barriers in listing order (BAR.SYNC: the prologue, then one region a tile body in the
portable kernels) and prints, per region, its instructions, HMMAs, local loads (LDL) and stores
(STL).
A spill reload inside a tile body runs every tile; one in the prologue or the epilogue once.

usage: sass_regions.py FILE [NAME_REGEX]   (FILE: an object, library or binary; default: every function)
Needs cuobjdump and nvdisasm on PATH (the CUDA toolkit, or PyPI's nvidia-cuda-cuobjdump and
nvidia-cuda-nvdisasm, whose nvidia/cu13/bin holds both).
"""
import re
import subprocess
import sys


def functions(path):
    """(arch, name, [opcode, ...]) for each function in cuobjdump's SASS listing of path."""
    out = subprocess.run(["cuobjdump", "-sass", path], check=True, capture_output=True, text=True).stdout
    arch, name, ops = "?", None, []
    for line in out.splitlines():
        m = re.match(r"\s*arch = (\S+)", line)
        if m:
            arch = m.group(1)
            continue
        m = re.match(r"\s+Function : (\S+)", line)
        if m:
            if name is not None:
                yield fn_arch, name, ops
            fn_arch, name, ops = arch, m.group(1), []
            continue
        m = re.match(r"\s+/\*[0-9a-f]+\*/\s+(.*?)\s*;", line)
        if m and name is not None:
            ops.append(re.sub(r"^@!?U?P\w+\s+", "", m.group(1)).split(" ")[0].split(".")[0])
    if name is not None:
        yield fn_arch, name, ops


def regions(ops):
    """Opcode lists between barriers; the barrier opens the region after it."""
    cut = [0] + [i for i, op in enumerate(ops) if op == "BAR"] + [len(ops)]
    return [ops[a:b] for a, b in zip(cut, cut[1:])]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    pattern = re.compile(sys.argv[2] if len(sys.argv) > 2 else ".")
    for arch, name, ops in functions(sys.argv[1]):
        if not pattern.search(name):
            continue
        print(arch, name)
        for i, r in enumerate(regions(ops)):
            print(f"  region {i}: {len(r):5d} instructions, HMMA {r.count('HMMA'):4d}, "
                  f"LDL {r.count('LDL'):3d}, STL {r.count('STL'):3d}")


if __name__ == "__main__":
    main()
