#!/usr/bin/env python3
"""The README's "ours vs torch.compile" tables from measured kernel results (issue 15).

Reads results/h200/kernels.json and kernels_fused.json (records with vs_torch, written by
`agoq run` with the peer of validation/torch_kernels.py attached; tools/device_kernels.sh) and
prints markdown: per case and format, vs_torch (peer median / ours; > 1: ours faster) and our
copy_ratio at each size the peer timed.

With --copy FILE, prints instead the README's copy-ratio table of kernels.json: each case x
format at 4 GiB with 64 MiB in parentheses (the block size each format's records use).

With --fused FILE, the README's fused-kernel table of kernels_fused.json: median us at 1 GiB of
the plain bf16 op, the unfused pair and the fused kernel, fused vs unfused at 64 MiB / 1 GiB / 4
GiB, fused and bf16 vs copy at 4 GiB.

With --fixed FILE, per case and format of a kernel sweep: the least-squares line of median time
against elements from 64 MiB, its intercept (the fixed cost a call, us) and its slope (ns per
million elements), and our copy ratio at the largest size.

usage: python3 tools/kernels_vs_torch.py [results/h200/kernels.json results/h200/kernels_fused.json]
       python3 tools/kernels_vs_torch.py --copy [results/h200/kernels.json]
       python3 tools/kernels_vs_torch.py --fused [results/h200/kernels_fused.json]
       python3 tools/kernels_vs_torch.py --fixed [results/h200/kernels.json]
"""
import json
import sys


def table(path):
    recs = [r for r in json.load(open(path))["records"] if r.get("vs_torch") is not None]
    if not recs:
        print(f"{path}: no record carries vs_torch\n")
        return
    sizes = sorted({r["bytes"] for r in recs})
    label = lambda b: f"{b >> 30} GiB" if b >= 1 << 30 else f"{b >> 20} MiB"
    print(f"`{path}`: vs_torch (copy ratio) at " + " / ".join(label(b) for b in sizes) + "\n")
    print("| case | format | " + " | ".join(label(b) for b in sizes) + " |")
    print("|---|---|" + "---|" * len(sizes))
    rows = {}
    for r in recs:
        rows.setdefault((r["case"], r["format"]), {})[r["bytes"]] = r
    for (case, fmt), by in rows.items():
        cells = [f"{by[b]['vs_torch']:.2f}x ({by[b]['copy_ratio']:.2f})" if b in by else "" for b in sizes]
        print(f"| {case} | {fmt} | " + " | ".join(cells) + " |")
    print()


def copy_table(path):
    recs = json.load(open(path))["records"]
    fmts = ["fp4_e2m1", "int4", "int4_asym", "int8", "int8_asym", "fp8_e4m3", "fp8_e5m2", "nf4", "dyn8"]
    rows = [("quantize_f32", "quantize, fp32 in"), ("quantize_bf16", "quantize, bf16 in"),
            ("dequantize_f32", "dequantize, fp32 out"), ("dequantize_bf16", "dequantize, bf16 out"),
            ("grad_accumulate_f32", "grad accumulate, fp32 grad"), ("grad_accumulate_bf16", "grad accumulate, bf16 grad"),
            ("grad_reduce", "reduce core, 8 chunks")]
    by = {(r["case"], r.get("format"), r["bytes"]): r["copy_ratio"] for r in recs if r.get("copy_ratio") is not None}
    print("| at 4 GiB (64 MiB) | " + " | ".join(fmts) + " |")
    print("|---|" + "---|" * len(fmts))
    for case, label in rows:
        cells = []
        for f in fmts:
            big, small = by.get((case, f, 4 << 30)), by.get((case, f, 64 << 20))
            cells.append(f"{big:.2f} ({small:.2f})" if big is not None and small is not None else "")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print()


def fused_table(path):
    by = {(r["case"], r["bytes"]): r for r in json.load(open(path))["records"]}
    G = 1 << 30
    print("| op | bf16 (no quantization) | unfused pair | fused | fused vs unfused (64 MiB / 1 GiB / 4 GiB) "
          "| fused vs copy (4 GiB) | bf16 vs copy (4 GiB) |")
    print("|---|---|---|---|---|---|---|")
    for op in ["rmsnorm_fwd", "rmsnorm_bwd", "swiglu_fwd", "swiglu_bwd", "gelu_fwd", "gelu_bwd"]:
        us = lambda kind, b=G: by[(f"{op}_{kind}", b)]["median_ms"] * 1e3
        speed = " / ".join(f"{us('unfused', b) / us('fused', b):.2f}" for b in (64 << 20, G, 4 * G))
        print(f"| {op} | {us('bf16'):.0f} us | {us('unfused'):.0f} us | {us('fused'):.0f} us | {speed}x "
              f"| {by[(op + '_fused', 4 * G)]['copy_ratio']:.2f} | {by[(op + '_bf16', 4 * G)]['copy_ratio']:.2f} |")
    print()


def intercept(pts):
    """The intercept and slope of the least-squares line through the points (x, y)."""
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    slope = sum((p[0] - mx) * (p[1] - my) for p in pts) / sum((p[0] - mx) ** 2 for p in pts)
    return my - slope * mx, slope


def fixed_table(path):
    rows = {}
    for r in json.load(open(path))["records"]:
        if r.get("case") != "copy_d2d" and r["bytes"] >= 64 << 20:
            rows.setdefault((r["case"], r.get("format", "")), []).append(r)
    print(f"`{path}`: time = fixed + slope x elements, fitted from 64 MiB\n")
    print("| case | format | fixed cost a call (us) | slope (us per M elements) | copy ratio at the largest |")
    print("|---|---|---|---|---|")
    for (case, fmt), rs in sorted(rows.items()):
        if len({r["n"] for r in rs}) < 2:
            continue
        c, m = intercept([(r["n"] / 1e6, r["median_ms"] * 1e3) for r in rs])
        big = max(rs, key=lambda r: r["n"])
        print(f"| {case} | {fmt} | {c:.1f} | {m:.4f} | {big['copy_ratio']:.2f} |")


def main():
    if sys.argv[1:2] == ["--fused"]:
        fused_table(sys.argv[2] if len(sys.argv) > 2 else "results/h200/kernels_fused.json")
        return
    if sys.argv[1:2] == ["--fixed"]:
        fixed_table(sys.argv[2] if len(sys.argv) > 2 else "results/h200/kernels.json")
        return
    if sys.argv[1:2] == ["--copy"]:
        copy_table(sys.argv[2] if len(sys.argv) > 2 else "results/h200/kernels.json")
        return
    for p in sys.argv[1:] or ["results/h200/kernels.json", "results/h200/kernels_fused.json"]:
        table(p)


if __name__ == "__main__":
    main()
