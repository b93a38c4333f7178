#!/usr/bin/env python3
"""Clocks and power while each GEMM run of tools/device_gemm_clocks.sh ran: nvidia-smi samples
(smi.csv: timestamp, clocks.sm, clocks.mem, power.draw, temperature, event reasons; -lms 20) matched
to the runs' start / end marks (marks.txt: epoch seconds, "start|end CASE SIZE TAG"), each run's
median time from its JSON (CASE_SIZE_TAG.json). One line a run: case, size, tag, median ms, samples,
mean SM clock (MHz), mean power (W), max temperature, the share of samples with the software
power cap active (clocks_event_reasons bit 0x4; thirtieth session); then, per case pair (_lt /
_wg, same size), the time ratio, the clock ratio and their quotient (vs_cublas at equal clocks).
Twenty-ninth session.

usage: python3 tools/gemm_clocks.py DIR
"""
import datetime
import json
import os
import statistics as st
import sys

d = sys.argv[1]
samples = []
for line in open(os.path.join(d, "smi.csv")):
    f = [x.strip() for x in line.split(",")]
    try:
        t = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
        samples.append((t, float(f[1].split()[0]), float(f[3].split()[0]), float(f[4]), f[5] if len(f) > 5 else ""))
    except (ValueError, IndexError):
        continue
runs, open_ = [], {}
for line in open(os.path.join(d, "marks.txt")):
    t, what, case, size, tag = line.split()
    if what == "start":
        open_[(case, size, tag)] = float(t)
    else:
        runs.append((case, size, tag, open_.pop((case, size, tag)), float(t)))
res = {}
print("case\tsize\ttag\tmedian_ms\tsamples\tsm_mhz\tpower_w\ttemp_c\tpcap")
for case, size, tag, t0, t1 in runs:
    js = os.path.join(d, "%s_%s_%s.json" % (case, size, tag))
    recs = [r for r in json.load(open(js))["records"] if r.get("case") == case and "median_ms" in r]
    # the last 70% of the run: past the process start, the cuBLASLt / tensor-map setup and warm-up
    ts = [s for s in samples if t0 + 0.3 * (t1 - t0) <= s[0] <= t1]
    clk = st.mean(s[1] for s in ts) if ts else float("nan")
    pw = st.mean(s[2] for s in ts) if ts else float("nan")
    tmp = max((s[3] for s in ts), default=float("nan"))
    cap = sum(1 for s in ts if s[4] and int(s[4], 16) & 0x4) / len(ts) if ts else float("nan")
    res[(case, size, tag)] = (recs[0]["median_ms"], clk)
    print("%s\t%s\t%s\t%.4f\t%d\t%.0f\t%.0f\t%.0f\t%.2f" % (case, size, tag, recs[0]["median_ms"], len(ts), clk, pw, tmp, cap))
print("\nshape\tsize\ttag\tlt/wg time (vs_cublas)\twg/lt clock\tvs_cublas per clock")
for (case, size, tag), (ms, clk) in sorted(res.items()):
    if case.endswith("_lt") and (case[:-3] + "_wg", size, tag) in res:
        ms2, clk2 = res[(case[:-3] + "_wg", size, tag)]
        print("%s\t%s\t%s\t%.3f\t%.3f\t%.3f" % (case[:-3], size, tag, ms / ms2, clk2 / clk, ms / ms2 / (clk2 / clk)))
