#!/usr/bin/env python3
"""Counts the memory-bound traffic of Hugging Face's eager modules for formula mode's HF step.

Runs exact mode (python/gpuscope/exact.py) on small configs of each module kind (GPT-2 with
gelu_new, GPT-2-like with a one-kernel GELU, Llama, Qwen2), in bf16 autocast and fp32, with and
without full recompute, at 8 shapes with 2 and 3 layers; a block is the difference of the two.
Solves, per class of memory-bound kernels (elementwise, normalization, reduction), the bytes per
token per element of h, f, kv (and q under GQA), per token, per token and position, per matmul
parameter — and outside the blocks per token per h and V, per embedding/head parameter and per
learned position — by least squares, and prints src/plan/hf_traffic.inc.

  .venv/bin/python tools/fit_hf_traffic.py WORKDIR > src/plan/hf_traffic.inc

~300 runs of a few seconds each (two at a time): about 15 minutes on two cores.
"""
import collections, concurrent.futures as cf, json, os, subprocess, sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXACT = os.path.join(ROOT, "python", "gpuscope", "exact.py")
FAMS = ["gpt2", "gpt2gelu", "llama", "qwen"]
GQA_FAMS = ("llama", "qwen")
REGIMES = [("bf16", "none"), ("fp32", "none"), ("bf16", "full"), ("fp32", "full")]
# (h, f, kv heads, V, batch, seq): h, f, g, V varied apart; b and s to separate per-token,
# per-position and per-parameter terms.
SH = [(512, 1792, 8, 5000, 2, 128), (768, 2048, 12, 6000, 2, 128), (512, 2560, 2, 7000, 2, 128),
      (640, 1536, 10, 5500, 2, 128), (768, 1280, 4, 6500, 2, 128), (512, 1792, 8, 5000, 4, 128),
      (640, 1792, 10, 5000, 2, 384), (640, 1792, 2, 5000, 2, 384)]


def config(fam, h, f, L, kvh, V):
    a = h // 64
    if fam.startswith("gpt2"):
        return {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": h,
                "n_inner": f, "n_head": a, "n_layer": L, "vocab_size": V, "n_positions": 1024,
                "activation_function": "gelu_new" if fam == "gpt2" else "gelu"}
    return {"model_type": "qwen2" if fam == "qwen" else "llama",
            "architectures": ["Qwen2ForCausalLM" if fam == "qwen" else "LlamaForCausalLM"],
            "hidden_size": h, "intermediate_size": f, "num_attention_heads": a,
            "num_key_value_heads": kvh, "num_hidden_layers": L, "vocab_size": V,
            "max_position_embeddings": 2048, "hidden_act": "silu",
            "tie_word_embeddings": fam == "qwen"}


def name(work, fam, prec, rc, h, f, kvh, V, b, S, L):
    return os.path.join(work, f"{fam}_{prec}_{rc}_{h}_{f}_{kvh}_{V}_{b}_{S}_{L}")


def measure_all(work):
    jobs = []
    for fam in FAMS:
        for prec, rc in REGIMES:
            for (h, f, kvh, V, b, S) in SH:
                if fam not in GQA_FAMS:
                    kvh = h // 64
                for L in (2, 3):
                    n = name(work, fam, prec, rc, h, f, kvh, V, b, S, L)
                    if os.path.exists(n + ".json") and os.path.getsize(n + ".json") > 0:
                        continue
                    with open(n + ".config.json", "w") as out:
                        json.dump(config(fam, h, f, L, kvh, V), out)
                    jobs.append((n, prec, rc, b, S))

    def run(job):
        n, prec, rc, b, S = job
        r = subprocess.run([sys.executable, EXACT, "--config", n + ".config.json", "--batch",
                            str(b), "--seq-len", str(S), "--precision", prec, "--recompute", rc],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"{n}: exact.py failed: {r.stdout}{r.stderr}")
        with open(n + ".json", "w") as out:
            out.write(r.stdout)

    with cf.ThreadPoolExecutor(2) as pool:
        list(pool.map(run, jobs))

def load(n):
    d=json.load(open(n+'.json')); t=collections.defaultdict(lambda:[0.0,0])
    for o in d['ops']:
        if o['class'] in ('gemm','attention','attention_backward','foreach'): continue
        t[o['class']][0]+=o['bytes']*o['count']; t[o['class']][1]+=o['count']
    return t
def pl(fam,h,f,kv,V):
    q=h
    if fam.startswith('gpt2'): return 3*h*h+h*h+2*h*f, V*h
    return h*(q+2*kv)+q*h+3*h*f, (V*h if fam=='qwen' else 2*V*h)
def fit(work,fam,prec,rc):
    A=[];Y=collections.defaultdict(list);O=[];OY=collections.defaultdict(list);K=collections.defaultdict(list);OK=collections.defaultdict(list);G=[]
    seen=set()
    for (h,f,kvh,V,b,S) in SH:
        if fam not in GQA_FAMS: kvh=h//64
        if (h,f,kvh,V,b,S) in seen: continue
        seen.add((h,f,kvh,V,b,S))
        t2=load(name(work,fam,prec,rc,h,f,kvh,V,b,S,2)); t3=load(name(work,fam,prec,rc,h,f,kvh,V,b,S,3)); T=b*S; kv=kvh*64; q=h
        Pl,Po=pl(fam,h,f,kv,V); g=1.0 if kv<q else 0.0; G.append(g)
        A.append([T*h,T*f,T*kv,T*q*g,T,T*S,Pl]); O.append([T*h,T*V,T,Po,T*S,(1024*h if fam.startswith('gpt2') else 0)])
        for k in ['memory','normalization','reduction']:
            per=t3[k][0]-t2[k][0]; Y[k].append(per); OY[k].append(t2[k][0]-2*per)
            pc=t3[k][1]-t2[k][1]; K[k].append(pc); OK[k].append(t2[k][1]-2*pc)
    A=np.array(A,float); O=np.array(O,float); res={}
    cols=[0,1,2,3,4,5,6] if fam in GQA_FAMS else [0,1,4,5,6]
    for k in ['memory','normalization','reduction']:
        y=np.array(Y[k]); c=np.zeros(7); c[cols]=np.linalg.lstsq(A[:,cols],y,rcond=None)[0]
        err=max(abs(A@c-y)/np.maximum(1,abs(y)))
        oy=np.array(OY[k]); oc=np.linalg.lstsq(O,oy,rcond=None)[0]; oerr=max(abs(O@oc-oy)/np.maximum(1,abs(oy)))
        kn=[K[k][i] for i in range(len(G)) if not G[i]]; kg=[K[k][i] for i in range(len(G)) if G[i]]
        assert len(set(kn))==1 and len(set(kg))<=1, (fam,prec,rc,k,K[k])
        assert len(set(OK[k]))==1, (fam,prec,rc,k,OK[k])
        res[k]=dict(c=c,err=err,oc=oc,oerr=oerr,kern=kn[0],gk=(kg[0]-kn[0]) if kg else 0,ok=OK[k][0])
        print(f"// {fam} {prec} {rc} {k}: layer err {err:.1e} outside err {oerr:.1e}", file=sys.stderr)
    return res
def r(x):
    v=round(x,3); return "0" if v==0 else f"{v:g}"
def traffic(d):
    c=d['c']  # h f kv gqa token position param
    return "{"+", ".join(r(c[i]) for i in (0,1,2,3,4,5,6))+f", {d['kern']}, {d['gk']}}}"
def diff(a,b):
    return dict(c=a['c']-b['c'],kern=a['kern']-b['kern'],gk=a['gk']-b['gk'])
def outside(d):
    c=d['oc']  # h V token param position positions
    return "{"+", ".join(r(c[i]) for i in (0,1,2,3,4,5))+f", {d['ok']}}}"

def main():
    work=sys.argv[1]
    os.makedirs(work, exist_ok=True)
    measure_all(work)
    names={'gpt2':'kGpt2Tanh','gpt2gelu':'kGpt2Gelu','llama':'kLlama','qwen':'kQwen2'}
    print("// Generated by tools/fit_hf_traffic.py from exact mode's op lists. Per block: {h, f, kv,")
    print("// gqa, token, position, param, kernels, gqa_kernels}; outside: {h, vocab, token, param,")
    print("// position, positions, kernels}. [0] autocast to 16 bits, [1] fp32.")
    print("// clang-format off")
    for fam in ['gpt2','gpt2gelu','llama','qwen']:
        print(f"constexpr ModuleTraffic {names[fam]}[2] = {{")
        for prec in ['bf16','fp32']:
            n=fit(work,fam,prec,'none'); fu=fit(work,fam,prec,'full')
            print("    {{"+", ".join(traffic(n[k]) for k in ['memory','normalization','reduction'])+"},")
            print("     {"+", ".join(traffic(diff(fu[k],n[k])) for k in ['memory','normalization','reduction'])+"},")
            print("     {"+", ".join(outside(n[k]) for k in ['memory','normalization','reduction'])+"},")
            print("     {"+", ".join(outside(fu[k]) for k in ['memory','normalization','reduction'])+"}},")
        print("};")
    print("// clang-format on")


if __name__ == "__main__":
    main()
