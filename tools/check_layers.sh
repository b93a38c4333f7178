#!/usr/bin/env bash
# Fails when an #include points up the layering (lowest first):
#   core < kernels < collectives, models < train, sim, step < runners < harness
# (tests/, tools/ and fuzz/ sit above everything.) A file may include its own folder and any lower one;
# folders of one layer may include each other. Reads the `#include "dir/..."` lines of every
# tracked or new (not ignored) C/C++/CUDA file; prints each upward arrow as
#   FILE:LINE: FROM -> TO (layer a < layer b)
# and exits 1 if there is one. Then checks that no two folders include each other through any
# chain (kernels/<op>/ count as folders of their own: kernels/quant and kernels/grad8 may not
# need each other), with tsort over the folder graph. Run by `make test`.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

git ls-files -co --exclude-standard -- '*.c' '*.h' '*.cu' '*.cuh' |
    xargs -r grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[^"]+/' /dev/null |
    awk '
    BEGIN {
        split("core:0 kernels:1 collectives:2 models:2 train:3 sim:3 step:3 runners:4 harness:5 tests:9 tools:9 fuzz:9", L, " ")
        for (i in L) { split(L[i], kv, ":"); rank[kv[1]] = kv[2] }
    }
    {
        split($0, p, ":"); file = p[1]; line = p[2]
        from = file; sub(/\/.*/, "", from)
        to = $0; sub(/^[^"]*"/, "", to); sub(/\/.*/, "", to)
        if (!(from in rank) || !(to in rank)) {
            printf "check_layers: %s:%s: folder %s or %s has no layer (add it to tools/check_layers.sh)\n", file, line, from, to
            bad = 1
        } else if (rank[from] < rank[to]) {
            printf "check_layers: %s:%s: %s -> %s (layer %d includes layer %d)\n", file, line, from, to, rank[from], rank[to]
            bad = 1
        }
    }
    END {
        if (bad) { print "check_layers: upward includes found (layer order in tools/check_layers.sh)"; exit 1 }
        print "check_layers: ok"
    }'

# Folder cycles: edges "from to" between folders (kernels/<op> a folder of its own; the
# benchmark cases kernels/<op>/bench_*, which sit beside their kernels, belong to the benchmark
# layer kernels/bench above them), tests and tools left out; tsort names a loop's folders.
edges=$(git ls-files -co --exclude-standard -- '*.c' '*.h' '*.cu' '*.cuh' |
    grep -vE '^(tests|tools|fuzz)/' |
    xargs -r grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[^"]+/' /dev/null |
    awk '{ split($0, p, ":"); f = p[1]; t = $0; sub(/^[^"]*"/, "", t); sub(/".*/, "", t);
           n = split(f, a, "/"); g = (a[1] == "kernels" && n > 2) ? a[1] "/" a[2] : a[1];
           if (a[1] == "kernels" && a[n] ~ /^bench_/) g = "kernels/bench";
           m = split(t, b, "/"); h = (b[1] == "kernels" && m > 2) ? b[1] "/" b[2] : b[1];
           if (g != h) print g, h }' | sort -u)
if ! loops=$(printf '%s\n' "$edges" | tsort 2>&1 >/dev/null) || [ -n "$loops" ]; then
    echo "check_layers: folders include each other in a loop:"
    printf '%s\n' "$loops" | sed 's/^/  /'
    exit 1
fi
echo "check_layers: no folder cycles"
