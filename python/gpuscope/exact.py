"""Exact mode of `gpuscope plan`: one training step of a Hugging Face model on fake tensors.

No GPU and no weights: PyTorch's FakeTensorMode gives every tensor its shape, dtype and size but no
data, so the step's real code (the model's own modules, autograd, the optimizer) runs and allocates
exactly what it would on the GPU. A dispatch mode under it counts the bytes of every storage alive at
each op (what `torch.cuda.max_memory_allocated()` counts, without the caching allocator's 512 B
rounding) and records every kernel-launching op with its FLOPs and bytes, which the planner prices
on the GPU's roofline (src/plan/exact.cc).

A CPU-only PyTorch cannot make CUDA tensors, even fake ones, so the step runs on fake CPU tensors
and the three places where CPU and CUDA PyTorch differ in what they keep are made to behave as
CUDA's do (each checked against an H200 run, docs/planner.md "Exact mode"):
  * autocast: CUDA's op lists (read from the installed ATen/autocast_mode.h: lower-precision,
    fp32, fp32 with an output dtype, promote) replace CPU's, including its cache of cast weights;
  * dropout: CUDA's fused kernel keeps a 1-byte mask (CPU's composite keeps the scaled noise in
    the input's dtype);
  * scaled_dot_product_attention: CUDA's flash / memory-efficient kernels keep q, k, v, the output
    and the log-sum-exp (CPU falls back to the math path with s² tensors under dropout).
  AdamW / Adam / SGD run with foreach=True, CUDA's default (CPU defaults to the per-tensor loop).

    python exact.py --config config.json --batch 8 --seq-len 1024 --precision bf16 \
        [--recompute none|full] [--optimizer adam|sgd] [--tf32]
prints one JSON document (schema gpuscope.exact/1) on stdout; exit 3 when torch ≥ 2 or
transformers cannot be imported, 2 for a config they cannot build. Standalone on purpose: the
`gpuscope` binary runs this file with any Python that has torch (it does not need the gpuscope
package installed).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import re
import sys
import time
import warnings
import weakref

SCHEMA = "gpuscope.exact/1"

# Run as a script from the package folder, sys.path[0] is that folder, whose torch.py (the gpuscope
# profiler handler) would shadow PyTorch.
if __name__ == "__main__" and sys.path and os.path.isfile(os.path.join(sys.path[0], "torch.py")):
    sys.path.pop(0)

# Ops that launch no kernel: views, metadata, allocation without a fill.
_NO_KERNEL = {
    "view", "_unsafe_view", "t", "transpose", "permute", "expand", "detach", "alias", "slice",
    "select", "split", "split_with_sizes", "unsqueeze", "squeeze", "as_strided", "_reshape_alias",
    "unbind", "reshape", "lift_fresh", "lift", "empty", "empty_like", "new_empty",
    "new_empty_strided", "empty_strided", "_local_scalar_dense", "is_same_size", "sym_size",
    "sym_stride", "sym_numel", "sym_storage_offset", "set_", "resize_", "chunk", "narrow",
    "diagonal", "unfold", "_has_compatible_shallow_copy_type", "device", "size", "stride",
    "dim", "is_contiguous", "numel", "_to_copy_noop", "_unsafe_index_put", "is_nonzero",
    "_conj", "_neg_view", "view_as_real", "view_as_complex", "_foreach_add_noop",
}
_GEMM = {"mm", "addmm", "bmm", "baddbmm", "_addmm_activation", "convolution",
         "convolution_backward", "_convolution", "cudnn_convolution", "_scaled_mm"}


class ExactError(Exception):
    """The step could not be measured: `code` 3 = torch/transformers missing, 2 = bad input."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def _fail(code: int, message: str) -> "NoReturn":  # noqa: F821
    raise ExactError(code, message)


def _import_torch():
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except Exception as e:  # pragma: no cover - depends on the environment
        _fail(3, f"exact mode needs torch >= 2 and transformers: {type(e).__name__}: {e}")
    import torch
    if int(torch.__version__.split(".")[0]) < 2:
        _fail(3, f"exact mode needs torch >= 2 (found {torch.__version__})")
    return torch


# ---- CUDA autocast on fake CPU tensors -----------------------------------------------------------

def _cuda_autocast_policy(torch) -> dict:
    """(op, overload) → "lower" | "fp32" | "fp32_opt" | "promote", from ATen/autocast_mode.h."""
    header = os.path.join(os.path.dirname(torch.__file__), "include", "ATen", "autocast_mode.h")
    with open(header) as f:
        text = f.read()
    policy = {}
    for kind, macro in (("lower", "AT_FORALL_LOWER_PRECISION_FP"), ("fp32", "AT_FORALL_FP32"),
                        ("fp32_opt", "AT_FORALL_FP32_SET_OPT_DTYPE"),
                        ("promote", "AT_FORALL_PROMOTE")):
        start = text.index("#define " + macro + "(_)")
        body = text[start:text.index("\n\n", start)]
        for m in re.finditer(r"_\((\w+)(?:,\s*(\w+))?\)", body):
            policy[(m.group(1), m.group(2) or "")] = kind
    return policy


class _Autocast:
    """Registers CUDA's autocast policy as the AutocastCPU kernels (once per process)."""
    installed = None  # the Library object keeps the registrations alive
    cache = {}        # id(leaf weight) → (weight, its cast): autocast's weight cache
    cast_storages = set()  # their storages (scale with the parameters, not with the tokens)

    @classmethod
    def install(cls, torch, dtype):
        cls.dtype = dtype
        if cls.installed is not None:
            return
        policy = _cuda_autocast_policy(torch)
        names = set(n for n in torch._C._dispatch_get_all_op_names()
                    if torch._C._dispatch_has_kernel_for_dispatch_key(n, "AutocastCPU"))
        for (op, overload) in policy:
            names.add("aten::" + op + ("." + overload if overload else ""))
        lib = torch.library.Library("aten", "IMPL")
        key_set = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)

        def cast(x, dt):
            if isinstance(x, torch.Tensor):
                if not x.is_floating_point() or x.dtype in (dt, torch.float64):
                    return x
                if x.is_leaf and x.requires_grad and dt != torch.float32:
                    hit = cls.cache.get(id(x))
                    if hit is None or hit[0] is not x:
                        hit = cls.cache[id(x)] = (x, x.to(dt))
                        cls.cast_storages.add(hit[1].untyped_storage()._cdata)
                    return hit[1]
                return x.to(dt)
            if isinstance(x, (list, tuple)):
                return type(x)(cast(y, dt) for y in x)
            return x

        def kernel(op, kind):
            def run(*args, **kwargs):
                with torch._C._ExcludeDispatchKeyGuard(key_set):
                    dt = None
                    if kind == "lower":
                        dt = cls.dtype
                    elif kind == "fp32":
                        dt = torch.float32
                    elif kind == "fp32_opt":
                        return op(*cast(args, torch.float32), **kwargs)
                    elif kind == "promote":
                        floats = [a for a in list(args) + list(kwargs.values())
                                  if isinstance(a, torch.Tensor) and a.is_floating_point()]
                        if floats:
                            dt = (torch.float32 if any(a.dtype == torch.float32 for a in floats)
                                  else floats[0].dtype)
                    if dt is not None:
                        args = cast(args, dt)
                        kwargs = {k: cast(v, dt) for k, v in kwargs.items()}
                    return op(*args, **kwargs)
            return run

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for full in sorted(names):
                base = full[len("aten::"):]
                op_name, _, overload = base.partition(".")
                kind = policy.get((op_name, overload))
                try:
                    op = getattr(getattr(torch.ops.aten, op_name), overload or "default")
                except AttributeError:
                    continue
                # An op CPU lists and CUDA does not: CUDA runs it in its inputs' dtypes.
                lib.impl(base, kernel(op, kind), "AutocastCPU")
        cls.installed = lib


# ---- CUDA's dropout and attention ----------------------------------------------------------------

def _patched(torch):
    F = torch.nn.functional

    def dropout(input, p=0.5, training=True, inplace=False):
        if not training or p == 0.0:
            return input
        return torch.ops.aten.native_dropout(input, p, True)[0]

    def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
             enable_gqa=False):
        if torch.is_autocast_enabled("cpu"):
            dt = torch.get_autocast_dtype("cpu")
            q, k, v = q.to(dt), k.to(dt), v.to(dt)
        if attn_mask is not None and attn_mask.dtype == torch.bool:
            attn_mask = torch.zeros(attn_mask.shape, dtype=q.dtype, device=q.device).masked_fill(
                ~attn_mask, float("-inf"))
        if enable_gqa and k.shape[-3] != q.shape[-3]:
            # CUDA's flash kernel reads grouped K/V in place: keep k and v as they are (the CPU
            # kernel needs them repeated, only inside forward and backward).
            return _GroupedFlash.apply(q, k, v, attn_mask, is_causal, scale)
        # CUDA's flash / memory-efficient kernels keep what this CPU flash kernel keeps (q, k, v,
        # output, log-sum-exp) and draw dropout inside the kernel (no mask kept): dropout_p 0.
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q, k, v, 0.0, is_causal, attn_mask=attn_mask, scale=scale)[0]

    flash = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    flash_backward = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward

    class _GroupedFlash(torch.autograd.Function):
        @staticmethod
        def forward(ctx, q, k, v, mask, causal, scale):
            r = q.shape[-3] // k.shape[-3]
            out, lse = flash(q, k.repeat_interleave(r, -3), v.repeat_interleave(r, -3), 0.0,
                             causal, attn_mask=mask, scale=scale)
            ctx.save_for_backward(q, k, v, out, lse)
            ctx.mask, ctx.causal, ctx.scale = mask, causal, scale
            return out

        @staticmethod
        def backward(ctx, grad):
            q, k, v, out, lse = ctx.saved_tensors
            r = q.shape[-3] // k.shape[-3]
            dq, dk, dv = flash_backward(grad.contiguous(), q, k.repeat_interleave(r, -3),
                                        v.repeat_interleave(r, -3), out, lse, 0.0, ctx.causal,
                                        attn_mask=ctx.mask, scale=ctx.scale)
            fold = (k.shape[-3], r)
            return (dq, dk.unflatten(-3, fold).sum(-3), dv.unflatten(-3, fold).sum(-3), None,
                    None, None)

    @contextlib.contextmanager
    def ctx():
        saved = (F.dropout, F.scaled_dot_product_attention)
        F.dropout, F.scaled_dot_product_attention = dropout, sdpa
        try:
            yield
        finally:
            F.dropout, F.scaled_dot_product_attention = saved
    return ctx()


# ---- the tracker ---------------------------------------------------------------------------------

def _tracker(torch):
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    import torch.utils.flop_counter as flop_counter

    class Tracker(TorchDispatchMode):
        """Live storage bytes at every op, the peak, and the kernel-launching ops."""

        def __init__(self, tf32: bool):
            super().__init__()
            self.live = {}      # storage key → bytes
            self.current = 0
            self.peak = 0
            self.peak_live = {}  # serial → bytes of the storages alive at the peak
            self.serial = 0
            self.snapshot_at = 0
            self.ops = collections.Counter()
            self.tf32 = tf32
            self.kernels = 0

        def add(self, t):
            st = t.untyped_storage()
            key = st._cdata
            if key in self.live:
                return
            n = st.nbytes()
            self.serial += 1  # an address is reused after a free: the serial tells them apart
            self.live[key] = (self.serial, n)
            self.current += n
            weakref.finalize(st, self._free, key)
            if self.current > self.peak:
                self.peak = self.current
                # Which storages made the peak, re-taken when it has grown by 0.1 % (a copy at
                # every new peak would be quadratic).
                if self.current > self.snapshot_at * 1.001:
                    self.peak_live = dict(self.live.values())
                    self.snapshot_at = self.current

        def serials(self, tensors):
            return {self.live[t.untyped_storage()._cdata][0] for t in tensors
                    if t.untyped_storage()._cdata in self.live}

        def _free(self, key):
            entry = self.live.pop(key, None)
            if entry is not None:
                self.current -= entry[1]

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            flat_out = [a for a in tree_flatten(out)[0] if isinstance(a, torch.Tensor)]
            for t in flat_out:
                self.add(t)
            name = func.overloadpacket.__name__
            if name in _NO_KERNEL or func.is_view or name.startswith("sym_"):
                return out
            flat_in = [a for a in tree_flatten((args, kwargs))[0] if isinstance(a, torch.Tensor)]
            nbytes = sum(t.numel() * t.element_size() for t in flat_in + flat_out)
            if nbytes == 0:
                return out
            self.record(func, name, args, kwargs, out, flat_in, nbytes)
            return out

        def record(self, func, name, args, kwargs, out, flat_in, nbytes):
            floats = [t.dtype for t in flat_in if t.is_floating_point()]
            dtype = floats[0] if floats else None
            flops, klass, m, n, k = 0.0, "memory", 0, 0, 0
            if name.startswith("_scaled_dot_product_flash_attention_for_cpu"):
                schema = [a.name for a in func._schema.arguments]
                q = args[schema.index("query")]
                i = schema.index("is_causal")
                causal = kwargs.get("is_causal", args[i] if i < len(args) else False)
                b, h, sq, d = q.shape
                sk = args[schema.index("key")].shape[-2]
                # 2·B·H·Sq·Sk·(D + Dv) forward, causal half; backward 2.5× (docs/cost-model.md).
                flops = 2.0 * b * h * sq * sk * (2 * d) * (0.5 if causal else 1.0)
                if "backward" in name:
                    flops *= 2.5
                klass = "attention_backward" if "backward" in name else "attention"
            elif func.overloadpacket in flop_counter.flop_registry and name in _GEMM:
                try:
                    flops = float(flop_counter.flop_registry[func.overloadpacket](
                        *args, **kwargs, out_val=out))
                except Exception:
                    flops = 0.0
                klass = "gemm"
                mats = [t for t in flat_in if t.dim() >= 2]
                if name in ("mm", "addmm", "_addmm_activation") and len(mats) >= 2:
                    a, bm = mats[-2], mats[-1]
                    m, k, n = a.shape[-2], a.shape[-1], bm.shape[-1]
                elif name in ("bmm", "baddbmm") and len(mats) >= 2:
                    a, bm = mats[-2], mats[-1]
                    m, k, n = a.shape[-2], a.shape[-1], bm.shape[-1]
            elif name.startswith("_foreach"):
                klass = "foreach"
            elif name in ("native_layer_norm", "native_layer_norm_backward", "_fused_rms_norm",
                          "_fused_rms_norm_backward", "_softmax", "_log_softmax",
                          "_softmax_backward_data", "_log_softmax_backward_data",
                          "nll_loss_forward", "nll_loss_backward"):
                klass = "normalization"
            elif name in ("sum", "mean", "amax", "max", "min", "var_mean", "norm",
                          "linalg_vector_norm"):
                klass = "reduction"
            path = _path(torch, dtype, klass, self.tf32)
            self.ops[(name, klass, path, flops, nbytes, m, n, k)] += 1

    return Tracker


def _path(torch, dtype, klass, tf32):
    """The math path a CUDA kernel of this dtype runs on (hw::MathPath names)."""
    if klass not in ("gemm", "attention", "attention_backward"):
        return ""
    if dtype == torch.bfloat16:
        return "bf16"
    if dtype == torch.float16:
        return "fp16"
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        return "fp8"
    if klass != "gemm":
        # fp32 memory-efficient attention: 3×TF32 MMAs (CUTLASS OpMultiplyAddFastF32).
        return "3xtf32"
    return "tf32" if tf32 else "fp32_cuda"


# ---- the step ------------------------------------------------------------------------------------

def _layers(model, count):
    """The ModuleList of the transformer blocks: the first one with `count` entries."""
    import torch
    best = None
    for module in model.modules():
        if isinstance(module, torch.nn.ModuleList) and len(module) == count:
            if best is None:
                best = module
    return best


def measure(config_path: str, batch: int, seq_len: int, precision: str = "bf16",
            recompute: str = "none", optimizer: str = "adam", tf32: bool = False) -> dict:
    torch = _import_torch()
    import transformers
    from torch._subclasses.fake_tensor import FakeTensorMode

    started = time.monotonic()
    try:
        config = transformers.AutoConfig.from_pretrained(config_path)
    except Exception as e:
        _fail(2, f"{config_path}: transformers cannot read this config: {type(e).__name__}: {e}")
    if precision not in ("fp32", "tf32", "bf16", "fp16"):
        _fail(2, f"exact mode measures fp32, tf32, bf16 and fp16 (not {precision})")
    if precision == "tf32":
        tf32 = True
    half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    if half is not None:
        _Autocast.install(torch, half)
    layers = int(getattr(config, "num_hidden_layers", 0) or getattr(config, "n_layer", 0) or 0)

    with warnings.catch_warnings(), _patched(torch), FakeTensorMode(allow_non_fake_inputs=False):
        warnings.simplefilter("ignore")
        try:
            model = transformers.AutoModelForCausalLM.from_config(config)
        except Exception as e:
            _fail(2, f"{config_path}: transformers cannot build a causal LM from it: "
                     f"{type(e).__name__}: {e}")
        model.train()
        if recompute == "full":
            model.gradient_checkpointing_enable()
        params = [p for p in model.parameters() if p.requires_grad]
        if optimizer == "sgd":
            opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=True)
        else:
            opt = torch.optim.AdamW(params, lr=1e-4, foreach=True)
        # One step on zero gradients makes the optimizer's state before the measured step (as
        # every step after the first has it).
        for p in params:
            p.grad = torch.zeros_like(p)
        opt.step()
        opt.zero_grad(set_to_none=True)
        ids = torch.randint(0, int(config.vocab_size), (batch, seq_len))

        tracker = _tracker(torch)(tf32)
        cast_keys = set()
        param_storages = {p.untyped_storage()._cdata for p in model.parameters()}
        saved = collections.defaultdict(dict)   # layer index → storage key → bytes
        blocks = _layers(model, layers)
        where = {"layer": None}
        hooks = []
        if blocks is not None:
            for i, block in enumerate(blocks):
                hooks.append(block.register_forward_pre_hook(
                    lambda mod, inp, i=i: where.__setitem__("layer", i)))
                hooks.append(block.register_forward_hook(
                    lambda mod, inp, out: where.__setitem__("layer", None)))

        def pack(t):
            if where["layer"] is not None and isinstance(t, torch.Tensor):
                st = t.untyped_storage()
                if st._cdata not in param_storages and st._cdata not in _Autocast.cast_storages:
                    saved[where["layer"]][st._cdata] = st.nbytes()
            return t

        with tracker:
            for t in list(model.parameters()) + list(model.buffers()) + [
                    t for s in opt.state.values() for t in s.values()
                    if isinstance(t, torch.Tensor)]:
                tracker.add(t)
            tracker.peak = tracker.current
            tracker.peak_live = dict(tracker.live.values())
            param_keys = tracker.serials(list(model.parameters()))
            buffer_keys = tracker.serials(list(model.buffers()))
            state_keys = tracker.serials([t for s in opt.state.values() for t in s.values()
                                          if isinstance(t, torch.Tensor)])
            with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
                with torch.autocast("cpu", dtype=half or torch.bfloat16,
                                    enabled=half is not None):
                    out = model(input_ids=ids, labels=ids)
                cast_keys = tracker.serials([cast for _, cast in _Autocast.cache.values()])
                _Autocast.cache.clear()
                _Autocast.cast_storages.clear()
                loss = out.loss
                del out
            after_forward = tracker.current
            loss.backward()
            del loss
            grad_keys = tracker.serials([p.grad for p in params if p.grad is not None])
            opt.step()
            opt.zero_grad(set_to_none=True)
        for h in hooks:
            h.remove()

    def at_peak(keys):
        return sum(tracker.peak_live.get(k, 0) for k in keys)

    at = {"parameters": at_peak(param_keys) + at_peak(buffer_keys),
          "optimizer_states": at_peak(state_keys), "gradients": at_peak(grad_keys)}
    # autocast's 16-bit weight copies scale with the parameters, not with the tokens.
    at["autocast_weight_cache"] = at_peak(cast_keys)
    at["activations_and_temporaries"] = sum(tracker.peak_live.values()) - sum(at.values())
    per_layer = [sum(v.values()) for _, v in sorted(saved.items())]
    ops = [{"op": name, "class": klass, "path": path, "flops": flops, "bytes": nbytes,
            "m": m, "n": n, "k": k, "count": count}
           for (name, klass, path, flops, nbytes, m, n, k), count in sorted(
               tracker.ops.items(), key=lambda kv: -kv[0][4] * kv[1])]
    params_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    state_bytes = sum(t.numel() * t.element_size() for s in opt.state.values()
                      for t in s.values() if isinstance(t, torch.Tensor))
    return {
        "schema": SCHEMA,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "model_type": getattr(config, "model_type", ""),
        "attn_implementation": getattr(config, "_attn_implementation", None) or "sdpa",
        "batch": batch, "seq_len": seq_len, "precision": precision, "tf32": tf32,
        "recompute": recompute, "optimizer": "sgd" if optimizer == "sgd" else "adamw",
        "layers": layers,
        "parameters": sum(p.numel() for p in model.parameters()),
        "peak_allocated_bytes": tracker.peak,
        "parameter_bytes": params_bytes,
        "optimizer_state_bytes": state_bytes,
        "gradient_bytes": sum(p.numel() * p.element_size() for p in params),
        "after_forward_bytes": after_forward,
        "saved_per_layer_bytes": per_layer,
        "at_peak": at,
        "kernels": sum(o["count"] for o in ops),
        "ops": ops,
        "seconds": round(time.monotonic() - started, 3),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--seq-len", type=int, required=True)
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--recompute", default="none", choices=("none", "full"))
    parser.add_argument("--optimizer", default="adam", choices=("adam", "sgd"))
    parser.add_argument("--tf32", action="store_true")
    a = parser.parse_args(argv)
    try:
        if a.batch < 1 or a.seq_len < 1:
            _fail(2, "--batch and --seq-len must be at least 1")
        result = measure(a.config, a.batch, a.seq_len, a.precision, a.recompute, a.optimizer,
                         a.tf32)
    except ExactError as e:
        print(json.dumps({"schema": SCHEMA, "error": str(e)}))
        return e.code
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
