#!/usr/bin/env python3
"""The README's "ours vs torch.compile" tables from measured kernel results (issue 15).

Reads results/h200/kernels.json and kernels_fused.json (records with vs_torch, written by
`agoq run` with the peer of validation/torch_kernels.py attached; tools/device_kernels.sh) and
prints markdown: per case and format, vs_torch (peer median / ours; > 1: ours faster) and our
copy_ratio at each size the peer timed.

usage: python3 tools/kernels_vs_torch.py [results/h200/kernels.json results/h200/kernels_fused.json]
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


def main():
    for p in sys.argv[1:] or ["results/h200/kernels.json", "results/h200/kernels_fused.json"]:
        table(p)


if __name__ == "__main__":
    main()
