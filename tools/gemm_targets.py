#!/usr/bin/env python3
"""Issue 17's targets, point by point, from `agoq run experiments/gemm_wg.json` records (one or more
rounds of the same binary): for each point the median over the rounds of

  - the plain GEMM against cuBLASLt (`vs_cublas`, cases *_wg): >= 0.90 at every shape, >= 0.95 at
    the large ones (taken here as the whole-model shapes, not the TP=8 shards, from 16384 tokens);
  - the fused epilogue against cuBLASLt + the standalone quantizer (`vs_cublas_quant`, *_wgq):
    >= 1.03, printed per shape beside the paper's 1.03-1.11x and beside `vs_own_quant` (our GEMM +
    the standalone quantizer, the paper's comparison);
  - the prologue against the standalone dequantizer + cuBLASLt (`vs_cublas_quant`, *_wgd): >= 1.0.

Tokens = n / 4096 (the experiment's rule). Prints markdown: a summary line per target, the plain
points that miss, the per-shape fused table and the prologue points.

usage: python3 tools/gemm_targets.py GEMM_WG.json [GEMM_WG.json ...]
   e.g. python3 tools/gemm_targets.py results/h200/logs/s42_92f72b25/g/gemm_wg.json \
            results/h200/logs/s42_92f72b25/g2/gemm_wg.json
"""
import json
import statistics as st
import sys


def points(paths, kind, key):
    """{(shape, tokens): median over the files of key} for the cases ending in _KIND."""
    vals = {}
    for p in paths:
        for r in json.load(open(p))["records"]:
            case = r["case"]
            if r.get(key) is None or not case.endswith("_" + kind):
                continue
            shape = case[len("gemmwg_"):-len(kind) - 1]
            vals.setdefault((shape, r["n"] // 4096), []).append(r[key])
    return {k: st.median(v) for k, v in vals.items()}


def large(shape, tokens):
    return "tp8" not in shape and tokens >= 16384


def main():
    paths = sys.argv[1:]
    if not paths:
        sys.exit(__doc__)
    plain = points(paths, "wg", "vs_cublas")
    fused = points(paths, "wgq", "vs_cublas_quant")
    own = points(paths, "wgq", "vs_own_quant")
    pro = points(paths, "wgd", "vs_cublas_quant")
    if not plain and not fused and not pro:
        sys.exit("gemm_targets: no vs_cublas / vs_cublas_quant records in " + " ".join(paths))
    bound = lambda k: 0.95 if large(*k) else 0.90
    miss = sorted((v, k) for k, v in plain.items() if v < bound(k))
    print(f"{len(paths)} round(s): {', '.join(paths)}\n")
    if plain:
        print(f"- plain vs cuBLASLt: median {st.median(plain.values()):.3f}, {len(plain) - len(miss)} of "
              f"{len(plain)} points meet their target (>= 0.90; >= 0.95 at {sum(large(*k) for k in plain)} large)")
    if fused:
        print(f"- fused epilogue vs cuBLASLt + quantize: median {st.median(fused.values()):.3f}, "
              f"{sum(v >= 1.03 for v in fused.values())} of {len(fused)} points >= 1.03")
    if pro:
        print(f"- prologue vs dequantize + cuBLASLt: {min(pro.values()):.3f}-{max(pro.values()):.3f}, "
              f"{sum(v >= 1.0 for v in pro.values())} of {len(pro)} points >= 1.0")
    print()
    if miss:
        print("| plain point missing its target | tokens | vs_cublas | target |\n|---|---|---|---|")
        for v, (shape, tok) in miss:
            print(f"| {shape} | {tok} | {v:.3f} | {bound((shape, tok)):.2f} |")
        print()
    if fused:
        toks = sorted({t for _, t in fused})
        print("| fused epilogue (vs cuBLASLt + quantize; vs our GEMM + quantize) | "
              + " | ".join(f"{t} tokens" for t in toks) + " | paper |")
        print("|---|" + "---|" * len(toks) + "---|")
        for shape in sorted({s for s, _ in fused}):
            cells = []
            for t in toks:
                v, o = fused.get((shape, t)), own.get((shape, t))
                cells.append("" if v is None else f"{'**' if v >= 1.03 else ''}{v:.2f}{'**' if v >= 1.03 else ''}"
                             + ("" if o is None else f" ({o:.2f})"))
            print(f"| {shape} | " + " | ".join(cells) + " | 1.03-1.11x |")
        print()
    if pro:
        print("| prologue | tokens | vs dequantize + cuBLASLt |\n|---|---|---|")
        for (shape, tok), v in sorted(pro.items()):
            print(f"| {shape} | {tok} | {v:.3f} |")


if __name__ == "__main__":
    main()
