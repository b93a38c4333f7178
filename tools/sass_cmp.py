#!/usr/bin/env python3
"""Compares the SASS of two builds of one .cu file kernel by kernel: which kernels are identical,
which differ, which are new or gone. The inputs are tools/sass.sh outputs (all kernels):

  (cd OLD_TREE && tools/sass.sh kernels/gemm/gemm_wg.cu) > before.sass
  tools/sass.sh kernels/gemm/gemm_wg.cu > after.sass
  python3 tools/sass_cmp.py before.sass after.sass

Addresses, branch labels, the anonymous namespace's per-build hash and the numbering of nvcc's
internal helper functions are normalized away; everything else (every instruction and operand)
must match for a kernel to count as identical. Exit status 0 when no kernel of the first file
differs or is gone, 1 otherwise.
"""
import hashlib
import re
import sys

ANON = re.compile(r'_GLOBAL__N__[0-9a-f]+_\d+_\w+?_cu_[0-9a-f]+')


def kernels(path):
    out = {}
    for sec in re.split(r'\n(?=\s*\.section\s+\.text\.)', open(path).read()):
        head = sec.strip().split('\n')[0]
        if '.text.' not in head:
            continue
        name = ANON.sub('ANON', head.split('.text.')[1].split(',')[0])
        sec = re.split(r'\n//-+ \.(?!text)', sec)[0]  # the next non-text section, if it follows
        sec = '\n'.join(l for l in sec.split('\n') if not l.startswith('//-'))
        body = ANON.sub('ANON', sec)
        body = re.sub(r'\.L_x_\d+', '.L', body)
        body = re.sub(r'/\*[0-9a-f]{4,}\*/', '', body)
        body = re.sub(r'\$__internal_\d+_\$', '$internal$', body)
        out[name] = hashlib.sha1(body.encode()).hexdigest()
    return out


def main():
    a, b = kernels(sys.argv[1]), kernels(sys.argv[2])
    diff = [k for k in a if k in b and a[k] != b[k]]
    gone = [k for k in a if k not in b]
    print('before %d, after %d kernels: %d identical, %d different, %d new, %d gone' %
          (len(a), len(b), sum(1 for k in a if b.get(k) == a[k]), len(diff), sum(1 for k in b if k not in a), len(gone)))
    for k in diff:
        print('  DIFF', k)
    for k in b:
        if k not in a:
            print('  NEW ', k)
    for k in gone:
        print('  GONE', k)
    return 1 if diff or gone else 0


if __name__ == '__main__':
    sys.exit(main())
