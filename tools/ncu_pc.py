#!/usr/bin/env python3
"""Per-instruction (per-PC) warp-state samples of one kernel from ncu's source page.

On the GPU machine:
  ncu --set full --import-source no -k regex:NAME -c 1 -o REP <command>
  ncu -i REP.ncu-rep --page source --csv --print-source sass > src.csv
Here:
  python3 tools/ncu_pc.py src.csv [--top N] [--lines A:B] [--summary]
prints the kernel's samples, then the N SASS lines with the most samples (default 12), or every
line in A:B, each with its executions and its two main stall reasons (ncu's stall_* columns).
--summary: instead, every stall reason's share of all samples, and the samples grouped by the
lines' execution counts (in a persistent GEMM, the lines run once a k-tile share one count, those
run once a tile another: where a kernel spends its time, by loop).
"""
import collections
import argparse
import csv
import sys


def load(path):
    rows = list(csv.reader(open(path)))
    head = next(i for i, r in enumerate(rows) if r and r[0] == "Address")
    hdr, data = rows[head], rows[head + 1:]
    return hdr, data


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--lines", help="A:B, every line from A to B (exclusive)")
    ap.add_argument("--summary", action="store_true", help="stall reasons and samples by execution count")
    a = ap.parse_args()
    hdr, data = load(a.csv)
    col = {h: i for i, h in enumerate(hdr)}
    samples = col["Warp Stall Sampling (All Samples)"]
    execd = col["Instructions Executed"]
    reasons = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    num = lambda r, c: int(r[c] or 0) if r[c] not in ("-", "") else 0
    total = sum(num(r, samples) for r in data)
    print(f"{a.csv}: {len(data)} SASS lines, {total} samples, "
          f"{sum(num(r, execd) for r in data)} warp instructions executed")
    if a.summary:
        why = {h[6:]: sum(num(r, col[h]) for r in data) for h in reasons}
        allw = max(sum(why.values()), 1)
        print("  stall reasons: " + " ".join(f"{k}:{100 * v / allw:.1f}%" for k, v in
                                             sorted(why.items(), key=lambda x: -x[1]) if 100 * v / allw >= 0.5))
        by, nl = collections.Counter(), collections.Counter()
        for r in data:
            by[num(r, execd)] += num(r, samples)
            nl[num(r, execd)] += 1
        for e, v in by.most_common(8):
            print(f"  executed {e:9d} a line: {v:7d} samples ({100 * v / max(total, 1):4.1f}%) on {nl[e]} lines")
        return 0
    if a.lines:
        lo, hi = (int(x) for x in a.lines.split(":"))
        pick = range(max(lo, 0), min(hi, len(data)))
    else:
        pick = sorted(range(len(data)), key=lambda i: -num(data[i], samples))[: a.top]
    for i in pick:
        r = data[i]
        top = sorted(((num(r, col[h]), h[6:]) for h in reasons), reverse=True)[:2]
        why = " ".join(f"{n}:{v}" for v, n in top if v)
        print(f"  line {i:5d} {num(r, samples):7d} ({100 * num(r, samples) / max(total, 1):4.1f}%)"
              f" executed {num(r, execd):9d}  {r[1].strip()[:64]:64s} {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
