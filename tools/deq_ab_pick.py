#!/usr/bin/env python3
"""Picks the dequantizer variant of each (format, output type) from an A/B table (issue 15).

Reads the deq_ab.tsv that tools/device_kernels.sh's part deq_ab writes (round, var, case,
format, bytes, median_ms, copy_ratio; one run per AGOQ_DEQ_VAR setting and round) and, per
dequantize case and format, compares every variant with variant 0 (the tile kernel) at every
size and round: a variant qualifies when its copy_ratio is at least MARGIN (default 0.02) above
variant 0's in every (round, size) pair both have. Prints one line per case and format (the
qualifying variant with the largest mean gain, or 0) and the rows of deq_defaults
(kernels/quant/quant.cu) that make those the defaults.

usage: python3 tools/deq_ab_pick.py [results/h200/deq_ab.tsv] [MARGIN]
"""
import collections
import csv
import sys


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "results/h200/deq_ab.tsv"
    margin = float(sys.argv[2]) if len(sys.argv) > 2 else 0.02
    ratio = collections.defaultdict(dict)  # (case, format, var) -> {(round, bytes): copy_ratio}
    for r in csv.DictReader(open(path), delimiter="\t"):
        if r["case"].startswith("dequantize_"):
            ratio[(r["case"], r["format"], int(r["var"]))][(r["round"], int(r["bytes"]))] = float(r["copy_ratio"])
    pick = {}
    print("case\tformat\tpick\tmean_gain\tmin_gain\tvar0_mean")
    for case, fmt in sorted({(c, f) for c, f, _ in ratio}):
        base = ratio.get((case, fmt, 0), {})
        best = (0, 0.0, 0.0)
        for (c, f, v), pts in ratio.items():
            if (c, f) != (case, fmt) or v == 0:
                continue
            gains = [pts[k] - base[k] for k in pts if k in base]
            if gains and min(gains) >= margin and sum(gains) / len(gains) > best[1]:
                best = (v, sum(gains) / len(gains), min(gains))
        pick[(fmt, case)] = best[0]
        mean0 = sum(base.values()) / len(base) if base else float("nan")
        print(f"{case}\t{fmt}\t{best[0]}\t{best[1]:.3f}\t{best[2]:.3f}\t{mean0:.3f}")
    print("\n/* deq_defaults rows (kernels/quant/quant.cu) */")
    for fmt in sorted({f for f, _ in pick}):
        f32, bf16 = pick.get((fmt, "dequantize_f32"), 0), pick.get((fmt, "dequantize_bf16"), 0)
        print(f"    {{AGOQ_FMT_{fmt.upper()}, {f32}, {bf16}}},")


if __name__ == "__main__":
    main()
