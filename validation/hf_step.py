#!/usr/bin/env python3
"""The step engine against Hugging Face's LlamaDecoderLayer stack (runs on the GPU machine:
PyTorch + transformers; writes its own results JSON beside ours).

Two parts, one GPU run:
  check  DIR...   reads dumps of `agoq step` probes (step/dump.c: bf16 weights, the stage input
                  x, the output gradient dy and the stack output y of every micro-batch, and the
                  engine's fp32 gradients), builds the same stack from transformers'
                  LlamaDecoderLayer (sdpa attention, rotate-half RoPE), runs it in bf16 and in
                  fp32 with the same weights and data, and reports relative L2 errors:
                  engine vs fp32, HF bf16 vs fp32 (the yardstick: what bf16 costs PyTorch),
                  per stack output and per parameter gradient.
  time            the PyTorch peer of `agoq step` at LLaMA shapes: forward + backward of the
                  stack with the same random output gradient, then a mixed-precision AdamW step
                  (fp32 master weights, fused AdamW, bf16 copies: what the engine does), with
                  and without torch.utils.checkpoint per layer (Megatron full recomputation's
                  peer); SDPA on PyTorch's default backend and, as a stronger peer, forced to
                  its cuDNN backend. CUDA events, warm-up, median of reps.

Records use the engine's field names: policy ("pytorch", "pytorch_checkpoint",
"pytorch_cudnn_sdpa", ...), model, seq, micro_batch, layers, step_ms (median), step_ms_min,
step_ms_max, tokens_per_s, peak_bytes (torch.cuda.max_memory_allocated), saved_activation_bytes
(measured with saved_tensors_hooks over one forward, storages counted once).

  python3 validation/hf_step.py --out results/h200/step_pytorch.json \
      --check /tmp/dump_bf16 --time --model-json models/llama2-7b.json --layers 4 --seqs 4096 16384
"""
import argparse
import contextlib
import datetime
import json
import os
import platform
import sys
import time

import numpy as np
import torch


def load_dump(d):
    idx = json.load(open(os.path.join(d, "index.json")))

    def arr(name, dtype, shape):
        a = np.fromfile(os.path.join(d, name), dtype=np.uint16 if dtype == "bf16" else np.float32)
        t = torch.from_numpy(a.view(np.int16) if dtype == "bf16" else a)
        if dtype == "bf16":
            t = t.view(torch.bfloat16)
        return t.reshape(shape)

    return idx, arr


def rope_cos_sin(seq, d, base, b, device, dtype):
    inv = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float32, device=device) / d))
    pos = torch.arange(seq, dtype=torch.float32, device=device)
    f = torch.outer(pos, inv)
    emb = torch.cat([f, f], dim=-1)
    return emb.cos()[None].expand(b, -1, -1).to(dtype), emb.sin()[None].expand(b, -1, -1).to(dtype)


def make_stack(h, f, a, kv, d, layers, eps, device, dtype):
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer
    cfg = LlamaConfig(hidden_size=h, intermediate_size=f, num_attention_heads=a, num_key_value_heads=kv,
                      head_dim=d, rms_norm_eps=eps, num_hidden_layers=layers, attention_bias=False,
                      mlp_bias=False, vocab_size=32000)
    cfg._attn_implementation = "sdpa"
    return torch.nn.ModuleList([LlamaDecoderLayer(cfg, layer_idx=i) for i in range(layers)]).to(device, dtype), cfg


def run_stack(stack, x, cs):
    pos = torch.arange(x.shape[1], device=x.device)[None].expand(x.shape[0], -1)
    for layer in stack:
        o = layer(x, attention_mask=None, position_ids=pos, position_embeddings=cs)
        x = o[0] if isinstance(o, tuple) else o
    return x


PARAMS = ["norm1", "qkv", "out", "norm2", "fc1", "fc2"]


def set_weights(stack, idx, arr):
    a, kv, d, h, f = idx["heads"], idx["kv_heads"], idx["head_dim"], idx["hidden"], idx["ffn"]
    for l, layer in enumerate(stack):
        w = {p: None for p in PARAMS}
        shapes = {"norm1": (h,), "qkv": ((a + 2 * kv) * d, h), "out": (h, a * d), "norm2": (h,),
                  "fc1": (2 * f, h), "fc2": (h, f)}
        for p in PARAMS:
            w[p] = arr(f"w_{l}_{p}.bf16", "bf16", shapes[p]).to("cuda")
        with torch.no_grad():
            at = layer.self_attn
            at.q_proj.weight.copy_(w["qkv"][: a * d])
            at.k_proj.weight.copy_(w["qkv"][a * d: (a + kv) * d])
            at.v_proj.weight.copy_(w["qkv"][(a + kv) * d:])
            at.o_proj.weight.copy_(w["out"])
            layer.mlp.gate_proj.weight.copy_(w["fc1"][:f])
            layer.mlp.up_proj.weight.copy_(w["fc1"][f:])
            layer.mlp.down_proj.weight.copy_(w["fc2"])
            layer.input_layernorm.weight.copy_(w["norm1"])
            layer.post_attention_layernorm.weight.copy_(w["norm2"])


def hf_grads(layer):
    at = layer.self_attn
    return {"norm1": layer.input_layernorm.weight.grad, "norm2": layer.post_attention_layernorm.weight.grad,
            "qkv": torch.cat([at.q_proj.weight.grad, at.k_proj.weight.grad, at.v_proj.weight.grad]),
            "out": at.o_proj.weight.grad,
            "fc1": torch.cat([layer.mlp.gate_proj.weight.grad, layer.mlp.up_proj.weight.grad]),
            "fc2": layer.mlp.down_proj.weight.grad}


def rel(ref, got):
    ref, got = ref.double().flatten(), got.double().flatten().to(ref.device)
    n = ref.norm().item()
    return (got - ref).norm().item() / n if n > 0 else float("nan")


def check(d):
    idx, arr = load_dump(d)
    b, s, L, m = idx["micro_batch"], idx["seq"], idx["layers"], idx["micro_batches"]
    h = idx["hidden"]
    out = {"dump": d, "policy_checked": idx["policy"], "model": idx["model"], "layers": L, "seq": s,
           "micro_batch": b, "micro_batches": m}
    res = {}
    for dtype, tag in ((torch.float32, "fp32"), (torch.bfloat16, "hf_bf16")):
        stack, _ = make_stack(h, idx["ffn"], idx["heads"], idx["kv_heads"], idx["head_dim"], L, idx["norm_eps"],
                              "cuda", torch.bfloat16)
        set_weights(stack, idx, arr)
        stack = stack.to(dtype)
        acc = {(l, p): None for l in range(L) for p in PARAMS}
        ys = []
        cs = rope_cos_sin(s, idx["head_dim"], idx["rope_base"], b, "cuda", dtype)
        for i in range(m):
            x = arr(f"x_{i}.bf16", "bf16", (b, s, h)).to("cuda", dtype).requires_grad_(False)
            dy = arr(f"dy_{i}.bf16", "bf16", (b, s, h)).to("cuda", dtype)
            stack.zero_grad(set_to_none=True)
            y = run_stack(stack, x, cs)
            torch.autograd.backward(y, dy)
            ys.append(y.detach().float())
            for l, layer in enumerate(stack):
                for p, g in hf_grads(layer).items():
                    acc[(l, p)] = g.float() if acc[(l, p)] is None else acc[(l, p)] + g.float()
        res[tag] = (ys, acc)
    ref_y, ref_g = res["fp32"]
    hf_y, hf_g = res["hf_bf16"]
    rows = []
    for i in range(m):
        ey = arr(f"y_{i}.bf16", "bf16", (b, s, h)).float()
        rows.append({"what": f"output mb {i}", "engine_vs_fp32": rel(ref_y[i], ey),
                     "hf_bf16_vs_fp32": rel(ref_y[i], hf_y[i])})
    for l in range(L):
        for p in PARAMS:
            g = arr(f"g_{l}_{p}.f32", "f32", tuple(ref_g[(l, p)].shape))
            rows.append({"what": f"grad layer {l} {p}", "engine_vs_fp32": rel(ref_g[(l, p)], g),
                         "hf_bf16_vs_fp32": rel(ref_g[(l, p)], hf_g[(l, p)])})
    out["rows"] = rows
    out["worst_engine_vs_fp32"] = max(r["engine_vs_fp32"] for r in rows)
    out["worst_hf_bf16_vs_fp32"] = max(r["hf_bf16_vs_fp32"] for r in rows)
    return out


def saved_bytes(stack, x, cs):
    seen = {}

    def pack(t):
        try:
            st = t.untyped_storage()
            seen[st.data_ptr()] = st.nbytes()
        except Exception:
            pass
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = run_stack(stack, x, cs)
    del y
    params = {p.untyped_storage().data_ptr() for p in stack.parameters()}
    return float(sum(v for k, v in seen.items() if k not in params and k != x.untyped_storage().data_ptr()))


def time_peer(card, layers, seq, b, reps, warmup, checkpoint, backend):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    h, f, a, kv, d = card["hidden"], card["ffn"], card["heads"], card["kv_heads"], card["head_dim"]
    stack, _ = make_stack(h, f, a, kv, d, layers, 1e-5, "cuda", torch.bfloat16)
    with torch.no_grad():
        for p in stack.parameters():
            if p.dim() == 2:
                p.normal_(0, 0.02)
    master = [p.detach().float().clone() for p in stack.parameters()]
    for mp in master:
        mp.grad = torch.zeros_like(mp)
    opt = torch.optim.AdamW(master, lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, fused=True)
    params = list(stack.parameters())
    x = torch.randn(b, seq, h, device="cuda", dtype=torch.bfloat16)
    dy = torch.randn(b, seq, h, device="cuda", dtype=torch.bfloat16)
    cs = rope_cos_sin(seq, d, 10000.0, b, "cuda", torch.bfloat16)
    backends = {"default": None, "cudnn": [SDPBackend.CUDNN_ATTENTION], "flash": [SDPBackend.FLASH_ATTENTION]}[backend]

    def fwd():
        if not checkpoint:
            return run_stack(stack, x, cs)
        pos = torch.arange(seq, device="cuda")[None].expand(b, -1)
        y = x
        for layer in stack:
            def fn(t, layer=layer):
                o = layer(t, attention_mask=None, position_ids=pos, position_embeddings=cs)
                return o[0] if isinstance(o, tuple) else o
            y = torch.utils.checkpoint.checkpoint(fn, y, use_reentrant=False)
        return y

    def step():
        for p in params:
            p.grad = None
        y = fwd()
        torch.autograd.backward(y, dy)
        torch._foreach_copy_([mp.grad for mp in master], [p.grad for p in params])
        opt.step()
        with torch.no_grad():
            torch._foreach_copy_(params, master)

    ctx = sdpa_kernel(backends) if backends else contextlib.nullcontext()
    ts = []
    with ctx:
        sb = saved_bytes(stack, x, cs) if not checkpoint else float("nan")
        for i in range(warmup + reps):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            step()
            e1.record()
            e1.synchronize()
            if i >= warmup:
                ts.append(e0.elapsed_time(e1))
    ts.sort()
    med = ts[len(ts) // 2] if len(ts) % 2 else 0.5 * (ts[len(ts) // 2 - 1] + ts[len(ts) // 2])
    pol = "pytorch" + ("_checkpoint" if checkpoint else "") + ("" if backend == "default" else f"_{backend}_sdpa")
    rec = {"policy": pol, "model": card["name"], "layers": layers, "seq": seq, "micro_batch": b, "micro_batches": 1,
           "step_ms": med, "step_ms_min": ts[0], "step_ms_max": ts[-1], "tokens_per_s": b * seq / (med / 1e3),
           "peak_bytes": float(torch.cuda.max_memory_allocated()), "saved_activation_bytes": sb,
           "sdpa_backend": backend, "recompute": "torch.utils.checkpoint per layer" if checkpoint else "none",
           "optimizer": "fused AdamW on fp32 master copies, bf16 params copied back"}
    del stack, opt, master, params
    torch.cuda.empty_cache()
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--check", nargs="*", default=[])
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--model-json", default="models/llama2-7b.json")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--seqs", type=int, nargs="*", default=[4096, 16384])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--backends", nargs="*", default=["default", "cudnn"])
    ap.add_argument("--commit", default=os.environ.get("AGOQ_COMMIT", "unknown"))
    args = ap.parse_args()
    import transformers
    meta = {"tool": "validation/hf_step.py", "commit": args.commit,
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "host": platform.node(), "source": "measured", "command": sys.argv,
            "gpu": {"name": torch.cuda.get_device_name(0), "torch": torch.__version__,
                    "transformers": transformers.__version__, "cuda": torch.version.cuda,
                    "cudnn": torch.backends.cudnn.version()}}
    records, checks = [], []
    for d in args.check:
        t0 = time.time()
        c = check(d)
        c["seconds"] = time.time() - t0
        checks.append(c)
        print(f"hf_step: check {d}: worst rel L2 engine vs fp32 {c['worst_engine_vs_fp32']:.3e}, "
              f"HF bf16 vs fp32 {c['worst_hf_bf16_vs_fp32']:.3e}", flush=True)
    if args.time:
        card = json.load(open(args.model_json))
        for seq in args.seqs:
            for backend in args.backends:
                for ck in (False, True):
                    try:
                        r = time_peer(card, args.layers, seq, 1, args.reps, args.warmup, ck, backend)
                    except torch.OutOfMemoryError as e:
                        r = {"policy": "pytorch" + ("_checkpoint" if ck else ""), "seq": seq, "fits": False,
                             "error": str(e).splitlines()[0]}
                        torch.cuda.empty_cache()
                    records.append(r)
                    print(f"hf_step: {json.dumps(r)}", flush=True)
    json.dump({"schema": "agoq-results/1", "meta": meta,
               "config": {"layers": args.layers, "seqs": args.seqs, "model": args.model_json, "reps": args.reps,
                          "warmup": args.warmup},
               "checks": checks, "records": records}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
