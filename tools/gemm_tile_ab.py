#!/usr/bin/env python3
"""A/B table of the Hopper GEMM's tile width (AGOQ_WG_TILE_N) from agoq run experiments/gemm_wg.json
outputs named gemm_wg_r{ROUND}_tn{VALUE}.json in one folder (any values: 256, 192, auto, 320; any
rounds): vs_cublas of every plain point per value and round, each value's summary, and against the
first value (auto if present, else 256) the geometric mean over the points of the ratio of the
round means and the points where every round of a value beats every round of the base by more
than 0.02. The twelfth session's run: results/h200/logs/s12_callE_9b97292/ (unpack
gemm_wg_ab_json.tgz there first); the twenty-seventh's (320): results/h100/logs/s27_*/.

usage: python3 tools/gemm_tile_ab.py DIR
"""
import glob
import json
import math
import os
import statistics as st
import sys

d = sys.argv[1]
runs = {}
for f in glob.glob(os.path.join(d, "gemm_wg_r*_tn*.json")):
    b = os.path.basename(f)[:-5]
    r, v = int(b.split("_")[2][1:]), b.split("_tn")[1]
    recs = json.load(open(f))["records"]
    runs[(r, v)] = {(x["case"], x.get("n", x.get("bytes"))): x for x in recs if x.get("vs_cublas") is not None}
order = {"auto": 0, "256": 1, "192": 2, "128": 3, "320": 4}
vals = sorted({v for _, v in runs}, key=lambda v: order.get(v, 9))
rounds = sorted({r for r, _ in runs})
keys = sorted(set.intersection(*(set(x) for x in runs.values())))
print("case\ttokens\t" + "\t".join(f"{v} r{r}" for v in vals for r in rounds))
summ = {v: [] for v in vals}
mean = {}
for k in keys:
    row = []
    for v in vals:
        xs = [runs[(r, v)][k]["vs_cublas"] for r in rounds if (r, v) in runs]
        row += ["%.3f" % x for x in xs]
        summ[v] += xs
        mean[(k, v)] = (sum(xs) / len(xs), min(xs), max(xs))
    print(k[0] + "\t" + str(k[1]) + "\t" + "\t".join(row))
for v in vals:
    s = summ[v]
    print(v, "n=%d min %.2f median %.3f max %.2f  <0.90: %.1f a round" %
          (len(s), min(s), st.median(s), max(s), sum(x < 0.9 for x in s) / len(rounds)))
base = vals[0]
for v in vals[1:]:
    g = math.exp(sum(math.log(mean[(k, v)][0] / mean[(k, base)][0]) for k in keys) / len(keys))
    wins = [k for k in keys if mean[(k, v)][1] > mean[(k, base)][2] + 0.02]
    loses = [k for k in keys if mean[(k, v)][2] < mean[(k, base)][1] - 0.02]
    print(f"{v} against {base}: geomean {g:.3f} over {len(keys)} points; better in every round by > 0.02 at "
          f"{len(wins)}, worse at {len(loses)}")
    for k in wins:
        print("   +", k, "%.3f -> %.3f" % (mean[(k, base)][0], mean[(k, v)][0]))
    for k in loses:
        print("   -", k, "%.3f -> %.3f" % (mean[(k, base)][0], mean[(k, v)][0]))
