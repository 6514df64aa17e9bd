#!/usr/bin/env python3
"""Summarises an A/B of `fmha bench --json` runs (scripts/device_ab.sh): files named
*_r<round>_<A|B>_<k>.json; per row, each side's time in every round, the medians, and B's
speed against A's (A's median time over B's: above 1 means B is faster). Rows are the sweep
rows (sweep and row index), the skip sweep's rows (problem and factor; the dense time each
run measures is a row of its own) and the decode rows (row index), each within its argument
string (the <k> of the file name: the same row under two argument strings is two rows).

usage: ab_summary.py [--a NAME] [--b NAME] FILE...
"""
import argparse
import json
import re
import statistics
import sys


def rows_of(path):
    """(key, label, ms) for each timed row of one run's JSON."""
    with open(path) as f:
        rows = json.load(f)
    for r in rows:
        if r.get("sweep") == "skip":
            problem = "{} prev {} seg {}".format(r.get("problem", "?"), r.get("structured_prev"),
                                               r.get("structured_segment"))
            yield ("skip", problem, "dense"), "skip {} dense".format(problem), r["dense_ms"]
            yield ("skip", problem, r["factor"]), "skip {} S={:g}".format(problem, r["factor"]), r["ms"]
        elif "ours_ms" in r:
            label = "{} row {}: {} {} D={} B={} Lq={} Lk={} {}{}{}".format(
                r["sweep"], r["row"], r["mode"], r["dtype"], r["head_dim"], r["batch"], r["lq"], r["lk"], r["mask"],
                " page {}".format(r["page_size"]) if r.get("page_size") else "",
                " parts {}".format(r["splits"]) if r.get("splits") else "")
            yield (r["sweep"], r["dtype"], r["row"]), label, r["ours_ms"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--a", default="A")
    ap.add_argument("--b", default="B")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    times = {}  # key -> {"label", "A": {round: ms}, "B": {round: ms}}
    order = []
    for path in args.files:
        m = re.search(r"_r(\d+)_([AB])_(\d+)\.json$", path)
        if m is None:
            sys.exit("ab_summary.py: {} is not named *_r<round>_<A|B>_<k>.json".format(path))
        rnd, side, k = int(m.group(1)), m.group(2), int(m.group(3))
        try:
            found = list(rows_of(path))
        except (OSError, ValueError, KeyError) as e:
            print("ab_summary.py: {}: {}".format(path, e), file=sys.stderr)
            continue
        for key, label, ms in found:
            key = (k,) + key
            if key not in times:
                times[key] = {"label": "[{}] {}".format(k, label), "A": {}, "B": {}}
                order.append(key)
            times[key][side][rnd] = ms
    print("A = {}\nB = {}".format(args.a, args.b))
    print("{:<96} {:>28} {:>28} {:>9} {:>9} {:>7}".format("[argument string] row", "A ms by round", "B ms by round", "A med",
                                                          "B med", "A/B"))
    for key in order:
        t = times[key]
        if not t["A"] or not t["B"]:
            continue
        a = [t["A"][k] for k in sorted(t["A"])]
        b = [t["B"][k] for k in sorted(t["B"])]
        ma, mb = statistics.median(a), statistics.median(b)
        print("{:<96} {:>28} {:>28} {:>9.4f} {:>9.4f} {:>7.3f}".format(
            t["label"][:96], " ".join("{:.4f}".format(x) for x in a)[:28],
            " ".join("{:.4f}".format(x) for x in b)[:28], ma, mb, ma / mb))


if __name__ == "__main__":
    main()
