#!/usr/bin/env python3
"""One line per kernel from nvcc's `-Xptxas -v` output: the demangled name (spaces removed), its
registers and its spill stores / loads. Sorted, so two builds compare with `comm`.

  nvcc <the Makefile's NVCCFLAGS> -Xptxas -v -c FILE.cu -o /tmp/x.o 2> ptxas.txt
  python3 tools/ptxas_kernels.py ptxas.txt > kernels.txt
"""
import re
import subprocess
import sys


def main():
    out, cur = {}, None
    for line in open(sys.argv[1]):
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            cur = m.group(1)
            out[cur] = ""
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and cur:
            out[cur] += " regs %s" % m.group(1)
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and cur:
            out[cur] += " spill %s/%s" % (m.group(2), m.group(3))
    names = list(out)
    dem = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True).stdout.split("\n")
    for line in sorted("%s |%s" % (d.replace(" ", ""), out[n]) for n, d in zip(names, dem)):
        print(line)


if __name__ == "__main__":
    main()
