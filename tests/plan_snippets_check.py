#!/usr/bin/env python3
"""Checks that every snippet `gpuscope plan` prints says the plan's best configuration.

usage: plan_snippets_check.py GPUSCOPE WORKDIR PLAN-ARGS...

Runs `GPUSCOPE plan PLAN-ARGS --json --write-configs WORKDIR/configs`, then parses each written file
(YAML with PyYAML, JSON, the two command lines with shlex) and asserts each setting equals the
configuration in the plan's JSON: precision, degrees, micro-batch, accumulation, sharding stage,
offload, recompute, optimizer. A snippet a framework cannot express must be absent as a file and
say why in the JSON. Exit 0 when all agree, 1 with the differences, 77 (skip) without PyYAML.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

try:
    import yaml
except ImportError:
    print("SKIP: PyYAML is not installed (tools/setup.sh --test installs it)")
    sys.exit(77)


def field(doc, section, item, key):
    return doc["sections"][section]["items"][item]["fields"][key]["value"]


def items(doc, section):
    return doc["sections"].get(section, {}).get("items", {})


def flags(argv):
    """--key value / --flag → dict (a flag's value is True); positional words are ignored."""
    out, i = {}, 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            if "=" in a:
                k, v = a[2:].split("=", 1)
                out[k] = v
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                out[a[2:]] = argv[i + 1]
                i += 1
            else:
                out[a[2:]] = True
        i += 1
    return out


def main():
    gpuscope, workdir, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    configs = os.path.join(workdir, "configs")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    errors = []

    def check(what, got, want):
        if got != want:
            errors.append(f"{what}: snippet says {got!r}, the plan {want!r}")

    try:
        run = subprocess.run([gpuscope, "plan", *args, "--json", "--write-configs", configs],
                             capture_output=True, text=True)
        if run.returncode != 0:
            print(f"plan exited {run.returncode}: {run.stderr}")
            return 1
        doc = json.loads(run.stdout)
        cfg = {k: v["value"] for k, v in items(doc, "best")["configuration"]["fields"].items()}
        gbs = field(doc, "request", "batch", "global_batch")
        layers = field(doc, "request", "model", "layers")
        fw, prec = cfg["framework"], cfg["precision"]
        # Fits by its own terms: Σ counted terms ≤ budget, and the plan says so.
        peak = field(doc, "best", "peak", "peak_bytes")
        budget = field(doc, "best", "peak", "budget_bytes")
        if not (peak <= budget and field(doc, "best", "peak", "fits")):
            errors.append(f"best configuration does not fit: peak {peak} > budget {budget}")
        check("mbs × ga × dp = global batch", cfg["mbs"] * cfg["grad_accum"] * cfg["dp"], gbs)
        check("tp × pp × dp = GPUs", cfg["tp"] * cfg["pp"] * cfg["dp"], field(doc, "request", "gpu", "count"))
        snippets = items(doc, "snippets")
        files = {"megatron_args": "megatron_args.sh", "deepspeed_json": "ds_config.json",
                 "accelerate_yaml": "accelerate.yaml", "trainer_command": "torchrun_trainer.sh"}
        text = {}
        for key, name in files.items():
            path = os.path.join(configs, name)
            if key in snippets:
                if not os.path.exists(path):
                    errors.append(f"{name} not written though the plan prints it")
                    continue
                with open(path) as f:
                    text[key] = f.read()
                check(f"{name} = the printed snippet", text[key].rstrip("\n"), snippets[key]["text"])
            else:
                if os.path.exists(path):
                    errors.append(f"{name} written though the plan says it is not expressed")
                if f"{key}_not_expressed" not in snippets:
                    errors.append(f"{key}: neither a snippet nor why not")
        if not text:
            errors.append("no snippet at all")

        def launch(words):
            f = flags(words[:words.index(next(w for w in words if w.endswith(".py")))])
            check("torchrun processes", int(f["nnodes"]) * int(f["nproc_per_node"]), cfg["tp"] * cfg["pp"] * cfg["dp"])

        if "megatron_args" in text:
            check("framework with Megatron arguments", fw, "megatron")
            words = shlex.split(text["megatron_args"])
            launch(words)
            f = flags(words)
            check("--tensor-model-parallel-size", int(f["tensor-model-parallel-size"]), cfg["tp"])
            check("--pipeline-model-parallel-size", int(f["pipeline-model-parallel-size"]), cfg["pp"])
            vpp = layers // (cfg["pp"] * int(f["num-layers-per-virtual-pipeline-stage"])) \
                if "num-layers-per-virtual-pipeline-stage" in f else 1
            check("virtual pipeline chunks", vpp, cfg["vpp"])
            check("--sequence-parallel", "sequence-parallel" in f, cfg["sp"])
            check("--micro-batch-size", int(f["micro-batch-size"]), cfg["mbs"])
            check("--global-batch-size", int(f["global-batch-size"]), gbs)
            check("--recompute-granularity", f.get("recompute-granularity", "none"), cfg["recompute"])
            check("--use-distributed-optimizer", "use-distributed-optimizer" in f, cfg["zero_stage"] >= 1)
            got_prec = "fp8" if "fp8-format" in f else "bf16" if "bf16" in f else "fp16" if "fp16" in f else "fp32"
            check("precision flags", got_prec, prec)
            check("--grad-reduce-in-bf16", "grad-reduce-in-bf16" in f, cfg["grad_reduce_in_bf16"])
            check("--optimizer", f["optimizer"], "sgd" if cfg["optimizer"] == "sgd" else "adam")
        if "deepspeed_json" in text:
            check("framework with a DeepSpeed config", fw, "deepspeed")
            ds = json.loads(text["deepspeed_json"])
            check("train_batch_size", ds["train_batch_size"], gbs)
            check("train_micro_batch_size_per_gpu", ds["train_micro_batch_size_per_gpu"], cfg["mbs"])
            check("gradient_accumulation_steps", ds["gradient_accumulation_steps"], cfg["grad_accum"])
            check("bf16.enabled", ds["bf16"]["enabled"], prec == "bf16")
            check("fp16.enabled", ds["fp16"]["enabled"], prec == "fp16")
            z = ds["zero_optimization"]
            check("zero_optimization.stage", z["stage"], cfg["zero_stage"])
            check("offload_optimizer", "offload_optimizer" in z, cfg["offload"] != "none")
            check("offload_param", "offload_param" in z, cfg["offload"] == "params")
            want_opt = {"adam": "AdamW", "sgd": "SGD"}.get(cfg["optimizer"])
            check("optimizer.type", ds.get("optimizer", {}).get("type"), want_opt)
        if "accelerate_yaml" in text:
            y = yaml.safe_load(text["accelerate_yaml"])
            want_type = {"megatron": "MEGATRON_LM", "deepspeed": "DEEPSPEED", "fsdp": "FSDP",
                         "ddp": "MULTI_GPU" if cfg["dp"] > 1 else "NO"}[fw]
            check("distributed_type", y["distributed_type"], want_type)
            check("mixed_precision", y["mixed_precision"], "no" if prec == "fp32" else prec)
            check("num_processes", y["num_processes"], cfg["tp"] * cfg["pp"] * cfg["dp"])
            m = re.search(r"per_device_train_batch_size=(\d+), gradient_accumulation_steps=(\d+), "
                          r"gradient_checkpointing=(True|False)", text["accelerate_yaml"])
            if not m:
                errors.append("accelerate.yaml: no training-script line")
            else:
                check("per_device_train_batch_size (script)", int(m[1]), cfg["mbs"])
                check("gradient_accumulation_steps (script)", int(m[2]), cfg["grad_accum"])
                check("gradient_checkpointing (script)", m[3] == "True", cfg["recompute"] == "full")
            if fw == "megatron":
                mc = y["megatron_lm_config"]
                check("megatron_lm_tp_degree", mc["megatron_lm_tp_degree"], cfg["tp"])
                check("megatron_lm_pp_degree", mc["megatron_lm_pp_degree"], cfg["pp"])
                check("megatron_lm_num_micro_batches", mc["megatron_lm_num_micro_batches"], cfg["grad_accum"])
                check("megatron_lm_sequence_parallelism", mc["megatron_lm_sequence_parallelism"], cfg["sp"])
                check("megatron_lm_recompute_activations", mc["megatron_lm_recompute_activations"],
                      cfg["recompute"] == "selective")
                check("megatron_lm_use_distributed_optimizer", mc["megatron_lm_use_distributed_optimizer"],
                      cfg["zero_stage"] >= 1)
            if fw == "deepspeed":
                dc = y["deepspeed_config"]
                check("deepspeed_config.zero_stage", dc["zero_stage"], cfg["zero_stage"])
                check("deepspeed_config.gradient_accumulation_steps", dc["gradient_accumulation_steps"], cfg["grad_accum"])
                check("offload_optimizer_device", dc["offload_optimizer_device"], "none" if cfg["offload"] == "none" else "cpu")
                check("offload_param_device", dc["offload_param_device"], "cpu" if cfg["offload"] == "params" else "none")
            if fw == "fsdp":
                fc = y["fsdp_config"]
                want = "HYBRID_SHARD" if cfg["hybrid"] else {2: "SHARD_GRAD_OP", 3: "FULL_SHARD"}[cfg["zero_stage"]]
                check("fsdp_sharding_strategy", fc["fsdp_sharding_strategy"], want)
                check("fsdp_offload_params", fc["fsdp_offload_params"], cfg["offload"] == "params")
                check("fsdp_activation_checkpointing", fc["fsdp_activation_checkpointing"], cfg["recompute"] == "full")
        if "trainer_command" in text:
            words = shlex.split(text["trainer_command"])
            launch(words)
            f = flags(words)
            check("--per_device_train_batch_size", int(f["per_device_train_batch_size"]), cfg["mbs"])
            check("--gradient_accumulation_steps", int(f["gradient_accumulation_steps"]), cfg["grad_accum"])
            got_prec = "bf16" if "bf16" in f else "fp16" if "fp16" in f else "fp32"
            check("Trainer precision flag", got_prec, prec)
            check("--gradient_checkpointing", "gradient_checkpointing" in f, cfg["recompute"] == "full")
            check("--optim", f["optim"], {"adam": "adamw_torch", "sgd": "sgd", "adam8bit": "adamw_bnb_8bit"}[cfg["optimizer"]])
            check("--deepspeed", "deepspeed" in f, fw == "deepspeed")
            if fw == "fsdp":
                check("--fsdp", f.get("fsdp"), True)
                fc = json.loads(f["fsdp_config"])
                if cfg["hybrid"]:
                    check("--fsdp_config (FSDP1 hybrid)", (fc.get("version"), fc.get("reshard_after_forward")),
                          (1, "hybrid_shard"))
                else:  # FSDP2: reshard after forward = FULL_SHARD, not = SHARD_GRAD_OP
                    check("--fsdp_config (FSDP2)", (fc.get("version"), fc.get("reshard_after_forward")),
                          (2, cfg["zero_stage"] == 3))
                check("--fsdp_config cpu_offload", fc.get("cpu_offload", False), cfg["offload"] == "params")
            else:
                check("--fsdp", "fsdp" in f or "fsdp_config" in f, False)
            if fw == "ddp":
                check("no sharding for DDP", cfg["zero_stage"], 0)
        summary = f"{fw} {cfg['sharding']} tp={cfg['tp']} pp={cfg['pp']} dp={cfg['dp']} " \
                  f"mbs={cfg['mbs']} ga={cfg['grad_accum']} {prec} recompute={cfg['recompute']}; " \
                  f"snippets {sorted(text)}"
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if errors:
        print("\n".join(errors))
        return 1
    print("agree:", summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
