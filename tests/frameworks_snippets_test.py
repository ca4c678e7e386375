#!/usr/bin/env python3
"""The frameworks read the snippets: each file `gpuscope plan --write-configs` writes is loaded by
the framework's own code, on the CPU, and must be accepted and carry the plan's settings.

usage: frameworks_snippets_test.py GPUSCOPE WORKDIR CASE-NAME PLAN-ARGS...

Runs `GPUSCOPE plan PLAN-ARGS --json --write-configs WORKDIR/configs` and reads the plan's best
configuration from the JSON as tests/plan_snippets_check.py does (its helpers are reused). Then,
for every file written:

Shell scripts (megatron_args.sh, torchrun_trainer.sh): the first line is a #! line, the file is
executable and `bash -n` accepts it. The script is then run, as a user would run it, with a stub
`torchrun` first on PATH that records its argv and environment, MASTER_ADDR set, and the run's own
flags after it (they must arrive through "$@"). torch's own torchrun parser
(torch.distributed.run.parse_args + config_from_args) reads that argv: nodes × processes per node
= the plan's GPUs, the c10d endpoint across nodes, and the training script with its arguments.

Megatron-LM (megatron_args.sh). Megatron-LM's arguments.py (parse_args, validate_args,
core_transformer_config_from_args) is not on PyPI, so:
  - megatron-core's own code (megatron.core 0.16): TransformerConfig, which is also its
    ModelParallelConfig, is built from the parsed flags the way core_transformer_config_from_args
    builds it (every flag whose name is a field, then swiglu → gated_linear_unit + silu,
    --group-query-attention → num_query_groups, --num-experts → num_moe_experts, params_dtype and
    pipeline_dtype from --bf16/--fp16), so its __post_init__ validation runs on the plan's values
    (heads and query groups divisible by TP, recompute settings, sequence parallel with TP, fp16 xor
    bf16, MoE settings, ...); OptimizerConfig and DistributedDataParallelConfig are built as
    Megatron-LM's training loop builds them (optimizer, lr, distributed optimizer,
    grad_reduce_in_fp32); and megatron-core's microbatch calculator
    (init_num_microbatches_calculator) checks global batch = micro-batch × DP × micro-batches and
    gives the plan's accumulation. The resulting config objects are compared with the plan.
  - ours, because the code is not installable here: an argparse parser that mirrors the
    arguments.py definitions of exactly the flags the plan writes (names, types, choices, dests,
    defaults as in NVIDIA/Megatron-LM main), so an unknown or misspelt flag fails; and the
    validate_args checks those flags meet: the required --num-layers, --hidden-size,
    --num-attention-heads and --max-position-embeddings, max_position_embeddings ≥ seq_length,
    world size divisible by TP × PP, CUDA_DEVICE_MAX_CONNECTIONS=1 in the launch environment with
    TP > 1, --sequence-parallel with MoE and TP > 1, no recompute method with selective recompute,
    fp16 xor bf16, the virtual-pipeline size derived from
    --num-layers-per-virtual-pipeline-stage, accumulate_allreduce_grads_in_fp32 from --bf16 and
    --grad-reduce-in-bf16. Also ours: the flags say the plan's model (layers, hidden, FFN, heads, and
    --group-query-attention --num-query-groups g for a GQA model, whose absence Megatron-LM would
    silently read as full multi-head attention) and its TP, PP, micro and global batch and precision.
    Transformer Engine cannot be installed on a CPU machine: for fp8 MoE, megatron-core's TE version
    gate is told 2.0.0 (said in an "ok note" line).

DeepSpeed (ds_config.json), with deepspeed.comm initialised on a one-process gloo group (without
its CPU shared-memory allreduce kernel, which it would compile first) and an mpu whose
data-parallel world size is the plan's DP (what the engine passes on the cluster):
  - pp = 1 (the HF Trainer's --deepspeed file): transformers' HfArgumentParser(TrainingArguments)
    parses the Trainer command line (plus --use_cpu on a machine without a GPU, and the run's own
    learning rate, betas, eps, weight decay and clipping); HfTrainerDeepSpeedConfig loads the file
    and trainer_config_process / trainer_config_finalize fill its "auto" values from those
    arguments and stop on a mismatch (world size = the plan's GPUs); no "auto" may remain; then
    deepspeed.runtime.config.DeepSpeedConfig parses the filled config (its batch assertion with
    world size = DP, ZeRO config, precision) and its optimizer params must hold the Trainer's
    learning rate, betas, eps and weight decay, its gradient_clipping the Trainer's max_grad_norm.
  - pp > 1 (DeepSpeed's pipeline engine reads the file itself): DeepSpeedConfig parses the file.
  In both, DeepSpeedConfig's parsed batch sizes, accumulation, ZeRO stage, offload devices,
  bf16/fp16 and optimizer equal the plan's.

HF Trainer (torchrun_trainer.sh): HfArgumentParser(TrainingArguments) accepts the arguments and
its TrainingArguments carry the plan's micro-batch, accumulation, precision, checkpointing,
optimizer and FSDP options (--deepspeed is loaded as above rather than by TrainingArguments,
which would start a process group).

Accelerate (accelerate.yaml): accelerate's load_config_from_file reads it into a ClusterConfig
(unknown keys fail); `accelerate launch`'s own parser and _validate_launch_command merge it, and
prepare_deepspeed_cmd_env / prepare_multi_gpu_env build the launch environment (which asserts
main_process_ip across machines); with that environment the training process's plugin is built
(DeepSpeedPlugin, FullyShardedDataParallelPlugin, MegatronLMPlugin) and its values must be the
plan's, e.g. MegatronLMPlugin's context parallel size 1 (its default when unset is 2).

Prints one "ok"/"FAIL" line per check and "N passed, M failed"; exit 1 on a failure, 77 (skip)
when deepspeed, accelerate, megatron.core, transformers or yaml cannot be imported. WORKDIR is
removed at the end.
"""
import argparse
import contextlib
import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
NEEDED = ("deepspeed", "accelerate", "megatron.core", "transformers", "yaml")

# Quieter frameworks: set before any of them is imported.
os.environ.update({"DS_ACCELERATOR": "cpu", "TRANSFORMERS_VERBOSITY": "error", "HF_HUB_OFFLINE": "1",
                   "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1", "TOKENIZERS_PARALLELISM": "false",
                   "ACCELERATE_DISABLE_RICH": "1", "PYTHONDONTWRITEBYTECODE": "1"})
sys.dont_write_bytecode = True
warnings.simplefilter("ignore")

MASTER_ADDR = "10.1.2.3"  # what the launch environment says; the scripts must pass it through
TRAINER_HYPER = {"learning_rate": 1.234e-4, "weight_decay": 0.0321, "adam_beta1": 0.91, "adam_beta2": 0.97,
                 "adam_epsilon": 1e-7, "max_grad_norm": 0.7}
MEGATRON_OWN = ["--lr", "0.0003", "--min-lr", "0.00003"]  # the run's own flags, through "$@"


class Results:
    def __init__(self):
        self.passed, self.failed, self.pending = 0, 0, []

    def ok(self, what):
        self.passed += 1
        self.pending.append(f"ok   {what}")

    def fail(self, what, detail=""):
        self.failed += 1
        self.pending.append(f"FAIL {what}" + (f": {detail}" if detail else ""))

    def check(self, what, got, want):
        if got == want:
            self.ok(f"{what} = {want!r}")
        else:
            self.fail(what, f"the framework has {got!r}, the plan {want!r}")

    def true(self, what, cond, detail=""):
        (self.ok if cond else lambda w: self.fail(w, detail))(what)

    def flush(self):
        for line in self.pending:
            print(line, flush=True)
        self.pending = []


@contextlib.contextmanager
def quiet(captured):
    """The frameworks' own output (file descriptors 1 and 2) into `captured`, shown on failure."""
    sys.stdout.flush()
    sys.stderr.flush()
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(1), os.dup(2)
        os.dup2(tmp.fileno(), 1)
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            tmp.seek(0)
            captured.append(tmp.read().decode(errors="replace"))


def section(res, name, fn, *args):
    """Runs one framework's checks quietly; an exception is a failure with the output it made."""
    captured = []
    value = None
    try:
        with quiet(captured):
            value = fn(res, *args)
    except Exception as e:  # the framework refused the snippet
        tail = "".join(captured).strip().splitlines()[-15:]
        res.fail(f"{name} accepted", f"{type(e).__name__}: {e}\n" + "".join(traceback.format_exc().splitlines(True)[-6:]) +
                 ("".join(f"    | {l}\n" for l in tail) if tail else ""))
    res.flush()
    return value


# ---- shell scripts: #!, executable, bash -n, and run through "$@" with a stub torchrun ----

STUB = """#!/bin/sh
printf '%s\\0' "$@" > "$FW_TEST_DIR/argv"
printf '%s' "${CUDA_DEVICE_MAX_CONNECTIONS-unset}" > "$FW_TEST_DIR/cuda_device_max_connections"
"""


def run_script(res, path, own_flags, workdir):
    """The script as a user runs it: ./name.sh FLAGS. Returns (torchrun argv, CUDA_DEVICE_MAX_CONNECTIONS)."""
    name = os.path.basename(path)
    with open(path, "rb") as f:
        first = f.readline()
    res.true(f"{name} starts with a #! line", first.startswith(b"#!"), repr(first))
    res.true(f"{name} is executable", os.access(path, os.X_OK), oct(os.stat(path).st_mode))
    n = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
    res.true(f"{name} passes bash -n", n.returncode == 0, n.stderr.strip())
    stub_dir = os.path.join(workdir, "stub")
    os.makedirs(stub_dir, exist_ok=True)
    stub = os.path.join(stub_dir, "torchrun")
    with open(stub, "w") as f:
        f.write(STUB)
    os.chmod(stub, 0o755)
    env = {k: v for k, v in os.environ.items() if k != "CUDA_DEVICE_MAX_CONNECTIONS"}
    env.update(PATH=stub_dir + os.pathsep + env.get("PATH", ""), MASTER_ADDR=MASTER_ADDR, FW_TEST_DIR=stub_dir)
    # As ./name.sh; when that cannot work (failed above), through sh so the later checks still run.
    runnable = first.startswith(b"#!") and os.access(path, os.X_OK)
    r = subprocess.run(([path] if runnable else ["sh", path]) + own_flags, cwd=os.path.dirname(path), env=env,
                       capture_output=True, text=True)
    res.true(f"{'./' + name if runnable else 'sh ' + name} runs (torchrun stubbed)", r.returncode == 0, r.stderr.strip())
    if r.returncode != 0:
        return None, None
    with open(os.path.join(stub_dir, "argv"), "rb") as f:
        argv = [a.decode() for a in f.read().split(b"\0")[:-1]]
    with open(os.path.join(stub_dir, "cuda_device_max_connections")) as f:
        cdmc = f.read()
    res.true(f"{name} passes the run's own flags through \"$@\"", argv[-len(own_flags):] == own_flags,
             f"torchrun got {argv[-len(own_flags) - 2:]}")
    return argv, cdmc


def torchrun_launch(res, name, argv, plan):
    """torch's own torchrun parser on the argv the script ran: the launch shape; the script's args."""
    import torch.distributed.run as tr
    saved = dict(os.environ)
    try:
        config, _cmd, cmd_args = tr.config_from_args(tr.parse_args(argv))
    finally:  # config_from_args sets OMP_NUM_THREADS for the workers
        os.environ.clear()
        os.environ.update(saved)
    res.check(f"{name}: torchrun min_nodes = max_nodes", config.min_nodes, config.max_nodes)
    res.check(f"{name}: torchrun nodes × nproc_per_node = GPUs", config.max_nodes * config.nproc_per_node, plan["gpus"])
    if config.max_nodes > 1:
        res.check(f"{name}: torchrun rendezvous", (config.rdzv_backend, config.rdzv_endpoint), ("c10d", MASTER_ADDR + ":29500"))
    script = next(a for a in cmd_args if a.endswith(".py"))
    return config, script, cmd_args[cmd_args.index(script) + 1:]


# ---- Megatron-LM: our mirror of arguments.py's flags; megatron-core's own config objects ----

def megatron_parser():
    """The arguments.py definitions (NVIDIA/Megatron-LM main) of the flags the plan writes, and of
    the run's own --lr/--min-lr; nothing else, so an unknown flag is an error."""
    p = argparse.ArgumentParser(prog="pretrain_gpt.py", allow_abbrev=False, exit_on_error=False)
    a = p.add_argument
    # _add_network_size_args
    a("--num-layers", type=int, default=None)
    a("--hidden-size", type=int, default=None)
    a("--ffn-hidden-size", type=int, default=None)
    a("--num-attention-heads", type=int, default=None)
    a("--kv-channels", type=int, default=None)
    a("--group-query-attention", action="store_true")
    a("--num-query-groups", type=int, default=1)
    a("--max-position-embeddings", type=int, default=None)
    a("--position-embedding-type", type=str, default="learned_absolute",
      choices=["learned_absolute", "rope", "mrope", "relative", "none"])
    a("--normalization", default="LayerNorm", choices=["LayerNorm", "RMSNorm"])
    a("--swiglu", action="store_true")
    a("--untie-embeddings-and-output-weights", action="store_true")
    # _add_training_args
    a("--micro-batch-size", type=int, default=None)
    a("--global-batch-size", type=int, default=None)
    a("--recompute-granularity", type=str, default=None, choices=["full", "selective"])
    a("--recompute-method", type=str, default=None, choices=["uniform", "block"])
    a("--recompute-num-layers", type=int, default=None)
    a("--disable-bias-linear", action="store_false", dest="add_bias_linear")
    a("--add-qkv-bias", action="store_true", dest="add_qkv_bias")
    a("--optimizer", type=str, default="adam", choices=["adam", "sgd"])
    # _add_learning_rate_args
    a("--lr", type=float, default=None)
    a("--min-lr", type=float, default=0.0)
    # _add_data_args
    a("--seq-length", type=int, default=None)
    # _add_distributed_args
    a("--tensor-model-parallel-size", type=int, default=1)
    a("--pipeline-model-parallel-size", type=int, default=1)
    a("--num-layers-per-virtual-pipeline-stage", type=int, default=None)
    a("--sequence-parallel", action="store_true")
    a("--use-distributed-optimizer", action="store_true")
    # _add_mixed_precision_args
    a("--fp16", action="store_true")
    a("--bf16", action="store_true")
    a("--grad-reduce-in-bf16", action="store_true")
    # _add_transformer_engine_args
    a("--fp8-format", default=None, choices=["e4m3", "hybrid"], dest="fp8")
    # _add_moe_args
    a("--num-experts", type=int, default=None)
    a("--moe-router-topk", type=int, default=2)
    return p


def check_megatron(res, configs, workdir, plan, seen):
    import torch
    import torch.nn.functional as F
    path = os.path.join(configs, "megatron_args.sh")
    argv, cdmc = run_script(res, path, MEGATRON_OWN, workdir)
    if argv is None:
        return
    launch, script, words = torchrun_launch(res, "megatron_args.sh", argv, plan)
    res.check("megatron_args.sh: training script", script, "pretrain_gpt.py")
    cfg, m = plan["cfg"], plan["model"]
    try:
        args, unknown = megatron_parser().parse_known_args(words)
    except argparse.ArgumentError as e:
        res.fail("Megatron-LM flags (mirror of arguments.py) parse", str(e))
        return
    res.check("Megatron-LM flags (mirror of arguments.py) parse; flags it does not know", unknown, [])
    # --- ours: validate_args's checks on these flags ---
    missing = []
    for req in ("num_layers", "hidden_size", "num_attention_heads", "max_position_embeddings"):
        res.true(f"validate_args: --{req.replace('_', '-')} given", getattr(args, req) is not None)
        if getattr(args, req) is None:
            missing.append(req)
    if missing:  # validate_args stops here: "{arg} argument is None"
        return
    world = launch.max_nodes * launch.nproc_per_node
    tp, pp = args.tensor_model_parallel_size, args.pipeline_model_parallel_size
    res.true("validate_args: world size divisible by TP × PP", world % (tp * pp) == 0, f"{world} % {tp * pp}")
    dp = world // (tp * pp)
    if args.max_position_embeddings is not None and args.seq_length is not None:
        res.true("validate_args: max_position_embeddings ≥ seq_length",
                 args.max_position_embeddings >= args.seq_length, f"{args.max_position_embeddings} < {args.seq_length}")
    if tp > 1:
        res.check("validate_args: CUDA_DEVICE_MAX_CONNECTIONS in the launch environment (TP > 1)", cdmc, "1")
    if args.recompute_granularity == "selective":
        res.check("validate_args: no recompute method with selective recompute", args.recompute_method, None)
    res.true("validate_args: not both --fp16 and --bf16", not (args.fp16 and args.bf16))
    if args.num_experts is not None and tp > 1:
        res.true("validate_args: MoE with tensor parallelism has --sequence-parallel", args.sequence_parallel)
    vpp = None
    if args.num_layers_per_virtual_pipeline_stage is not None:
        res.true("validate_args: interleaving needs pp > 1", pp > 1)
        vpp = (args.num_layers // pp) // args.num_layers_per_virtual_pipeline_stage
    params_dtype = torch.half if args.fp16 else torch.bfloat16 if args.bf16 else torch.float
    accumulate_allreduce_grads_in_fp32 = bool(args.bf16 and not args.grad_reduce_in_bf16)
    # --- ours: the flags say the plan's model and layout ---
    res.check("--num-layers", args.num_layers, m["layers"])
    res.check("--hidden-size", args.hidden_size, m["hidden"])
    res.check("--ffn-hidden-size", args.ffn_hidden_size, m["ffn"])
    res.check("--num-attention-heads", args.num_attention_heads, m["heads"])
    res.check("--group-query-attention (GQA model)", args.group_query_attention, m["kv_heads"] != m["heads"])
    if m["kv_heads"] != m["heads"]:
        res.check("--num-query-groups", args.num_query_groups, m["kv_heads"])
    res.check("--swiglu (gated MLP)", args.swiglu, m["gated_mlp"])
    res.check("--untie-embeddings-and-output-weights", args.untie_embeddings_and_output_weights, not m["tied_embeddings"])
    res.check("--num-experts", args.num_experts, m["experts"] or None)
    res.check("--tensor-model-parallel-size", tp, cfg["tp"])
    res.check("--pipeline-model-parallel-size", pp, cfg["pp"])
    res.check("data parallel (world / TP·PP)", dp, cfg["dp"])
    res.check("--micro-batch-size", args.micro_batch_size, cfg["mbs"])
    res.check("--global-batch-size", args.global_batch_size, plan["gbs"])
    res.check("--seq-length", args.seq_length, plan["seq_len"])
    got_prec = "fp8" if args.fp8 else "bf16" if args.bf16 else "fp16" if args.fp16 else "fp32"
    res.check("precision flags", got_prec, cfg["precision"])
    # --- megatron-core's own code ---
    from megatron.core.transformer import TransformerConfig
    from megatron.core.optimizer import OptimizerConfig
    from megatron.core.distributed import DistributedDataParallelConfig
    from megatron.core import num_microbatches_calculator as nmc
    import dataclasses
    kw = {f.name: getattr(args, f.name) for f in dataclasses.fields(TransformerConfig) if hasattr(args, f.name)}
    kw.update(params_dtype=params_dtype, pipeline_dtype=params_dtype, num_moe_experts=args.num_experts,
              virtual_pipeline_model_parallel_size=vpp,
              num_query_groups=args.num_query_groups if args.group_query_attention else None)
    if args.swiglu:
        kw.update(gated_linear_unit=True, activation_func=F.silu)
    if args.kv_channels is None:  # validate_args's default
        kw["kv_channels"] = args.hidden_size // args.num_attention_heads
    if args.fp8 and args.num_experts and importlib.util.find_spec("transformer_engine") is None:
        # megatron-core gates MoE fp8 on transformer-engine ≥ 1.7, which an fp8 run has on its GPUs
        # and this CPU machine cannot install: its version gate sees a TE that passes it.
        import megatron.core.utils as mcu
        from packaging.version import Version
        mcu._te_version = Version("2.0.0")
        res.ok("note: transformer-engine is not installed here; megatron-core's TE version gate is told 2.0.0")
    tc = TransformerConfig(**kw)
    res.ok("megatron-core TransformerConfig (and ModelParallelConfig) __post_init__ accepts the flags")
    res.check("TransformerConfig.num_layers", tc.num_layers, m["layers"])
    res.check("TransformerConfig.hidden_size", tc.hidden_size, m["hidden"])
    res.check("TransformerConfig.ffn_hidden_size", tc.ffn_hidden_size, m["ffn"])
    res.check("TransformerConfig.num_attention_heads", tc.num_attention_heads, m["heads"])
    res.check("TransformerConfig.num_query_groups", tc.num_query_groups, m["kv_heads"])
    res.check("TransformerConfig.kv_channels", tc.kv_channels, m["head_dim"])
    res.check("TransformerConfig.gated_linear_unit", tc.gated_linear_unit, m["gated_mlp"])
    res.check("TransformerConfig.num_moe_experts", tc.num_moe_experts, m["experts"] or None)
    if m["experts"]:
        res.check("TransformerConfig.moe_router_topk", tc.moe_router_topk, m["experts_top_k"])
    res.check("TransformerConfig.normalization", tc.normalization, "RMSNorm" if "RMSNorm" in m["shape"] else "LayerNorm")
    res.check("TransformerConfig.tensor_model_parallel_size", tc.tensor_model_parallel_size, cfg["tp"])
    res.check("TransformerConfig.pipeline_model_parallel_size", tc.pipeline_model_parallel_size, cfg["pp"])
    res.check("TransformerConfig.virtual_pipeline_model_parallel_size", tc.virtual_pipeline_model_parallel_size or 1, cfg["vpp"])
    res.check("TransformerConfig.sequence_parallel", tc.sequence_parallel, cfg["sp"])
    res.check("TransformerConfig.recompute_granularity", tc.recompute_granularity or "none", cfg["recompute"])
    res.check("TransformerConfig bf16/fp16/fp8", "fp8" if tc.fp8 else "bf16" if tc.bf16 else "fp16" if tc.fp16 else "fp32",
              cfg["precision"])
    oc = OptimizerConfig(optimizer=args.optimizer, lr=args.lr, min_lr=args.min_lr, bf16=args.bf16, fp16=args.fp16,
                         params_dtype=params_dtype, use_distributed_optimizer=args.use_distributed_optimizer)
    res.ok("megatron-core OptimizerConfig accepts the flags")
    res.check("OptimizerConfig.optimizer", oc.optimizer, "sgd" if cfg["optimizer"] == "sgd" else "adam")
    res.check("OptimizerConfig.lr (the run's --lr through \"$@\")", oc.lr, 0.0003)
    res.check("OptimizerConfig.use_distributed_optimizer", oc.use_distributed_optimizer, cfg["zero_stage"] >= 1)
    ddp = DistributedDataParallelConfig(grad_reduce_in_fp32=accumulate_allreduce_grads_in_fp32,
                                        use_distributed_optimizer=args.use_distributed_optimizer)
    res.ok("megatron-core DistributedDataParallelConfig accepts the flags")
    reduce = "fp32" if ddp.grad_reduce_in_fp32 or params_dtype == torch.float else got_prec.replace("fp8", "bf16")
    want_reduce = "fp16" if cfg["precision"] == "fp16" else "fp32" if cfg["precision"] == "fp32" else \
        ("bf16" if cfg["grad_reduce_in_bf16"] else "fp32")
    res.check("DistributedDataParallelConfig gradient reduction dtype", reduce, want_reduce)
    nmc.init_num_microbatches_calculator(0, None, args.global_batch_size, args.micro_batch_size, dp, False)
    try:
        res.check("megatron-core microbatch calculator: micro-batches per step", nmc.get_num_microbatches(), cfg["grad_accum"])
    finally:
        nmc.destroy_num_microbatches_calculator()
    seen["rope"] = args.position_embedding_type == "rope"  # for accelerate.yaml


# ---- DeepSpeed and the HF Trainer ----

class Mpu:
    """What DeepSpeedConfig asks an mpu: the data-parallel world size (the plan's DP)."""

    def __init__(self, dp):
        self.dp = dp

    def get_data_parallel_world_size(self):
        return self.dp


class ClusterArgs:
    """TrainingArguments as on the cluster: world_size = the plan's GPUs (here one process)."""

    def __init__(self, targs, world):
        self._targs, self.world_size = targs, world

    def __getattr__(self, name):
        return getattr(self._targs, name)


def trainer_arguments(res, configs, workdir, plan):
    """torchrun_trainer.sh → torchrun's parser → transformers' HfArgumentParser(TrainingArguments)."""
    from transformers import HfArgumentParser, TrainingArguments
    from transformers.training_args import OptimizerNames
    path = os.path.join(configs, "torchrun_trainer.sh")
    own = [x for k, v in TRAINER_HYPER.items() for x in (f"--{k}", str(v))]
    argv, _ = run_script(res, path, own, workdir)
    if argv is None:
        return None
    _, script, words = torchrun_launch(res, "torchrun_trainer.sh", argv, plan)
    res.check("torchrun_trainer.sh: training script", script, "train.py")
    f = words[:]
    ds_path = None
    if "--deepspeed" in f:  # loaded below with world size = the plan's GPUs
        i = f.index("--deepspeed")
        ds_path = f[i + 1]
        del f[i:i + 2]
    extra = ["--output_dir", os.path.join(workdir, "trainer_out"), "--report_to", "none"]
    if "--bf16" in f:
        extra.append("--use_cpu")  # TrainingArguments refuses bf16 without a GPU otherwise
    (targs,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses(args=f + extra)
    res.ok("transformers HfArgumentParser(TrainingArguments) accepts the Trainer arguments")
    cfg = plan["cfg"]
    res.check("TrainingArguments.per_device_train_batch_size", targs.per_device_train_batch_size, cfg["mbs"])
    res.check("TrainingArguments.gradient_accumulation_steps", targs.gradient_accumulation_steps, cfg["grad_accum"])
    res.check("TrainingArguments bf16/fp16", "bf16" if targs.bf16 else "fp16" if targs.fp16 else "fp32", cfg["precision"])
    res.check("TrainingArguments.gradient_checkpointing", targs.gradient_checkpointing, cfg["recompute"] == "full")
    want_optim = {"adam": OptimizerNames.ADAMW_TORCH, "sgd": OptimizerNames.SGD,
                  "adam8bit": OptimizerNames.ADAMW_BNB}[cfg["optimizer"]]
    res.check("TrainingArguments.optim", targs.optim, want_optim)
    res.check("TrainingArguments.learning_rate (the run's, through \"$@\")", targs.learning_rate, TRAINER_HYPER["learning_rate"])
    # What TrainingArguments hands Accelerate's FSDP plugin (its fsdp_plugin_args).
    pa = targs.fsdp_plugin_args or {}
    if plan["fw"] == "fsdp":
        res.check("TrainingArguments.fsdp", bool(targs.fsdp), True)
        if cfg["hybrid"]:
            res.check("FSDP plugin args: version, reshard_after_forward (HYBRID_SHARD)",
                      (pa.get("fsdp_version"), pa.get("reshard_after_forward")), (1, "hybrid_shard"))
        else:  # FSDP2: resharding after forward is FULL_SHARD, keeping the gathered weights SHARD_GRAD_OP
            res.check("FSDP plugin args: version, reshard_after_forward", (pa.get("fsdp_version"), pa.get("reshard_after_forward")),
                      (2, cfg["zero_stage"] == 3))
        res.check("FSDP plugin args: cpu_offload", pa.get("cpu_offload", False), cfg["offload"] == "params")
    else:
        res.check("TrainingArguments.fsdp", bool(targs.fsdp), False)
    res.check("--deepspeed names ds_config.json", ds_path, "ds_config.json" if plan["fw"] == "deepspeed" else None)
    return targs


def init_deepspeed_comm(workdir):
    """deepspeed.comm on a one-process gloo group: DeepSpeedConfig asks it for the rank."""
    import deepspeed
    import deepspeed.comm as dist
    importlib.import_module("deepspeed.comm.torch")
    ds_torch = sys.modules["deepspeed.comm.torch"]  # (the attribute deepspeed.comm.torch is torch)
    # On the CPU accelerator the backend would JIT-compile DeepSpeed's shared-memory allreduce
    # kernel (a minute of C++, cached in ~/.cache/torch_extensions): a collective fast path that a
    # config parse never calls.
    ds_torch.build_shm_op = lambda: None
    if not dist.is_initialized():
        deepspeed.init_distributed(dist_backend="gloo", auto_mpi_discovery=False, verbose=False,
                                   init_method="file://" + os.path.join(workdir, "pg_store"), rank=0, world_size=1)


def check_deepspeed(res, configs, workdir, plan, targs):
    from deepspeed.runtime.config import DeepSpeedConfig
    init_deepspeed_comm(workdir)
    cfg, path = plan["cfg"], os.path.join(configs, "ds_config.json")
    with open(path) as f:
        raw = json.load(f)
    if cfg["pp"] == 1:
        from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig, unset_hf_deepspeed_config
        if targs is None:
            res.fail("ds_config.json: the Trainer command it belongs to was not parsed")
            return
        hf = HfTrainerDeepSpeedConfig(path)
        world_args = ClusterArgs(targs, plan["gpus"])
        hf.trainer_config_process(world_args)
        hf.trainer_config_finalize(world_args, model=None, num_training_steps=1000)
        res.ok("transformers HfTrainerDeepSpeedConfig fills ds_config.json from the Trainer's arguments, no mismatch")
        left = [k for k, v in flatten(hf.config).items() if v == "auto"]
        res.check("no \"auto\" left after the Trainer's fill", left, [])
        ds = DeepSpeedConfig(hf.config, mpu=Mpu(cfg["dp"]))
        unset_hf_deepspeed_config()
        res.ok("deepspeed DeepSpeedConfig parses the Trainer-filled ds_config.json")
        if cfg["optimizer"] in ("adam", "sgd"):
            p = ds.optimizer_params or {}
            res.check("DeepSpeed optimizer lr = the Trainer's --learning_rate", p.get("lr"), TRAINER_HYPER["learning_rate"])
            res.check("DeepSpeed optimizer weight_decay = the Trainer's", p.get("weight_decay"), TRAINER_HYPER["weight_decay"])
            if cfg["optimizer"] == "adam":
                res.check("DeepSpeed optimizer betas = the Trainer's", p.get("betas"),
                          [TRAINER_HYPER["adam_beta1"], TRAINER_HYPER["adam_beta2"]])
                res.check("DeepSpeed optimizer eps = the Trainer's", p.get("eps"), TRAINER_HYPER["adam_epsilon"])
        res.check("DeepSpeed gradient_clipping = the Trainer's --max_grad_norm", ds.gradient_clipping,
                  TRAINER_HYPER["max_grad_norm"])
    else:
        ds = DeepSpeedConfig(path, mpu=Mpu(cfg["dp"]))
        res.ok("deepspeed DeepSpeedConfig parses ds_config.json (pipeline engine, DP from the mpu)")
    res.check("DeepSpeedConfig.train_batch_size", ds.train_batch_size, plan["gbs"])
    res.check("DeepSpeedConfig.train_micro_batch_size_per_gpu", ds.train_micro_batch_size_per_gpu, cfg["mbs"])
    res.check("DeepSpeedConfig.gradient_accumulation_steps", ds.gradient_accumulation_steps, cfg["grad_accum"])
    res.check("DeepSpeedConfig.zero_optimization_stage", ds.zero_optimization_stage, cfg["zero_stage"])
    oo, op = ds.zero_config.offload_optimizer, ds.zero_config.offload_param
    dev = lambda o: "none" if o is None else str(getattr(o.device, "value", o.device))
    res.check("DeepSpeedConfig offload_optimizer device", dev(oo), "none" if cfg["offload"] == "none" else "cpu")
    res.check("DeepSpeedConfig offload_param device", dev(op), "cpu" if cfg["offload"] == "params" else "none")
    res.check("DeepSpeedConfig bf16.enabled", ds.bfloat16_config.enabled, cfg["precision"] == "bf16")
    res.check("DeepSpeedConfig fp16.enabled", ds.float16_config.enabled, cfg["precision"] == "fp16")
    want_opt = {"adam": "adamw", "sgd": "SGD"}.get(cfg["optimizer"])
    res.check("DeepSpeedConfig.optimizer_name", ds.optimizer_name, want_opt)
    if cfg["pp"] == 1 and cfg["optimizer"] in ("adam", "sgd"):
        res.true("the raw ds_config.json leaves the optimizer's lr to the Trainer (\"auto\")",
                 raw.get("optimizer", {}).get("params", {}).get("lr") == "auto", json.dumps(raw.get("optimizer")))


def flatten(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


# ---- Accelerate ----

def check_accelerate(res, configs, workdir, plan, seen):
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.commands.launch import launch_command_parser, _validate_launch_command
    from accelerate.utils import DistributedType
    from accelerate.utils.launch import (prepare_deepspeed_cmd_env, prepare_multi_gpu_env,
                                         prepare_simple_launcher_cmd_env)
    cfg, fw = plan["cfg"], plan["fw"]
    path = os.path.join(configs, "accelerate.yaml")
    cc = load_config_from_file(path)
    res.ok(f"accelerate load_config_from_file reads accelerate.yaml ({type(cc).__name__})")
    want_type = {"megatron": DistributedType.MEGATRON_LM, "deepspeed": DistributedType.DEEPSPEED,
                 "fsdp": DistributedType.FSDP, "ddp": DistributedType.MULTI_GPU if cfg["dp"] > 1 else DistributedType.NO}[fw]
    res.check("ClusterConfig.distributed_type", cc.distributed_type, want_type)
    res.check("ClusterConfig.mixed_precision", cc.mixed_precision, "no" if cfg["precision"] == "fp32" else cfg["precision"])
    res.check("ClusterConfig.num_processes", cc.num_processes, plan["gpus"])
    if "nodes" in seen:
        res.check("ClusterConfig.num_machines = torchrun's nodes", cc.num_machines, seen["nodes"])
    if cc.num_machines > 1:
        res.true("ClusterConfig.main_process_ip set (more than one machine)", bool(cc.main_process_ip))
        res.true("ClusterConfig.main_process_port set (more than one machine)", bool(cc.main_process_port))
    # `accelerate launch --config_file accelerate.yaml train.py`: its parser, its merge, its env.
    args = launch_command_parser().parse_args(["--config_file", path, "train.py"])
    args, defaults, mp_from_config = _validate_launch_command(args)
    if args.use_deepspeed:  # launch_command's choice of launcher
        fields = list(defaults.deepspeed_config.keys()) + (["mixed_precision"] if mp_from_config else [])
        args.deepspeed_fields_from_accelerate_config = ",".join(fields)
        _, env = prepare_deepspeed_cmd_env(args)
        if cc.num_machines > 1:
            res.check("accelerate launches DeepSpeed across nodes with torchrun (launcher)",
                      args.deepspeed_multinode_launcher, "standard")
    elif args.use_fsdp or args.use_megatron_lm or args.multi_gpu:
        env = prepare_multi_gpu_env(args)
    else:
        _, env = prepare_simple_launcher_cmd_env(args)
        args.nproc_per_node = args.num_processes
    res.ok("accelerate launch builds the launch environment from accelerate.yaml")
    if cc.num_machines > 1:
        res.check("accelerate launch: nnodes", str(getattr(args, "nnodes", None)), str(cc.num_machines))
    res.check("accelerate launch: nodes × processes per node = GPUs",
              int(getattr(args, "nnodes", 1) or 1) * int(getattr(args, "nproc_per_node", 0) or 0), plan["gpus"])
    res.check("ACCELERATE_MIXED_PRECISION", env.get("ACCELERATE_MIXED_PRECISION"), "no" if cfg["precision"] == "fp32" else cfg["precision"])
    # The training process: its plugin, built from that environment as Accelerator() builds it.
    saved = dict(os.environ)
    os.environ.update(env)
    try:
        if fw == "deepspeed":
            from accelerate.utils import DeepSpeedPlugin
            plugin = DeepSpeedPlugin()
            res.ok("accelerate DeepSpeedPlugin built from the launch environment")
            res.check("DeepSpeedPlugin.zero_stage", plugin.zero_stage, cfg["zero_stage"])
            res.check("DeepSpeedPlugin.gradient_accumulation_steps", plugin.gradient_accumulation_steps, cfg["grad_accum"])
            res.check("DeepSpeedPlugin.offload_optimizer_device", plugin.offload_optimizer_device,
                      "none" if cfg["offload"] == "none" else "cpu")
            res.check("DeepSpeedPlugin.offload_param_device", plugin.offload_param_device,
                      "cpu" if cfg["offload"] == "params" else "none")
            res.check("DeepSpeedPlugin deepspeed_config zero stage", plugin.deepspeed_config["zero_optimization"]["stage"],
                      cfg["zero_stage"])
        elif fw == "fsdp":
            from accelerate.utils import FullyShardedDataParallelPlugin
            res.check("FSDP_SHARDING_STRATEGY (launch environment)", env.get("FSDP_SHARDING_STRATEGY"),
                      "HYBRID_SHARD" if cfg["hybrid"] else {2: "SHARD_GRAD_OP", 3: "FULL_SHARD"}[cfg["zero_stage"]])
            # Loading the weights through rank 0 (cpu_ram_efficient_loading, sync_module_states) makes
            # the plugin look up the current GPU, which this machine lacks: off here, nothing else.
            os.environ.update(FSDP_SYNC_MODULE_STATES="false", FSDP_CPU_RAM_EFFICIENT_LOADING="false")
            plugin = FullyShardedDataParallelPlugin()
            res.ok("accelerate FullyShardedDataParallelPlugin built from the launch environment")
            want = "HYBRID_SHARD" if cfg["hybrid"] else {2: "SHARD_GRAD_OP", 3: "FULL_SHARD"}[cfg["zero_stage"]]
            res.check("FullyShardedDataParallelPlugin.sharding_strategy", plugin.sharding_strategy.name, want)
            res.check("FullyShardedDataParallelPlugin cpu_offload.offload_params", plugin.cpu_offload.offload_params,
                      cfg["offload"] == "params")
            res.check("FullyShardedDataParallelPlugin.activation_checkpointing", plugin.activation_checkpointing,
                      cfg["recompute"] == "full")
        elif fw == "megatron":
            from accelerate.utils import MegatronLMPlugin
            plugin = MegatronLMPlugin()
            res.ok("accelerate MegatronLMPlugin built from the launch environment")
            res.check("MegatronLMPlugin.tp_degree", plugin.tp_degree, cfg["tp"])
            res.check("MegatronLMPlugin.pp_degree", plugin.pp_degree, cfg["pp"])
            res.check("MegatronLMPlugin.num_micro_batches", plugin.num_micro_batches, cfg["grad_accum"])
            res.check("MegatronLMPlugin.sequence_parallelism", plugin.sequence_parallelism, cfg["sp"])
            res.check("MegatronLMPlugin.recompute_activations", plugin.recompute_activations, cfg["recompute"] == "selective")
            res.check("MegatronLMPlugin.use_distributed_optimizer", plugin.use_distributed_optimizer, cfg["zero_stage"] >= 1)
            res.check("MegatronLMPlugin.context_parallel_size (the plan has none)", plugin.context_parallel_size, 1)
            if "rope" in seen:
                res.check("MegatronLMPlugin.use_rotary_position_embeddings = megatron_args.sh's",
                          plugin.use_rotary_position_embeddings, seen["rope"])
    finally:
        os.environ.clear()
        os.environ.update(saved)


# ---- the plan ----

def main():
    if len(sys.argv) < 4:
        print(__doc__.split("\n\n")[1])
        return 2
    missing = []
    for mod in NEEDED:
        try:
            if importlib.util.find_spec(mod) is None:
                missing.append(mod)
        except ImportError:
            missing.append(mod)
    if missing:
        print(f"SKIP: {', '.join(missing)} cannot be imported (python: {sys.executable})")
        return 77
    sys.path.insert(0, HERE)
    from plan_snippets_check import field, items  # the plan's JSON, read the same way

    gpuscope, workdir, case, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    configs = os.path.join(workdir, "configs")
    tempfile.tempdir = os.path.join(workdir, "tmp")  # torchrun's log folder, captured output
    os.makedirs(tempfile.tempdir)
    res = Results()
    try:
        run = subprocess.run([gpuscope, "plan", *args, "--json", "--write-configs", configs],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(f"FAIL plan exited {run.returncode}: {run.stderr}")
            print("0 passed, 1 failed")
            return 1
        doc = json.loads(run.stdout)
        cfg = {k: v["value"] for k, v in items(doc, "best")["configuration"]["fields"].items()}
        model = {k: v["value"] for k, v in items(doc, "request")["model"]["fields"].items()}
        plan = {"cfg": cfg, "model": model, "fw": cfg["framework"], "gbs": field(doc, "request", "batch", "global_batch"),
                "seq_len": field(doc, "request", "batch", "seq_len"), "gpus": field(doc, "request", "gpu", "count")}
        files = sorted(os.listdir(configs))
        print(f"{case}: {plan['fw']} tp={cfg['tp']} pp={cfg['pp']} dp={cfg['dp']} mbs={cfg['mbs']} "
              f"ga={cfg['grad_accum']} {cfg['sharding']} offload={cfg['offload']} {cfg['precision']} "
              f"{cfg['optimizer']}; files {files}", flush=True)
        seen = {}
        for name in ("megatron_args.sh", "torchrun_trainer.sh"):
            if name in files:
                with open(os.path.join(configs, name)) as f:
                    for w in f.read().split():
                        if w.startswith("--nnodes="):
                            seen["nodes"] = int(w.split("=", 1)[1])
        if "megatron_args.sh" in files:
            section(res, "Megatron-LM / megatron-core", check_megatron, configs, workdir, plan, seen)
        targs = None
        if "torchrun_trainer.sh" in files:
            targs = section(res, "HF Trainer (TrainingArguments)", trainer_arguments, configs, workdir, plan)
        if "ds_config.json" in files:
            section(res, "DeepSpeed (DeepSpeedConfig)", check_deepspeed, configs, workdir, plan, targs)
        if "accelerate.yaml" in files:
            section(res, "Accelerate", check_accelerate, configs, workdir, plan, seen)
        if not files:
            res.fail("no snippet written")
            res.flush()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{res.passed} passed, {res.failed} failed", flush=True)
    return 1 if res.failed else 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # no framework atexit hooks (process groups, thread pools) after the verdict
