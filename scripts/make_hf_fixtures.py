#!/usr/bin/env python3
"""Make the Hugging Face reference fixtures in tests/fixtures/hf/.

    scripts/make_hf_fixtures.py [--only NAME] [--out DIR]

For every synthetic model (written into a temporary directory by
scripts/make_synthetic_models.py) and the shared real models stories260K and babyllama-tok105:

  1. tokenize the model's prompt with the `sentencepiece` package and prepend BOS (id 1);
  2. run transformers' LlamaForCausalLM (weights upcast to float32 whatever their file dtype,
     attn_implementation="eager") and greedily generate 8 tokens (argmax, incremental with the
     KV cache);
  3. run one full forward pass over prompt + generated[:-1] and store its logits:
     NAME.logits.npy, float32 [N + 8 - 1][vocab] (N = prompt length including BOS);
  4. write NAME.json: prompt, ids, generated ids, sizes, weight-file sha256, versions, command
     and the sanity checks below.

Sanity checks (printed, recorded, and fatal when they fail):
  * the full pass over prompt+generated reproduces the prompt-only pass on the prompt rows;
  * the incremental (KV-cache) logits of every decode step match the full pass;
  * model.generate(do_sample=False) produces the same 8 tokens;
  * an independent float64 numpy implementation of the LLaMA forward pass (reading the
    safetensors files itself, RoPE in the rotate_half convention, linear rope scaling as
    position / factor) matches transformers' logits;
  * no generated token is EOS, and each greedy choice wins by a clear margin, so that an
    engine with float32 rounding differences still picks the same token.

Requires torch, transformers, numpy, sentencepiece (not needed by the tests themselves).
"""
import argparse
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import make_synthetic_models as syn  # noqa: E402

N_NEW = 8
# top-1 minus top-2 logit at each greedy step, relative to max |logit| of the row. Logits within
# the tests' tolerance (1e-4 of max |logit| per row) cannot flip a choice with a margin above 2e-4.
MIN_MARGIN = 5e-4

STORY = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her dog."

# name -> (source, prompt). source "synthetic" or a folder under the shared models directory.
# Prompts were picked so that no greedy step is a near tie (see MIN_MARGIN) and, for the
# randomly initialised models, the 8 generated tokens are not all the same.
FIXTURES = {
    "syn-gqa-f32": ("synthetic", "Mom made a cake for Sam. It was sweet and soft, and Sam was very happy to eat it."),
    "syn-mha-f16": ("synthetic", "Lily and Ben were friends. They liked to play with blocks and build big towers in the room."),
    "syn-bf16-sharded": ("synthetic", "One day, a big dog and a small cat went to the river. They saw a fish jump out of the water."),
    "syn-rope-linear": ("synthetic", "The sun was warm and the birds sang. Sue and her mom went for a walk to the shop."),
    "syn-rope-llama3": ("synthetic", "Tom had a red ball. He threw it over the fence and his dog ran after it, barking with joy."),
    "syn-hd64-llama2tok": ("synthetic", "Tom saw a big \u2603 in the snow."),
    "syn-hd128-llama2tok": ("synthetic", "The cat sat on the warm mat."),
    "stories260K": ("stories260K", STORY),
    "babyllama-tok105": ("babyllama-tok105", "Once upon a time, there was a little cat. The cat liked to play in the sun."),
}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ------------------------------------------------------------- independent numpy reference

def read_safetensors(path):
    with open(path, "rb") as f:
        buf = f.read()
    n = int.from_bytes(buf[:8], "little")
    hdr = json.loads(buf[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in hdr.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        raw = buf[base + a:base + b]
        if e["dtype"] == "F32":
            x = np.frombuffer(raw, "<f4").astype(np.float64)
        elif e["dtype"] == "F16":
            x = np.frombuffer(raw, "<f2").astype(np.float64)
        elif e["dtype"] == "BF16":
            x = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        else:
            raise ValueError(e["dtype"])
        out[name] = x.reshape(e["shape"])
    return out


def numpy_forward(model_dir, ids):
    """float64 LLaMA forward pass straight from config.json and the safetensors files."""
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    w = {}
    for f in sorted(glob.glob(os.path.join(model_dir, "*.safetensors"))):
        w.update(read_safetensors(f))
    dim, H = cfg["hidden_size"], cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or dim // H
    eps, theta = cfg["rms_norm_eps"], cfg.get("rope_theta", 10000.0)
    rs = cfg.get("rope_scaling")
    factor = 1.0
    llama3 = None
    if rs:
        kind = rs.get("type") or rs.get("rope_type")
        assert kind in ("linear", "llama3")
        if kind == "linear":
            factor = rs["factor"]
        else:
            llama3 = rs
    T = len(ids)
    pos = np.arange(T, dtype=np.float64) / factor
    inv = 1.0 / theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd)
    if llama3:  # Llama-3.1's frequency scaling (Meta's reference apply_scaling), in float64
        f, lo, hi, old = (llama3["factor"], llama3["low_freq_factor"], llama3["high_freq_factor"],
                          llama3["original_max_position_embeddings"])
        wl = 2 * np.pi / inv
        smooth = (old / wl - lo) / (hi - lo)
        inv = np.where(wl < old / hi, inv, np.where(wl > old / lo, inv / f, (1 - smooth) * inv / f + smooth * inv))
    ang = pos[:, None] * inv[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, axis=1)[:, None, :]
    sin = np.concatenate([np.sin(ang)] * 2, axis=1)[:, None, :]

    def rope(x):  # [T, heads, hd], rotate_half convention (pairs j, j + hd/2)
        rot = np.concatenate([-x[..., hd // 2:], x[..., :hd // 2]], axis=-1)
        return x * cos + rot * sin

    def rms(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g

    x = w["model.embed_tokens.weight"][ids]
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        h = rms(x, w[p + "input_layernorm.weight"])
        q = rope((h @ w[p + "self_attn.q_proj.weight"].T).reshape(T, H, hd))
        k = rope((h @ w[p + "self_attn.k_proj.weight"].T).reshape(T, KV, hd))
        v = (h @ w[p + "self_attn.v_proj.weight"].T).reshape(T, KV, hd)
        o = np.empty((T, H, hd))
        for i in range(H):
            j = i // (H // KV)
            s = q[:, i, :] @ k[:, j, :].T / np.sqrt(hd) + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            o[:, i, :] = (s / s.sum(-1, keepdims=True)) @ v[:, j, :]
        x = x + o.reshape(T, H * hd) @ w[p + "self_attn.o_proj.weight"].T
        h = rms(x, w[p + "post_attention_layernorm.weight"])
        g = h @ w[p + "mlp.gate_proj.weight"].T
        u = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (g / (1.0 + np.exp(-g)) * u) @ w[p + "mlp.down_proj.weight"].T
    x = rms(x, w["model.norm.weight"])
    lm = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    return x @ lm.T


# ---------------------------------------------------------------------------- HF reference

def rel_rows(a, b):
    """per row max|a-b| / max|b|, and the worst row."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    r = np.abs(a - b).max(-1) / np.maximum(np.abs(b).max(-1), 1e-30)
    return float(r.max()), int(r.argmax())


def make_fixture(name, model_dir, source, prompt, out_dir, command, versions):
    import sentencepiece as spm
    import torch
    from transformers import LlamaForCausalLM

    sp = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "tokenizer.model"))
    assert sp.bos_id() == 1, "tokenizer BOS is not 1"
    ids = [1] + sp.encode(prompt)
    N = len(ids)

    try:
        model = LlamaForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager")
    except TypeError:  # transformers < 4.56 spells it torch_dtype
        model = LlamaForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32, attn_implementation="eager")
    model.eval()
    cfg = model.config
    V = cfg.vocab_size
    for p in model.parameters():
        assert p.dtype == torch.float32

    with torch.no_grad():
        # Prompt pass, then greedy decode one token at a time through the KV cache.
        out = model(torch.tensor([ids]), use_cache=True)
        prompt_logits = out.logits[0].float().numpy()
        past = out.past_key_values
        row = prompt_logits[-1]
        gen, inc_rows = [], []
        for step in range(N_NEW):
            t = int(np.argmax(row))
            gen.append(t)
            if step == N_NEW - 1:
                break
            out = model(torch.tensor([[t]]), past_key_values=past, use_cache=True)
            past = out.past_key_values
            row = out.logits[0, -1].float().numpy()
            inc_rows.append(row)

        # The fixture: one full pass over prompt + generated[:-1].
        seq = ids + gen[:-1]
        full = model(torch.tensor([seq]), use_cache=False).logits[0].float().numpy()
        assert full.shape == (N + N_NEW - 1, V)

        # model.generate, greedy, EOS disabled so it always makes N_NEW tokens.
        g = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, N, dtype=torch.long),
                           do_sample=False, max_new_tokens=N_NEW, min_new_tokens=N_NEW,
                           eos_token_id=None, pad_token_id=0, output_logits=True,
                           return_dict_in_generate=True)
        gen_hf = g.sequences[0, N:].tolist()
        gen_logits = torch.stack(g.logits, 1)[0].float().numpy()  # [N_NEW, V], raw logits

    ref64 = numpy_forward(model_dir, seq)

    # Greedy decisions are made at rows N-1 .. N+6 of the full pass.
    dec = full[N - 1:]
    top2 = np.sort(dec, axis=-1)[:, -2:]
    margins = (top2[:, 1] - top2[:, 0]) / np.abs(dec).max(-1)
    sanity = {
        "prompt_rows_full_vs_prompt_only": rel_rows(full[:N], prompt_logits),
        "decode_rows_incremental_vs_full": rel_rows(np.array(inc_rows), full[N:]),
        "generate_logits_vs_full": rel_rows(gen_logits, full[N - 1:]),
        "generate_tokens_equal": gen_hf == gen,
        "full_argmax_equals_generated": [int(i) for i in dec.argmax(-1)] == gen,
        "numpy_float64_vs_hf": rel_rows(full, ref64),
        "numpy_float64_argmax_equals_generated": [int(i) for i in ref64[N - 1:].argmax(-1)] == gen,
        "min_greedy_margin": float(margins.min()),
        "logit_absmax": float(np.abs(full).max()),
        "logit_std": float(full.std()),
    }
    print("  %-22s N=%d rows=%d gen=%s" % (name, N, full.shape[0], gen))
    for k, v in sanity.items():
        print("      %-40s %s" % (k, v))
    problems = []
    if not sanity["generate_tokens_equal"]:
        problems.append("model.generate disagrees with the manual greedy loop (%s)" % gen_hf)
    if not sanity["full_argmax_equals_generated"] or not sanity["numpy_float64_argmax_equals_generated"]:
        problems.append("argmax of the full pass / numpy reference differs from the generated tokens")
    for k in ("prompt_rows_full_vs_prompt_only", "decode_rows_incremental_vs_full",
              "generate_logits_vs_full", "numpy_float64_vs_hf"):
        if sanity[k][0] > 1e-5:
            problems.append("%s: %g" % (k, sanity[k][0]))
    if sanity["min_greedy_margin"] < MIN_MARGIN:
        problems.append("a greedy step is a near tie (margin %g)" % sanity["min_greedy_margin"])
    if cfg.eos_token_id in gen:
        problems.append("EOS generated; an engine would stop early")
    if problems:
        sys.exit("make_hf_fixtures: %s: %s" % (name, "; ".join(problems)))

    weights = sorted(os.path.basename(f) for f in glob.glob(os.path.join(model_dir, "*.safetensors")))
    meta = {
        "name": name,
        "source": ("synthetic: scripts/make_synthetic_models.py OUT_DIR --only %s" % name
                   if source == "synthetic" else "shared: models/%s" % source),
        "model_dir": ("$BUILD/synthetic/%s" % name if source == "synthetic"
                      else "$LLM_SHARED/models/%s" % source),
        "synthetic": source == "synthetic",
        "weights_dtype": sorted({syn.MODELS[name]["dtype"]} if source == "synthetic" else {"F32"}),
        "weights_sha256": {f: sha256(os.path.join(model_dir, f)) for f in weights},
        "prompt": prompt,
        "input_ids": ids,
        "n_prompt": N,
        "n_new": N_NEW,
        "generated_ids": gen,
        "generated_text": sp.decode(gen),
        "n_rows": int(full.shape[0]),
        "vocab": int(V),
        "logits_file": name + ".logits.npy",
        "logits_rows": "full forward pass over input_ids + generated_ids[:-1]; row i = logits after token i",
        "reference": "transformers LlamaForCausalLM, float32 weights and compute, attn_implementation=eager, CPU",
        "hf_rope_parameters": getattr(cfg, "rope_parameters", None) or {
            "rope_theta": getattr(cfg, "rope_theta", None), "rope_scaling": getattr(cfg, "rope_scaling", None)},
        "sanity": sanity,
        "versions": versions,
        "command": command,
    }
    np.save(os.path.join(out_dir, name + ".logits.npy"), np.ascontiguousarray(full, dtype="<f4"))
    text = json.dumps(meta, indent=2, ensure_ascii=False)
    # Lists of numbers on one line: the id lists stay readable.
    text = re.sub(r"\[\s*([-0-9.e, \n]*?)\s*\]",
                  lambda mo: "[" + re.sub(r",\s+", ", ", mo.group(1)) + "]", text)
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        f.write(text + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", action="append", metavar="NAME")
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "fixtures", "hf"))
    a = ap.parse_args()
    names = a.only or list(FIXTURES)
    for n in names:
        if n not in FIXTURES:
            sys.exit("make_hf_fixtures: unknown fixture %r" % n)

    import platform
    import sentencepiece
    import torch
    import transformers
    torch.manual_seed(0)
    versions = {"python": platform.python_version(), "torch": torch.__version__,
                "transformers": transformers.__version__, "numpy": np.__version__,
                "sentencepiece": sentencepiece.__version__, "torch_threads": torch.get_num_threads()}
    command = "python3 scripts/make_hf_fixtures.py" + "".join(" --only " + n for n in (a.only or []))
    print("versions:", versions)
    os.makedirs(a.out, exist_ok=True)

    with tempfile.TemporaryDirectory() as tmp:
        synth = [n for n in names if FIXTURES[n][0] == "synthetic"]
        if synth:
            subprocess.check_call([sys.executable, os.path.join(REPO, "scripts", "make_synthetic_models.py"), tmp]
                                  + sum((["--only", n] for n in synth), []), stdout=subprocess.DEVNULL)
        for n in names:
            source, prompt = FIXTURES[n]
            d = os.path.join(tmp, n) if source == "synthetic" else os.path.join(syn.shared_dir(), "models", source)
            make_fixture(n, d, source, prompt, a.out, command, versions)


if __name__ == "__main__":
    main()
