#!/usr/bin/env python3
"""A/B tables of `agoq kernels` runs under a knob's values (tools/device_kernels.sh parts ab, deq_ab).

  python3 tools/ab_table.py --tsv DIR
      DIR holds r<round>_var<value>.json (one `agoq kernels` / `agoq run` per round and value);
      prints one TSV row per record: round, var, case, format, bytes, median_ms, copy_ratio (or,
      with --metric NAME, the records' field NAME, e.g. vs_cublas_quant; records without it are left out).
  python3 tools/ab_table.py FILE.tsv [--base V] [--margin M]
      compares every value with the base (default: the first value in the file): per case,
      format and size the copy ratio (the file's last column) of each value (mean over rounds) and its difference from the
      base's; then per case and format, for each other value, the smallest and the mean
      difference over sizes and rounds, and "wins" when the value is at least M (default 0.01)
      above the base in every (round, size) both have, "loses" when below by M in every one.
"""
import argparse
import collections
import csv
import glob
import json
import re
import statistics
import sys

COLS = ["round", "var", "case", "format", "bytes", "median_ms", "copy_ratio"]


def to_tsv(d, metric):
    print("\t".join(COLS[:-1] + [metric]))
    for f in sorted(glob.glob(d + "/r*_var*.json")):
        r, v = re.search(r"r(\d+)_var([^/]+)\.json$", f).groups()
        for x in json.load(open(f))["records"]:
            if x.get("group") == "reference" or metric not in x:
                continue
            print("\t".join([r, v, x["case"], x.get("format", "-"), str(x["bytes"]), "%.5f" % x["median_ms"],
                             "%.4f" % x[metric]]))


def compare(path, base, margin):
    ratio = collections.defaultdict(dict)  # (case, format, var) -> {(round, bytes): copy_ratio}
    order = []
    rows = csv.DictReader(open(path), delimiter="\t")
    for r in rows:
        if r["var"] not in order:
            order.append(r["var"])
        ratio[(r["case"], r["format"], r["var"])][(r["round"], int(r["bytes"]))] = float(r[rows.fieldnames[-1]])
    if not order:
        sys.exit("ab_table: %s has no rows" % path)
    base = base if base is not None else order[0]
    if base not in order:
        sys.exit("ab_table: base value %s not in %s (values: %s)" % (base, path, " ".join(order)))
    others = [v for v in order if v != base]
    pairs = sorted({(c, f) for c, f, _ in ratio})
    print("case\tformat\tMiB\t" + "\t".join(["var%s" % base] + ["var%s\tdelta" % v for v in others]))
    for c, f in pairs:
        b = ratio.get((c, f, base), {})
        for size in sorted({s for (_, s) in b}):
            mean = lambda v: statistics.mean([x for (r, s), x in ratio.get((c, f, v), {}).items() if s == size] or [float("nan")])
            row = ["%.3f" % mean(base)] + ["%.3f\t%+.3f" % (mean(v), mean(v) - mean(base)) for v in others]
            print("%s\t%s\t%d\t%s" % (c, f, size >> 20, "\t".join(row)))
    print("\ncase\tformat\tvar\tmin_delta\tmean_delta\tverdict (margin %.3f, against var%s)" % (margin, base))
    for c, f in pairs:
        b = ratio.get((c, f, base), {})
        for v in others:
            d = [x - b[k] for k, x in ratio.get((c, f, v), {}).items() if k in b]
            if not d:
                continue
            verdict = "wins" if min(d) >= margin else "loses" if max(d) <= -margin else "-"
            print("%s\t%s\t%s\t%+.3f\t%+.3f\t%s" % (c, f, v, min(d), statistics.mean(d), verdict))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?")
    ap.add_argument("--tsv", metavar="DIR")
    ap.add_argument("--base")
    ap.add_argument("--margin", type=float, default=0.01)
    ap.add_argument("--metric", default="copy_ratio")
    a = ap.parse_args()
    if a.tsv:
        to_tsv(a.tsv, a.metric)
    elif a.path:
        compare(a.path, a.base, a.margin)
    else:
        ap.error("give FILE.tsv or --tsv DIR")


if __name__ == "__main__":
    main()
