#!/usr/bin/env bash
# Run on the GPU machine (PyTorch installed there): records the tensors PyTorch saves for
# backward in LLaMA decoder layers (validation/saved_tensors.py) into $OUT/saved_tensors.json.
# Commit that file as results/h200/saved_tensors.json; tests/test_memory_validation.c then
# checks the C memory model against it (within 2% per shape).
#   OUT=/some/dir bash tools/device_validation.sh
set -euo pipefail
: "${OUT:?set OUT to the directory for saved_tensors.json}"
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "gpu", torch.cuda.is_available() and torch.cuda.get_device_name(0))'
python3 validation/saved_tensors.py --out "$OUT/saved_tensors.json" --device auto
python3 - "$OUT/saved_tensors.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ok = [r for r in d["records"] if r["status"] == "ok"]
print("%d of %d records measured on %s" % (len(ok), len(d["records"]), d["meta"]["gpu"] or d["meta"]["device"]))
sys.exit(0 if ok else 1)
PY
