#!/usr/bin/env python3
"""Summarises `ncu -i REP --page source --print-source sass --csv` exports (gzipped) of one
kernel launch: stall samples per opcode, per execution count (a band of instructions that run
equally often: the per-tile loop, the once-per-CTA code), and the HMMAs of the hottest band by
the distance, in HMMAs, to the HMMA that wrote their accumulator.

usage: ncu_sass_summary.py CTAS FILE.csv.gz [FILE.csv.gz ...]   (CTAS: the launch's grid size)
"""
import collections
import csv
import gzip
import re
import sys


def load(path):
    rows = list(csv.reader(gzip.open(path, "rt")))
    header, data = rows[1], rows[2:]
    col = {h: i for i, h in enumerate(header)}
    stalls = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    out = []
    for r in data:
        if len(r) < len(header):
            continue
        src = r[col["Source"]].strip()
        op = re.sub(r"^@!?U?P\w+\s+", "", src).split(" ")[0].split(".")[0]
        st = collections.Counter({h[6:]: int(r[col[h]] or 0) for h in stalls})
        out.append((src, op, int(r[col["Instructions Executed"]] or 0), st))
    return out


def pct(c, total, keys):
    return " ".join(f"{k} {c[k] * 100 / total:4.1f}" for k in keys)


def main():
    ctas = int(sys.argv[1])
    for path in sys.argv[2:]:
        d = load(path)
        total_st = collections.Counter()
        for _, _, _, st in d:
            total_st.update(st)
        total = sum(total_st.values())
        print(f"===== {path}: {total} samples, {sum(n for _, _, n, _ in d)} instructions executed")
        print(" ".join(f"{k}:{v * 100 / total:.1f}" for k, v in total_st.most_common(10)))
        keys = ["wait", "selected", "short_sb", "math", "long_sb", "barrier", "dispatch", "not_selected"]
        by_op, execs = collections.defaultdict(collections.Counter), collections.Counter()
        for _, op, n, st in d:
            by_op[op].update(st)
            execs[op] += n
        for op, c in sorted(by_op.items(), key=lambda x: -sum(x[1].values()))[:14]:
            print(f"{op:8s} exec {execs[op] / 1e6:7.2f}M samples {sum(c.values()) * 100 / total:5.1f}%  "
                  + pct(c, total, keys))
        print("-- by execution count (warp-level executions / CTAs)")
        bands = collections.defaultdict(lambda: [0, 0, 0, collections.Counter()])
        for _, op, n, st in d:
            if n:
                b = bands[n // ctas]
                b[0] += 1
                b[1] += sum(st.values())
                b[2] += op == "HMMA"
                b[3].update(st)
        for k in sorted(bands):
            n, s, h, st = bands[k]
            if s >= total * 0.003:
                print(f"exec/CTA {k:5d} instructions {n:5d} samples {s:6d} ({s * 100 / total:4.1f}%) HMMA {h:4d}  "
                      + " ".join(f"{kk}:{v}" for kk, v in st.most_common(4)))
        hot_n = max(n for _, _, n, _ in d)
        hot = [x for x in d if x[2] >= hot_n * 0.9]
        print("-- HMMAs of the hottest band by accumulator dependency distance (99: none seen)")
        last, count = {}, 0
        dist = collections.defaultdict(lambda: [0, 0, collections.Counter()])
        for src, op, _, st in hot:
            m = re.search(r"HMMA\.\S+\s+(R\d+),\s*(R\d+),\s*(R\d+),\s*(R\d+|RZ)", src)
            if not m:
                continue
            rd, _, _, rc = m.groups()
            k = min(count - last[rc], 99) if rc in last else 99
            dist[k][0] += 1
            dist[k][1] += sum(st.values())
            dist[k][2].update(st)
            last[rd] = count
            count += 1
        for k in sorted(dist):
            n, s, st = dist[k]
            print(f"distance {k:3d} HMMAs {n:4d} samples/HMMA {s / n:7.1f}  "
                  + " ".join(f"{kk}:{v / n:.0f}" for kk, v in st.most_common(4)))


if __name__ == "__main__":
    main()
