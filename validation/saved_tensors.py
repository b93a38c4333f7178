#!/usr/bin/env python3
"""Record every tensor PyTorch's autograd saves for backward in one LLaMA decoder layer.

What: a pure-torch LLaMA decoder layer (RMSNorm, q/k/v/o projections, RoPE, causal attention,
SwiGLU MLP, residuals) in bf16 at a few shapes, with flash attention (SDPA forced to its flash
kernel) and with eager attention (softmax(QK^T)V written out, softmax in fp32 as HF does), and
with a fused RMSNorm (a custom Function saving input + fp32 rstd, as apex/TE) and the eager HF
RMSNorm. torch.autograd.graph.saved_tensors_hooks sees every saved tensor; storages are counted
once (a view saved twice, or a tensor saved by several ops, is one allocation) and parameters and
constant buffers (weights, RoPE cos/sin, the causal mask) are reported apart from activations.

Why: models/inventory.c claims what such a layer saves; tests/test_memory_validation.c
compares its bytes with this file's measurement (within 2%) once
results/h200/saved_tensors.json is committed.

Run: python3 validation/saved_tensors.py --out results/h200/saved_tensors.json
     (--device cpu|cuda|auto, --shapes small|all; on the GPU machine tools/device_validation.sh).
No downloads: weights are seeded random. Output follows the agoq-results/1 schema with
meta.source "measured".
"""
import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import sys

import torch
import torch.nn.functional as F

# name, micro-batch b, sequence s, hidden h, FFN f, heads a, KV heads, head dim d
SHAPES = [
    ("small-mha", 2, 512, 1024, 2816, 16, 16, 64),
    ("llama2-7b", 1, 2048, 4096, 11008, 32, 32, 128),
    ("llama3-8b", 1, 4096, 4096, 14336, 32, 8, 128),
    ("llama2-70b", 1, 1024, 8192, 28672, 64, 8, 128),
]


class FusedRMSNorm(torch.autograd.Function):
    """RMSNorm that saves what fused kernels save: the input and the fp32 reciprocal RMS."""

    @staticmethod
    def forward(ctx, x, weight, eps):
        xf = x.float()
        rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, weight, rstd)
        return (xf * rstd).to(x.dtype) * weight

    @staticmethod
    def backward(ctx, gy):
        x, weight, rstd = ctx.saved_tensors
        xhat = x.float() * rstd
        g = gy.float() * weight.float()
        gx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
        gw = (gy.float() * xhat).reshape(-1, x.shape[-1]).sum(0)
        return gx.to(x.dtype), gw.to(weight.dtype), None


def rmsnorm_eager(x, weight, eps):
    """HF LlamaRMSNorm: the fp32 copy, rsqrt and the normalized bf16 copy are saved."""
    xf = x.to(torch.float32)
    var = xf.pow(2).mean(-1, keepdim=True)
    xn = xf * torch.rsqrt(var + eps)
    return weight * xn.to(x.dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rotate_half_t(u):
    """Transpose of rotate_half (a linear map): cat(u2, -u1)."""
    u1, u2 = u.chunk(2, dim=-1)
    return torch.cat((u2, -u1), dim=-1)


class RoPE(torch.autograd.Function):
    """Rotary embedding that saves only cos/sin (as fused RoPE kernels), independent of the
    PyTorch version's rules for which operands an elementwise multiply keeps."""

    @staticmethod
    def forward(ctx, x, cos, sin):
        ctx.save_for_backward(cos, sin)
        return x * cos + rotate_half(x) * sin

    @staticmethod
    def backward(ctx, g):
        cos, sin = ctx.saved_tensors
        return g * cos + rotate_half_t(g * sin), None, None


def repeat_kv(x, n_rep):
    """HF repeat_kv: [b, kv, s, d] -> [b, kv*n_rep, s, d], materialized."""
    if n_rep == 1:
        return x
    b, kv, s, d = x.shape
    return x[:, :, None].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)


class Layer:
    def __init__(self, h, f, a, kv, d, s, device, dtype, seed):
        g = torch.Generator(device="cpu").manual_seed(seed)

        def w(*shape):
            return (torch.randn(*shape, generator=g) * 0.02).to(device=device, dtype=dtype).requires_grad_()

        self.a, self.kv, self.d, self.eps = a, kv, d, 1e-5
        self.wq, self.wk, self.wv, self.wo = w(a * d, h), w(kv * d, h), w(kv * d, h), w(h, a * d)
        self.wg, self.wu, self.wd = w(f, h), w(f, h), w(h, f)
        self.n1 = torch.ones(h, device=device, dtype=dtype).requires_grad_()
        self.n2 = torch.ones(h, device=device, dtype=dtype).requires_grad_()
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
        ang = torch.outer(torch.arange(s, dtype=torch.float32), inv)
        emb = torch.cat((ang, ang), dim=-1)
        self.cos, self.sin = emb.cos().to(device, dtype), emb.sin().to(device, dtype)
        self.mask = torch.full((s, s), float("-inf"), device=device, dtype=dtype).triu(1)
        self.params = [self.wq, self.wk, self.wv, self.wo, self.wg, self.wu, self.wd, self.n1, self.n2]
        self.constants = [self.cos, self.sin, self.mask]

    def norm(self, x, weight, fused):
        return FusedRMSNorm.apply(x, weight, self.eps) if fused else rmsnorm_eager(x, weight, self.eps)

    def attention(self, h1, flash):
        b, s, _ = h1.shape
        a, kv, d = self.a, self.kv, self.d
        q = F.linear(h1, self.wq).view(b, s, a, d).transpose(1, 2)
        k = F.linear(h1, self.wk).view(b, s, kv, d).transpose(1, 2)
        v = F.linear(h1, self.wv).view(b, s, kv, d).transpose(1, 2)
        q, k = RoPE.apply(q, self.cos, self.sin), RoPE.apply(k, self.cos, self.sin)
        k, v = repeat_kv(k, a // kv), repeat_kv(v, a // kv)
        if flash:
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(d)) + self.mask
            probs = torch.softmax(scores.float(), dim=-1).to(q.dtype)
            o = torch.matmul(probs, v)
        return F.linear(o.transpose(1, 2).reshape(b, s, a * d), self.wo)

    def forward(self, x, flash, fused_norm):
        x2 = x + self.attention(self.norm(x, self.n1, fused_norm), flash)
        h2 = self.norm(x2, self.n2, fused_norm)
        return x2 + F.linear(F.silu(F.linear(h2, self.wg)) * F.linear(h2, self.wu), self.wd)


def flash_context(device):
    """Forces SDPA's flash kernel; raises if this torch cannot."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return sdpa_kernel([SDPBackend.FLASH_ATTENTION])
    except ImportError:
        if device.type != "cuda":
            raise RuntimeError("this torch has no torch.nn.attention.sdpa_kernel for CPU flash attention")
        return torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False, enable_mem_efficient=False)


def storage_key(t):
    return (str(t.device), t.untyped_storage().data_ptr())


def measure(shape, flash, fused_norm, device, dtype):
    name, b, s, h, f, a, kv, d = shape
    layer = Layer(h, f, a, kv, d, s, device, dtype, seed=1234)
    fixed = {storage_key(p): "parameter" for p in layer.params}
    fixed.update({storage_key(c): "constant" for c in layer.constants})
    x = (torch.randn(b, s, h, generator=torch.Generator().manual_seed(99)) * 0.5).to(device, dtype).requires_grad_()
    seen = {}

    def pack(t):
        key = storage_key(t)
        nbytes = t.untyped_storage().nbytes()
        kind = fixed.get(key, "activation")
        if key not in seen or nbytes > seen[key]["storage_bytes"]:
            seen[key] = {"kind": kind, "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                         "storage_bytes": nbytes, "device": str(t.device)}
        return t

    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        before = torch.cuda.memory_allocated()
    ctx = flash_context(device) if flash else contextlib.nullcontext()
    with ctx, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = layer.forward(x, flash, fused_norm)
    rec = {"name": name, "b": b, "s": s, "h": h, "f": f, "heads": a, "kv_heads": kv, "head_dim": d,
           "flash_attn": flash, "fused_norm": fused_norm, "gqa_repeat": kv < a, "status": "ok"}
    if device.type == "cuda":
        torch.cuda.synchronize()
        # what the forward left allocated besides its output: the saved tensors as the
        # caching allocator holds them (block rounding included)
        rec["cuda_retained_bytes"] = torch.cuda.memory_allocated() - before - out.untyped_storage().nbytes()
    acts = [t for t in seen.values() if t["kind"] == "activation"]
    rec["saved_bytes"] = sum(t["storage_bytes"] for t in acts)
    rec["saved_count"] = len(acts)
    rec["parameter_saved_bytes"] = sum(t["storage_bytes"] for t in seen.values() if t["kind"] == "parameter")
    rec["constant_saved_bytes"] = sum(t["storage_bytes"] for t in seen.values() if t["kind"] == "constant")
    rec["tensors"] = sorted(acts, key=lambda t: -t["storage_bytes"])
    out.float().sum().backward()  # the saved tensors are enough for a real backward
    rec["backward_ok"] = bool(torch.isfinite(x.grad.float()).all().item())
    del out, layer, x
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="results JSON to write")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--shapes", default=None, choices=["small", "all"],
                    help="default: all on cuda, small on cpu")
    args = ap.parse_args()
    dev = torch.device("cuda" if args.device == "cuda" or (args.device == "auto" and torch.cuda.is_available()) else "cpu")
    shapes = SHAPES if (args.shapes or ("all" if dev.type == "cuda" else "small")) == "all" else SHAPES[:1]
    records = []
    for shape in shapes:
        for flash in (True, False):
            for fused in (True, False):
                try:
                    rec = measure(shape, flash, fused, dev, torch.bfloat16)
                except (RuntimeError, NotImplementedError) as e:  # e.g. no flash kernel on this device
                    rec = {"name": shape[0], "flash_attn": flash, "fused_norm": fused,
                           "status": "skipped: %s" % str(e).splitlines()[0][:200]}
                if dev.type == "cuda":
                    torch.cuda.empty_cache()
                records.append(rec)
                print("%-11s flash=%d fused_norm=%d  %s" % (shape[0], flash, fused,
                      "%.1f MiB saved (%d tensors)" % (rec["saved_bytes"] / 2**20, rec["saved_count"])
                      if rec["status"] == "ok" else rec["status"]), flush=True)
    doc = {
        "schema": "agoq-results/1",
        "meta": {"tool": "saved_tensors.py", "source": "measured", "torch": torch.__version__,
                 "device": dev.type, "gpu": torch.cuda.get_device_name(0) if dev.type == "cuda" else None,
                 "cuda": torch.version.cuda, "python": platform.python_version(), "host": platform.node(),
                 "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "command": " ".join(sys.argv)},
        "config": {"dtype": "bfloat16", "shapes": [list(s) for s in shapes],
                   "dedupe": "by storage (device, data_ptr); parameters and constant buffers reported apart"},
        "records": records,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, args.out)
    print("wrote %s (%d records)" % (args.out, len(records)))
    return 0 if any(r["status"] == "ok" for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
