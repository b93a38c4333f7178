#!/usr/bin/env python3
"""Estimated GPU seconds of `agoq step` experiment files, from their dry runs (no GPU needed).

    python3 tools/step_cost.py [--agoq build/agoq] [--tflops 550] experiments/step_16_*.json

Each file is run with "dry": true (the exact allocation plan; min_fit and fit "record" resolved
exactly as the GPU run will), and each fitting record is priced:
  step  = micro_batches x (layers x (fwd + bwd) + recomputed layers x fwd) FLOPs / rate
          (rate = --tflops at tp 1; x 0.75 at tp >= 4: the per-rank GEMMs are narrower)
  steps = warmup + reps + 1 profiled step (+ 3 probe steps with grad_error)
  fixed = 0.6 s per run (arena cudaMalloc, weight init, cuDNN graph) and, with grad_error,
          4 ns per parameter (3 gradient copies to the host and 2 comparisons on the CPU)
A run over the budget costs its dry sizing only. Prints one line per file and the total; the
numbers are estimates for budgeting a device call, not measurements."""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def cost(path, agoq, tflops):
    exp = json.load(open(path))
    cfg = exp["config"]
    reps, warmup, ge = cfg.get("reps", 5), cfg.get("warmup", 2), cfg.get("grad_error", False)
    dry = dict(exp, backend="cpu", config=dict(cfg, dry=True))
    with tempfile.TemporaryDirectory() as d:
        f, out = os.path.join(d, "e.json"), os.path.join(d, "r.json")
        json.dump(dry, open(f, "w"))
        p = subprocess.run([agoq, "run", f, "--out", out, "-q"], capture_output=True, text=True)
        if p.returncode:
            sys.exit(f"{path}: dry run failed: {p.stderr.strip()}")
        recs = json.load(open(out))["records"]
    total, n, nofit = 0.0, 0, 0
    for r in recs:
        if r.get("fits") is False:
            nofit += 1
            continue
        n += 1
        rate = tflops * 1e12 * (0.75 if r["tp"] >= 4 else 1.0)
        L, k = r["layers"], r["recomputed_layers"]
        step = r["micro_batches"] * (L * (r["fwd_flops"] + r["bwd_flops"]) + k * r["fwd_flops"]) / rate
        steps = warmup + reps + 1 + (3 if ge else 0)
        fixed = 0.6 + (4e-9 * r["memory_model"]["params"] if ge else 0.0)
        total += steps * step + fixed
    return total, n, nofit


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agoq", default="build/agoq")
    ap.add_argument("--tflops", type=float, default=550.0)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    grand = 0.0
    for f in a.files:
        t, n, nofit = cost(f, a.agoq, a.tflops)
        grand += t
        print(f"{f:50s} {n:3d} runs measured, {nofit:3d} over budget: ~{t:6.1f} GPU s")
    print(f"{'total':50s} ~{grand:6.1f} GPU s (estimate)")


if __name__ == "__main__":
    main()
