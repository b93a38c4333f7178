#!/usr/bin/env python3
"""The torch.compile peer of `agoq kernels` (issue 15): the same operations written plainly in
PyTorch and compiled with torch.compile (Inductor + Triton), timed on the same GPU in the same
device call, so each of our kernel records can carry vs_torch = peer median / our median.

What a researcher who does not use this harness would write:
  quantize    block-wise from fp32 or bf16 with our scale rules (kernels/quant/formats.h):
              int8/int4 (symmetric: s = absmax / (2^(k-1) - 1), code = rint(x / s) + 2^(k-1)),
              int8_asym/int4_asym (s = (max - min) / (2^k - 1), zero = min), fp4_e2m1 and nf4
              (nearest table value by bucketize over the midpoints; s = absmax / 6, absmax),
              fp8_e4m3/e5m2 (s = absmax / 448 or 57344, torch's float8 cast), dyn8 (the
              bitsandbytes map of formats.c, bucketize); 4-bit codes packed two per byte (even
              element in the low nibble), fp32 scales (and zero points).
  dequantize  the reverse, to fp32 or bf16.
  grad8       the 8-bit gradient kernels, for the 8-bit formats: accumulate (dequantize the
              stored gradient, add a new fp32 / bf16 one in fp32, requantize) and the reduce
              core (the fp32 sum of 8 dequantized chunks, requantized).
  fused       RMSNorm (eps 1e-5), SwiGLU (h = [gate | up]) and GELU (tanh) over rows of `cols`:
              forward plain bf16, and forward + the FP4 E2M1/128 copy of the input in one
              compiled function; backward from bf16 x, and backward from the FP4 copy
              (dequantize + recompute the output + backward), written out by hand (no autograd),
              returning what our kernels write (dx, the recomputed y; RMSNorm also dw).
The peer does not reproduce our NaN/Inf rules (a NaN block's scale etc.): inputs are finite
N(0, 1) data, where the work per element is the same. Records use our case names, formats,
blocks and sweep bytes (logical fp32 input bytes: n = bytes / 4 elements; the fused cases'
inputs are bf16 tensors of n elements, rows = n / cols), so runners/kernels.c can match them.

Compilation (--modes): "static" = torch.compile(fn, dynamic=False), one compilation per size
(what a benchmark of one shape gets; reductions over a static row length can be persistent),
"dynamic" = torch.compile(fn, dynamic=True), compiled once at a small size. Every case is a
function with its own code object and the recompile limits are raised, so no case falls back to
eager (the first run, at 12:37 UTC on 2026-12-03, hit dynamo's limit of 8 variants per code
object and timed the fp8/dyn8 quantize/dequantize peers eagerly). Each record names its mode;
runners/kernels.c takes the fastest mode of a point (the strongest peer).
Timing: per size `warmup` calls and `iters` calls each after an L2 flush (a write of 2 x 60
MiB, outside the timed interval), CUDA events around each call, median / min / max in ms. A GPU busy-wait (torch.cuda._sleep)
before the start event hides the Python/guard overhead of the call, so the time is the GPU's
(as for our kernels, launched from C).

usage: python3 validation/torch_kernels.py --out PEER.json [--min-bytes 64M --max-bytes 4G
       --factor 4] [--fused-factor 4] [--iters 10 --warmup 3] [--only quant,fused,grad8]
       [--formats fp4_e2m1,...] [--wait-for FILE] [--compile-budget-s S] [--budget-s S]
  --wait-for: compile everything, then wait until FILE exists before timing (so compilation
  overlaps another job's GPU tests in the same device call). --compile-budget-s: compile no
  more functions after S seconds (the rest are listed in "errors"). --budget-s: stop timing
  new points S seconds after the timing started (the records so far are written;
  "truncated": true).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
import types

import torch
import torch.nn.functional as F

EPS = 1e-5
GELU_C, GELU_A = 0.7978845608, 0.044715
NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
       -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
       0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
       0.7229568362236023, 1.0]
FP4 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def dyn8_values():
    """bitsandbytes create_dynamic_map(signed=True), as kernels/quant/formats.c builds it."""
    v = []
    for i in range(7):
        k = (1 << i) + 1
        for j in range(k - 1):
            a, b = 0.1 + 0.9 * j / (k - 1), 0.1 + 0.9 * (j + 1) / (k - 1)
            m = 0.5 * (a + b) * 10.0 ** (i - 6)
            v += [m, -m]
    return sorted(v + [0.0, 1.0])


# name: (kind, bits, block, qmax); kind: sym | asym | table | fp8
FORMATS = {
    "fp4_e2m1": ("table", 4, 128, 6.0), "int4": ("sym", 4, 128, 7.0), "int4_asym": ("asym", 4, 128, 15.0),
    "nf4": ("table", 4, 64, 1.0), "int8": ("sym", 8, 128, 127.0), "int8_asym": ("asym", 8, 128, 255.0),
    "fp8_e4m3": ("fp8", 8, 128, 448.0), "fp8_e5m2": ("fp8", 8, 128, 57344.0), "dyn8": ("table", 8, 256, 1.0),
}


class Table:
    """A value table on the device: sorted values, midpoints, code of each sorted position."""

    def __init__(self, values, dev):
        vals = torch.tensor(values, dtype=torch.float32)
        order = sorted(range(len(values)), key=lambda c: (values[c], math.copysign(1, values[c]) < 0))
        # drop -0 (FP4 code 8): 0 encodes to code 0 as in formats.c
        order = [c for c in order if not (values[c] == 0.0 and math.copysign(1, values[c]) < 0)]
        srt = vals[order]
        self.mid = ((srt[1:] + srt[:-1]) * 0.5).to(dev)
        self.code = torch.tensor(order, dtype=torch.uint8).to(dev)
        self.value = vals.to(dev)


def pack4(codes):  # uint8 codes [m, B] -> [m, B/2], element 2j in the low nibble of byte j
    c = codes.view(codes.shape[0], -1, 2)
    return c[..., 0] | (c[..., 1] << 4)


def unpack4(packed):
    return torch.stack((packed & 15, packed >> 4), dim=-1).reshape(packed.shape[0], -1)


def make_quant(fmt, tables):
    kind, bits, block, qmax = FORMATS[fmt]
    tab = tables.get(fmt)

    def quantize(x):
        xb = x.float().view(-1, block)
        if kind == "asym":
            lo, hi = xb.amin(dim=1, keepdim=True), xb.amax(dim=1, keepdim=True)
            s = (hi - lo) / qmax
            inv = torch.where(s > 0, 1.0 / s, torch.zeros_like(s))
            q = torch.clamp(torch.round((xb - lo) * inv), 0, qmax).to(torch.uint8)
            codes = pack4(q) if bits == 4 else q
            return codes, s.squeeze(1), lo.squeeze(1)
        s = xb.abs().amax(dim=1, keepdim=True) / qmax
        inv = torch.where(s > 0, 1.0 / s, torch.zeros_like(s))
        y = xb * inv
        if kind == "sym":
            half = float(2 ** (bits - 1))
            q = (torch.clamp(torch.round(y), -qmax, qmax) + half).to(torch.uint8)
        elif kind == "fp8":
            dt = torch.float8_e4m3fn if fmt == "fp8_e4m3" else torch.float8_e5m2
            q = torch.clamp(y, -qmax, qmax).to(dt).view(torch.uint8)
        else:
            q = tab.code[torch.bucketize(y, tab.mid)]
        codes = pack4(q) if bits == 4 else q
        return codes, s.squeeze(1), None

    def dequantize(codes, s, zero, out_dtype):
        q = unpack4(codes) if bits == 4 else codes
        if kind == "sym":
            v = q.float() - float(2 ** (bits - 1))
        elif kind == "asym":
            v = q.float()
        elif kind == "fp8":
            dt = torch.float8_e4m3fn if fmt == "fp8_e4m3" else torch.float8_e5m2
            v = q.view(dt).float()
        else:
            v = tab.value[q.long()]
        y = v * s.unsqueeze(1)
        if zero is not None:
            y = y + zero.unsqueeze(1)
        return y.to(out_dtype).view(-1)

    return quantize, dequantize


# ---- fused ops (rows of cols; SwiGLU: h = [gate | up], out width cols / 2) ----
def rms_fwd(x, w):
    xf = x.float()
    r = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + EPS)
    return (xf * r * w.float()).to(torch.bfloat16)


def rms_bwd_from(xf, dy, w):
    wf, g = w.float(), dy.float() * w.float()
    r = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + EPS)
    coef = (g * xf).mean(dim=-1, keepdim=True) * r * r
    dx = r * (g - xf * coef)
    dw = (dy.float() * xf * r).sum(dim=0)
    return dx.to(torch.bfloat16), (xf * r * wf).to(torch.bfloat16), dw


def swiglu_fwd(h):
    gate, up = h.float().chunk(2, dim=-1)
    return (F.silu(gate) * up).to(torch.bfloat16)


def swiglu_bwd_from(hf, dout):
    gate, up = hf.chunk(2, dim=-1)
    d = dout.float()
    s = torch.sigmoid(gate)
    dgate = d * up * s * (1 + gate * (1 - s))
    dup = d * gate * s
    return torch.cat((dgate, dup), dim=-1).to(torch.bfloat16), (gate * s * up).to(torch.bfloat16)


def gelu_fwd(x):
    return F.gelu(x.float(), approximate="tanh").to(torch.bfloat16)


def gelu_bwd_from(xf, dy):
    t = torch.tanh(GELU_C * (xf + GELU_A * xf * xf * xf))
    du = GELU_C * (1 + 3 * GELU_A * xf * xf)
    grad = 0.5 * (1 + t) + 0.5 * xf * (1 - t * t) * du
    return (dy.float() * grad).to(torch.bfloat16), (0.5 * xf * (1 + t)).to(torch.bfloat16)


# ---- 8-bit gradient ops (kernels/grad8): the stored copy is (codes, scales, zeros) ----
GRAD_CHUNKS = 8  # inputs of the reduce core, experiments/kernels.json's nchunks


def grad8_fns(q, dq):
    def accumulate(codes, s, z, g):  # dequantize, add the new gradient in fp32, requantize
        return q(dq(codes, s, z, torch.float32) + g.float())

    def reduce(*chunks):  # fp32 sum of the dequantized chunks in order, requantized
        total = dq(*chunks[0], torch.float32)
        for c in chunks[1:]:
            total = total + dq(*c, torch.float32)
        return q(total)

    return accumulate, reduce


def build_cases(dev, only, formats):
    """(case, format, block, make_inputs(n, cols), fn) for every peer; fn takes make_inputs' tuple."""
    tables = {f: Table(v, dev) for f, v in (("fp4_e2m1", FP4), ("nf4", NF4), ("dyn8", dyn8_values()))}
    cases = []
    if "fused" in only:
        q4, dq4 = make_quant("fp4_e2m1", tables)
        bf = torch.bfloat16

        def mk_x(n, cols):
            return (torch.randn(n // cols, cols, device=dev, dtype=bf),)

        def mk_xw(n, cols):
            return mk_x(n, cols) + (torch.randn(cols, device=dev, dtype=bf),)

        def mk_bwd(n, cols, wide=1, w=False, quant=False):
            x = torch.randn(n // cols, cols, device=dev, dtype=bf)
            dy = torch.randn(n // cols, cols // wide, device=dev, dtype=bf)
            first = q4(x) if quant else (x,)
            return (first, dy) + ((torch.randn(cols, device=dev, dtype=bf),) if w else ())

        def deq(first, shape):  # the stored copy (codes, scales, None) or bf16 x -> fp32 [rows, cols]
            return dq4(*first, torch.float32).view(shape) if len(first) == 3 else first[0].float()

        def with_q(fn):  # forward + the FP4 copy of the op's input
            return lambda x, *rest: (fn(x, *rest), q4(x))

        cases += [
            ("rmsnorm_fwd_bf16", "fp4_e2m1", 128, mk_xw, rms_fwd),
            ("rmsnorm_fwd_fused", "fp4_e2m1", 128, mk_xw, with_q(rms_fwd)),
            ("swiglu_fwd_bf16", "fp4_e2m1", 128, mk_x, swiglu_fwd),
            ("swiglu_fwd_fused", "fp4_e2m1", 128, mk_x, with_q(swiglu_fwd)),
            ("gelu_fwd_bf16", "fp4_e2m1", 128, mk_x, gelu_fwd),
            ("gelu_fwd_fused", "fp4_e2m1", 128, mk_x, with_q(gelu_fwd)),
        ]
        for var, quant in (("bf16", False), ("fused", True)):
            cases += [
                ("rmsnorm_bwd_" + var, "fp4_e2m1", 128,
                 lambda n, c, quant=quant: mk_bwd(n, c, w=True, quant=quant),
                 lambda first, dy, w: rms_bwd_from(deq(first, dy.shape), dy, w)),
                ("swiglu_bwd_" + var, "fp4_e2m1", 128,
                 lambda n, c, quant=quant: mk_bwd(n, c, wide=2, quant=quant),
                 lambda first, dy: swiglu_bwd_from(deq(first, (dy.shape[0], 2 * dy.shape[1])), dy)),
                ("gelu_bwd_" + var, "fp4_e2m1", 128,
                 lambda n, c, quant=quant: mk_bwd(n, c, quant=quant),
                 lambda first, dy: gelu_bwd_from(deq(first, dy.shape), dy)),
            ]
    if "grad8" in only:  # the 8-bit gradient kernels (kernels/grad8), 8-bit formats only
        for fmt in [f for f in formats if FORMATS[f][1] == 8]:
            q, dq = make_quant(fmt, tables)
            acc, red = grad8_fns(q, dq)
            block = FORMATS[fmt][2]
            for dt, tag in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
                def mk_acc(n, cols, dt=dt, q=q):  # the stored 8-bit gradient and a new fp32 / bf16 one
                    return q(torch.randn(n, device=dev)) + (torch.randn(n, device=dev, dtype=dt),)

                cases.append(("grad_accumulate_" + tag, fmt, block, mk_acc, acc))

            def mk_red(n, cols, q=q):  # the received chunks of the quantized reduce-scatter
                return tuple(q(torch.randn(n, device=dev)) for _ in range(GRAD_CHUNKS))

            cases.append(("grad_reduce", fmt, block, mk_red, red))
    if "quant" in only:
        for fmt in formats:
            q, dq = make_quant(fmt, tables)
            block = FORMATS[fmt][2]
            for dt, tag in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
                def mk_q(n, cols, dt=dt):
                    return (torch.randn(n, device=dev, dtype=dt),)

                def mk_dq(n, cols, dt=dt, q=q):
                    codes, s, z = q(torch.randn(n, device=dev, dtype=torch.float32))
                    return codes, s, z, dt

                cases.append(("quantize_" + tag, fmt, block, mk_q, q))
                cases.append(("dequantize_" + tag, fmt, block, mk_dq, dq))
    return cases


def fresh(fn, name):
    """fn with a code object of its own: dynamo keeps its compiled variants per code object, and
    the closures of make_quant (or the lambdas of build_cases) share theirs across cases."""
    g = types.FunctionType(fn.__code__.replace(co_name=name), fn.__globals__, name, fn.__defaults__, fn.__closure__)
    g.__kwdefaults__ = fn.__kwdefaults__
    return g


def raise_recompile_limits():
    for k in ("recompile_limit", "cache_size_limit", "accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(torch._dynamo.config, k):
            setattr(torch._dynamo.config, k, 4096)


def time_fn(fn, args, warmup, iters, flush):
    for _ in range(warmup):
        fn(*args)
    ts = []
    for _ in range(iters):
        flush.fill_(1.0)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if hasattr(torch.cuda, "_sleep"):
            torch.cuda._sleep(1000000)  # ~0.5 ms of GPU busy-wait: the call is enqueued before `a` runs
        a.record()
        fn(*args)
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts), min(ts), max(ts)


def parse_bytes(s):
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * mult[s[-1].upper()] if s[-1].upper() in mult else int(s)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-bytes", default="64M")
    ap.add_argument("--max-bytes", default="4G")
    ap.add_argument("--factor", type=int, default=4, help="size step of the quant cases")
    ap.add_argument("--fused-factor", type=int, default=4, help="size step of the fused cases")
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--only", default="quant,fused,grad8")
    ap.add_argument("--formats", default="fp4_e2m1,int4,nf4,int8,fp8_e4m3,dyn8", help="quant peers (any of FORMATS)")
    ap.add_argument("--modes", default="static", help="static,dynamic: torch.compile dynamic=False / True")
    ap.add_argument("--wait-for", default=None)
    ap.add_argument("--budget-s", type=float, default=1e9, help="timing phase limit (after --wait-for)")
    ap.add_argument("--compile-budget-s", type=float, default=1e9, help="compilation phase limit")
    a = ap.parse_args()
    t0 = time.time()
    dev = torch.device("cuda")
    only = set(a.only.split(","))
    lo, hi = parse_bytes(a.min_bytes), parse_bytes(a.max_bytes)
    cases = build_cases(dev, only, a.formats.split(","))
    meta = {"tool": "validation/torch_kernels.py", "source": "measured", "command": sys.argv,
            "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "commit": os.environ.get("AGOQ_COMMIT", "unknown")}
    out = {"schema": "agoq-torch-peer/1", "meta": meta, "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
           "modes": a.modes, "iters": a.iters, "warmup": a.warmup,
           "cols": a.cols, "records": [], "errors": [], "truncated": False}
    raise_recompile_limits()
    modes = a.modes.split(",")
    def sweep(step):
        b, out_ = lo, []
        while b <= hi:
            out_.append(b)
            b *= step
        return out_
    qsizes, fsizes = sweep(a.factor), sweep(a.fused_factor)
    def sizes_of(case):
        return fsizes if case.split("_")[0] in ("rmsnorm", "swiglu", "gelu") else qsizes
    compiled, ready = {}, set()  # (mode, case, fmt) -> compiled function; static: (mode, case, fmt, bytes)
    # compile: dynamic ones once at a small size, static ones at every size they are timed at
    # (smallest sizes first, so a budget cut keeps whole sizes); inputs are freed at once
    work = [("dynamic", c, None) for c in cases] if "dynamic" in modes else []
    if "static" in modes:
        work += [("static", c, b) for b in sorted(set(qsizes) | set(fsizes)) for c in cases if b in sizes_of(c[0])]
    for mode, (case, fmt, block, mk, fn), b in work:
        if time.time() - t0 > a.compile_budget_s:
            out["errors"].append({"case": case, "format": fmt, "mode": mode, "bytes": b, "error": "not compiled: budget"})
            continue
        try:
            key = (mode, case, fmt)
            if key not in compiled:
                compiled[key] = torch.compile(fresh(fn, f"{case}_{fmt}_{mode}"), dynamic=mode == "dynamic")
            args = mk(a.cols * 64 if b is None else b // 4, a.cols)
            compiled[key](*args)
            del args
            if b is not None:
                ready.add((mode, case, fmt, b))
        except Exception as e:  # one failing peer must not cost the others
            out["errors"].append({"case": case, "format": fmt, "mode": mode, "bytes": b, "error": repr(e)[:300]})
            print(f"torch_kernels: {case} {fmt} {mode} {b}: compile failed: {e!r}"[:300], file=sys.stderr, flush=True)
        torch.cuda.empty_cache()
    torch.cuda.synchronize()
    print(f"torch_kernels: compiled {len(work) - len(out['errors'])} of {len(work)} in {time.time() - t0:.1f}s", flush=True)
    if a.wait_for:
        while not os.path.exists(a.wait_for):
            time.sleep(0.5)
    t1 = time.time()
    flush = torch.empty(2 * 60 * (1 << 20) // 4, device=dev)
    points = [(b, m, c) for b in sorted(set(qsizes) | set(fsizes)) for m in modes for c in cases if b in sizes_of(c[0])]
    for b, mode, (case, fmt, block, mk, fn) in points:  # sizes outer: a budget cut drops the largest
        c = compiled.get((mode, case, fmt))
        if c is None or (mode == "static" and (mode, case, fmt, b) not in ready):
            continue
        if time.time() - t1 > a.budget_s:
            out["truncated"] = True
            break
        try:
            args = mk(b // 4, a.cols)
            med, mn, mx = time_fn(c, args, a.warmup, a.iters, flush)
            del args
            out["records"].append({"case": case, "format": fmt, "block": block, "bytes": b, "n": b // 4,
                                   "mode": mode, "median_ms": med, "min_ms": mn, "max_ms": mx})
            print(f"  {case:20s} {fmt:9s} {mode:7s} {b >> 20:6d} MiB {1e3 * med:10.1f} us", flush=True)
        except Exception as e:
            out["errors"].append({"case": case, "format": fmt, "mode": mode, "bytes": b, "error": repr(e)[:300]})
            print(f"torch_kernels: {case} {fmt} {mode} {b}: {e!r}"[:300], file=sys.stderr, flush=True)
        torch.cuda.empty_cache()
    out["seconds"] = time.time() - t0
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1)
    os.replace(tmp, a.out)
    print(f"torch_kernels: {len(out['records'])} records, {len(out['errors'])} errors, "
          f"{out['seconds']:.0f}s -> {a.out}", flush=True)


if __name__ == "__main__":
    main()
