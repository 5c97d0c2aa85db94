#!/usr/bin/env bash
# scripts/convert_llama2c.py, tested offline: the shared Hugging Face folders are exported to
# llama2.c's legacy .bin by the inverse converter below (undoing the q/k row permutation), then
# converted back; every tensor must equal the original bit for bit, and llm-run must print the
# same text on the converted folder as on the shared one. A small numpy implementation of
# llama2.c's forward pass (interleaved-pair RoPE, run.c's order of operations) on the exported
# .bin must pick the same greedy tokens as llm-run, which ties the .bin layout to llama2.c's
# convention rather than only to the converter's own inverse.
#
# Needs python3 with numpy (the converter itself also runs without numpy; both paths are tested).
# Prints one line per check, then "N passed, M failed"; exits non-zero when a check failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

SHARED="${LLM_SHARED:-../shared}"
BIN="${LLM_RUN:-./llm-run}"
# one thread: the models are tiny, and OpenMP threads on a busy machine only slow them down
THREADS="${LLM_TEST_THREADS:-1}"
CONVERT=scripts/convert_llama2c.py

pass=0
fail=0
ok() { pass=$((pass + 1)); echo "ok   $*"; }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }

if ! python3 -c 'import numpy' 2>/dev/null; then
    echo "SKIP: python3 numpy not installed (scripts/setup.sh installs it)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
if [ ! -f "$SHARED/models/stories260K/model.safetensors" ]; then
    echo "SKIP: $SHARED/models/stories260K not found (set LLM_SHARED)"
    echo "0 passed, 0 failed, 1 skipped"
    exit 0
fi
if [ ! -x "$BIN" ]; then
    echo "test_convert: $BIN not built (run: make llm-run)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

TMP="$(mktemp -d "${TMPDIR:-/tmp}/llm-convert.XXXXXX")" || exit 1
trap 'rm -rf "$TMP"' EXIT

# ---------------------------------------------------------------------------------------------
# Test helpers (python3 + numpy):
#   export HF_DIR OUT.bin [--wcls same|rolled]   HF folder -> llama2.c legacy .bin (inverse of
#                                                the converter; --wcls writes an unshared
#                                                classifier: a copy of the embedding, or the
#                                                embedding with its rows rolled by one)
#   compare A_DIR B_DIR                          every tensor: same names, dtype, shape, bytes
#   greedy FILE.bin N                            llama2.c's forward pass on the .bin; prints the
#                                                N greedy tokens after BOS (space separated)
#   wcls FILE.bin OUT.raw                        writes the .bin's classifier bytes
#   lm_head HF_DIR OUT.raw                       writes lm_head.weight's bytes
HELPER='
import json, math, struct, sys
import numpy as np

def read_st(d):
    blob = open(d + "/model.safetensors", "rb").read()
    n = struct.unpack("<Q", blob[:8])[0]
    h = json.loads(blob[8:8 + n])
    base = 8 + n
    out = {}
    for k, v in h.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        out[k] = (v["dtype"], tuple(v["shape"]), blob[base + b:base + e])
    return out

def f32(t):
    dt, shape, data = t
    assert dt == "F32", dt
    return np.frombuffer(data, dtype="<f4").reshape(shape)

def unpermute(w, n_heads):
    # inverse of HF permute: w.view(n_heads, 2, dim1 // n_heads // 2, dim2).transpose(1, 2)
    dim1, dim2 = w.shape
    return w.reshape(n_heads, 2, dim1 // n_heads // 2, dim2).transpose(0, 2, 1, 3).reshape(dim1, dim2)

def export(d, out, wcls=None):
    c = json.load(open(d + "/config.json"))
    t = read_st(d)
    dim, hidden, L = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    nh, nkv, vocab, seq = c["num_attention_heads"], c["num_key_value_heads"], c["vocab_size"], c["max_position_embeddings"]
    hs = dim // nh
    emb = f32(t["model.embed_tokens.weight"])
    shared = "lm_head.weight" not in t and wcls is None
    lay = lambda l, s: f32(t[f"model.layers.{l}.{s}.weight"])
    parts = [struct.pack("<7i", dim, hidden, L, nh, nkv, vocab if shared else -vocab, seq), emb]
    parts += [lay(l, "input_layernorm") for l in range(L)]
    parts += [unpermute(lay(l, "self_attn.q_proj"), nh) for l in range(L)]
    parts += [unpermute(lay(l, "self_attn.k_proj"), nkv) for l in range(L)]
    parts += [lay(l, "self_attn.v_proj") for l in range(L)]
    parts += [lay(l, "self_attn.o_proj") for l in range(L)]
    parts += [lay(l, "post_attention_layernorm") for l in range(L)]
    parts += [lay(l, "mlp.gate_proj") for l in range(L)]
    parts += [lay(l, "mlp.down_proj") for l in range(L)]
    parts += [lay(l, "mlp.up_proj") for l in range(L)]
    parts.append(f32(t["model.norm.weight"]))
    # llama2.c model.py precompute_freqs_cis (float32)
    theta = float(c.get("rope_theta", 10000.0))
    freqs = (1.0 / (theta ** (np.arange(0, hs, 2)[: hs // 2].astype(np.float32) / hs))).astype(np.float32)
    ang = np.outer(np.arange(seq, dtype=np.float32), freqs).astype(np.float32)
    parts += [np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)]
    if not shared:
        if wcls is None:
            parts.append(f32(t["lm_head.weight"]))
        elif wcls == "same":
            parts.append(emb)
        else:
            parts.append(np.roll(emb, 1, axis=0))
    with open(out, "wb") as f:
        for p in parts:
            f.write(p if isinstance(p, bytes) else np.ascontiguousarray(p, dtype="<f4").tobytes())

def compare(a, b):
    ta, tb = read_st(a), read_st(b)
    if set(ta) != set(tb):
        sys.exit(f"tensor names differ: only in {a}: {sorted(set(ta) - set(tb))[:5]}, only in {b}: {sorted(set(tb) - set(ta))[:5]}")
    for k in sorted(ta):
        if ta[k][0] != tb[k][0] or ta[k][1] != tb[k][1]:
            sys.exit(f"{k}: {ta[k][0]}{list(ta[k][1])} vs {tb[k][0]}{list(tb[k][1])}")
        if ta[k][2] != tb[k][2]:
            x, y = f32(ta[k]), f32(tb[k])
            sys.exit(f"{k}: bytes differ ({int((x.view(np.uint32) != y.view(np.uint32)).sum())} of {x.size} values)")
    print(len(ta))

def load_bin(path):
    blob = open(path, "rb").read()
    dim, hidden, L, nh, nkv, vocab, seq = struct.unpack_from("<7i", blob, 0)
    shared = vocab > 0
    vocab = abs(vocab)
    hs = dim // nh
    kvd = hs * nkv
    a = np.frombuffer(blob, dtype="<f4", offset=28)
    pos = [0]
    def take(*shape):
        n = int(np.prod(shape))
        r = a[pos[0]:pos[0] + n].reshape(shape).astype(np.float64)
        pos[0] += n
        return r
    w = dict(emb=take(vocab, dim), rms_att=take(L, dim), wq=take(L, dim, dim), wk=take(L, kvd, dim),
             wv=take(L, kvd, dim), wo=take(L, dim, dim), rms_ffn=take(L, dim), w1=take(L, hidden, dim),
             w2=take(L, dim, hidden), w3=take(L, hidden, dim), rms_final=take(dim))
    take(seq, hs // 2); take(seq, hs // 2)
    w["wcls"] = w["emb"] if shared else take(vocab, dim)
    assert pos[0] == a.size, (pos[0], a.size)
    return (dim, hidden, L, nh, nkv, vocab, seq), w

def greedy(path, n):
    # llama2.c run.c forward(): RoPE on interleaved pairs (i, i+1), freq 10000^(-(i % hs) / hs)
    (dim, hidden, L, nh, nkv, vocab, seq), w = load_bin(path)
    hs = dim // nh
    kvd = hs * nkv
    rep = nh // nkv
    rms = lambda x, g: g * (x / np.sqrt(np.mean(x * x) + 1e-5))
    kc = np.zeros((L, seq, kvd))
    vc = np.zeros((L, seq, kvd))
    tok, out = 1, []
    for pos in range(n):
        x = w["emb"][tok].copy()
        for l in range(L):
            xb = rms(x, w["rms_att"][l])
            q, k, v = w["wq"][l] @ xb, w["wk"][l] @ xb, w["wv"][l] @ xb
            for i in range(0, dim, 2):
                fr = 1.0 / (10000.0 ** ((i % hs) / hs))
                c, s = math.cos(pos * fr), math.sin(pos * fr)
                for vec in ((q, k) if i < kvd else (q,)):
                    a0, a1 = vec[i], vec[i + 1]
                    vec[i], vec[i + 1] = a0 * c - a1 * s, a0 * s + a1 * c
            kc[l, pos], vc[l, pos] = k, v
            o = np.zeros(dim)
            for h in range(nh):
                g = h // rep
                qh = q[h * hs:(h + 1) * hs]
                att = kc[l, :pos + 1, g * hs:(g + 1) * hs] @ qh / math.sqrt(hs)
                att = np.exp(att - att.max())
                att /= att.sum()
                o[h * hs:(h + 1) * hs] = att @ vc[l, :pos + 1, g * hs:(g + 1) * hs]
            x = x + w["wo"][l] @ o
            xb = rms(x, w["rms_ffn"][l])
            h1, h3 = w["w1"][l] @ xb, w["w3"][l] @ xb
            x = x + w["w2"][l] @ (h1 / (1.0 + np.exp(-h1)) * h3)
        logits = w["wcls"] @ rms(x, w["rms_final"])
        tok = int(np.argmax(logits))
        if tok in (1, 2):
            break
        out.append(tok)
    print(" ".join(map(str, out)))

cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "export":
    export(args[0], args[1], args[3] if len(args) > 3 and args[2] == "--wcls" else None)
elif cmd == "compare":
    compare(args[0], args[1])
elif cmd == "greedy":
    greedy(args[0], int(args[1]))
elif cmd == "wcls":
    (dim, hidden, L, nh, nkv, vocab, seq), w = load_bin(args[0])
    open(args[1], "wb").write(w["wcls"].astype("<f4").tobytes())
elif cmd == "lm_head":
    t = read_st(args[0])
    open(args[1], "wb").write(t["lm_head.weight"][2] if "lm_head.weight" in t else b"")
else:
    sys.exit("unknown helper command " + cmd)
'
helper() { python3 -c "$HELPER" "$@"; }

# source name of a shared checkpoint (its safetensors __metadata__), so the exported .bin has
# the name the shared file was converted from
source_name() {
    python3 -c 'import json,struct,sys
b=open(sys.argv[1],"rb"); n=struct.unpack("<Q",b.read(8))[0]; h=json.loads(b.read(n))
print(h.get("__metadata__",{}).get("source","model.bin"))' "$1/model.safetensors"
}

# llm-run's greedy tokens after BOS (space separated), -p "" -n N
llm_tokens() {
    "$BIN" -t "$THREADS" -m "$1" -p "" -n "$2" --json 2>"$TMP/tokens.err" >"$TMP/tokens.json" ||
        { echo "(llm-run failed: $(head -n1 "$TMP/tokens.err"))"; return; }
    python3 -c 'import json,sys; print(" ".join(map(str, json.load(open(sys.argv[1]))["tokens"])))' "$TMP/tokens.json" 2>&1 | tail -n1
}

same_text_check() { # name ref_dir dir
    local name=$1 ref=$2 dir=$3 a b
    a="$("$BIN" -t "$THREADS" -m "$ref" -p "Once upon a time" -n 50 2>"$TMP/ref.err")" || { bad "$name: llm-run failed on $ref: $(head -n1 "$TMP/ref.err")"; return; }
    b="$("$BIN" -t "$THREADS" -m "$dir" -p "Once upon a time" -n 50 2>"$TMP/conv.err")" || { bad "$name: llm-run failed on $dir: $(head -n1 "$TMP/conv.err")"; return; }
    if [ -n "$a" ] && [ "$a" == "$b" ]; then
        ok "$name: same stdout ($(printf '%s' "$a" | wc -c) bytes: $(printf '%s' "$a" | head -c 60 | tr '\n' ' ')...)"
    else
        bad "$name: stdout differs"
        diff <(printf '%s\n' "$a") <(printf '%s\n' "$b") | head -n 6 | sed 's/^/     /'
    fi
}

# ---------------------------------------------------------------------------------------------
# Round trip on every shared model: HF -> .bin -> convert -> HF

for ref in "$SHARED/models/stories260K" "$SHARED/models/babyllama-tok105"; do
    [ -f "$ref/config.json" ] && [ -f "$ref/model.safetensors" ] && [ -f "$ref/tokenizer.model" ] || continue
    m="$(basename "$ref")"
    w="$TMP/$m"
    mkdir -p "$w"
    bin="$w/$(source_name "$ref")"
    if ! helper export "$ref" "$bin" 2>"$TMP/err"; then
        bad "$m: export to llama2.c .bin: $(tail -n1 "$TMP/err")"
        continue
    fi
    ok "$m: exported to llama2.c .bin ($(stat -c %s "$bin") bytes)"

    if python3 "$CONVERT" "$bin" "$ref/tokenizer.model" "$w/np" 2>"$TMP/err"; then
        ok "$m: convert (numpy): $(tail -n1 "$TMP/err")"
    else
        bad "$m: convert (numpy) failed: $(tail -n1 "$TMP/err")"
        continue
    fi
    if n="$(helper compare "$ref" "$w/np" 2>&1)"; then
        ok "$m: all $n tensors equal the shared ones bit for bit (names, dtype, shape, bytes)"
    else
        bad "$m: tensors differ: $n"
    fi
    if python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' "$ref/config.json" "$w/np/config.json"; then
        ok "$m: config.json equals the shared one"
    else
        bad "$m: config.json differs from the shared one"
        diff "$ref/config.json" "$w/np/config.json" | head -n 6 | sed 's/^/     /'
    fi
    if cmp -s "$ref/tokenizer.model" "$w/np/tokenizer.model"; then ok "$m: tokenizer.model copied"; else bad "$m: tokenizer.model differs"; fi
    if cmp -s "$ref/model.safetensors" "$w/np/model.safetensors"; then
        ok "$m: model.safetensors is byte-identical to the shared file (header included)"
    else
        bad "$m: model.safetensors differs from the shared file: $(cmp "$ref/model.safetensors" "$w/np/model.safetensors" 2>&1 | head -n1)"
    fi

    if LLM_CONVERT_NO_NUMPY=1 python3 "$CONVERT" "$bin" "$ref/tokenizer.model" "$w/py" 2>"$TMP/err" &&
        cmp -s "$w/np/model.safetensors" "$w/py/model.safetensors" && cmp -s "$w/np/config.json" "$w/py/config.json" &&
        cmp -s "$w/np/tokenizer.model" "$w/py/tokenizer.model"; then
        ok "$m: convert without numpy (array module) gives the same files"
    else
        bad "$m: convert without numpy differs or failed: $(tail -n1 "$TMP/err")"
    fi

    if helper export "$w/np" "$w/again.bin" 2>"$TMP/err" && cmp -s "$bin" "$w/again.bin"; then
        ok "$m: exporting the converted folder gives the same .bin byte for byte"
    else
        bad "$m: re-export differs: $(cmp "$bin" "$w/again.bin" 2>&1 | head -n1) $(tail -n1 "$TMP/err")"
    fi

    same_text_check "$m: llm-run -p \"Once upon a time\" -n 50, converted vs shared" "$ref" "$w/np"
done

# ---------------------------------------------------------------------------------------------
# The .bin follows llama2.c's convention: llama2.c's forward pass on it = llm-run on the HF folder

S="$SHARED/models/stories260K"
SB="$TMP/stories260K/$(source_name "$S")"
if [ -f "$SB" ]; then
    N=40
    want="$(llm_tokens "$S" "$N")"
    got="$(helper greedy "$SB" "$N" 2>&1)"
    if [ -n "$want" ] && [ "$want" == "$got" ]; then
        ok "stories260K: llama2.c forward pass (numpy, interleaved RoPE) on the exported .bin = llm-run's $N greedy tokens"
    else
        bad "stories260K: llama2.c forward pass on the .bin disagrees with llm-run"
        echo "     llm-run:  $want" | cut -c 1-300
        echo "     llama2.c: $got" | cut -c 1-300
    fi
fi

# ---------------------------------------------------------------------------------------------
# Unshared classifier (vocab_size < 0 in the header): lm_head.weight, tie_word_embeddings false

if [ -f "$SB" ]; then
    for mode in same rolled; do
        w="$TMP/untied-$mode"
        mkdir -p "$w"
        if ! helper export "$S" "$w/untied.bin" --wcls "$mode" 2>"$TMP/err"; then
            bad "untied ($mode): export failed: $(tail -n1 "$TMP/err")"
            continue
        fi
        if ! python3 "$CONVERT" "$w/untied.bin" "$S/tokenizer.model" "$w/hf" 2>"$TMP/err"; then
            bad "untied ($mode): convert failed: $(tail -n1 "$TMP/err")"
            continue
        fi
        helper wcls "$w/untied.bin" "$w/wcls.raw"
        helper lm_head "$w/hf" "$w/lm_head.raw"
        tie="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tie_word_embeddings"])' "$w/hf/config.json")"
        if [ -s "$w/lm_head.raw" ] && cmp -s "$w/wcls.raw" "$w/lm_head.raw" && [ "$tie" == "False" ]; then
            ok "untied ($mode): lm_head.weight = the .bin's classifier bit for bit, tie_word_embeddings false"
        else
            bad "untied ($mode): lm_head.weight missing or different, or tie_word_embeddings=$tie"
        fi
        if [ "$mode" == same ]; then
            # a separate copy of the embedding must give exactly the tied model's text
            same_text_check "untied (same): llm-run on lm_head = embedding copy vs tied shared model" "$S" "$w/hf"
        else
            N=20
            want="$(helper greedy "$w/untied.bin" "$N" 2>&1)"
            got="$(llm_tokens "$w/hf" "$N")"
            if [ -n "$got" ] && [ "$want" == "$got" ]; then
                ok "untied (rolled): llm-run's $N greedy tokens = llama2.c forward pass with the separate classifier"
            else
                bad "untied (rolled): llm-run disagrees with the llama2.c forward pass"
                echo "     llama2.c: $want" | cut -c 1-300
                echo "     llm-run:  $got" | cut -c 1-300
            fi
        fi
    done
fi

# ---------------------------------------------------------------------------------------------
# The converter's own errors: exit 1, one line naming the input

conv_err() { # name pattern args...
    local name=$1 pat=$2 rc lines
    shift 2
    python3 "$CONVERT" "$@" >"$TMP/out" 2>"$TMP/err"
    rc=$?
    lines="$(grep -cv '^[[:space:]]*$' "$TMP/err")"
    if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && [ "$lines" -eq 1 ] && grep -q '^convert_llama2c: ' "$TMP/err" &&
        grep -qE -- "$pat" "$TMP/err" && ! grep -q Traceback "$TMP/err"; then
        ok "convert error, $name: $(head -n1 "$TMP/err")"
    else
        bad "convert error, $name: rc=$rc, $lines stderr lines: $(head -n3 "$TMP/err" | tr '\n' ' ')"
    fi
}
if [ -f "$SB" ]; then
    head -c 100000 "$SB" >"$TMP/truncated.bin"
    conv_err "truncated .bin" 'truncated\.bin.*needs' "$TMP/truncated.bin" "$S/tokenizer.model" "$TMP/o1"
    cat "$SB" "$SB" >"$TMP/long.bin"
    conv_err ".bin with trailing bytes" 'long\.bin' "$TMP/long.bin" "$S/tokenizer.model" "$TMP/o1"
    python3 -c 'import struct,sys; open(sys.argv[1],"wb").write(struct.pack("<Ii",0x616b3432,1)+bytes(300))' "$TMP/v1.bin"
    conv_err "versioned (ak42) export" 'v1\.bin.*version' "$TMP/v1.bin" "$S/tokenizer.model" "$TMP/o1"
    python3 -c 'import struct,sys; open(sys.argv[1],"wb").write(struct.pack("<7i",64,172,5,8,3,512,512)+bytes(1000))' "$TMP/kv3.bin"
    conv_err "n_kv_heads not dividing n_heads" 'kv3\.bin.*n_kv_heads' "$TMP/kv3.bin" "$S/tokenizer.model" "$TMP/o1"
    python3 -c 'import struct,sys; open(sys.argv[1],"wb").write(struct.pack("<7i",0,172,5,8,4,512,512))' "$TMP/dim0.bin"
    conv_err "dim 0" 'dim0\.bin.*dim' "$TMP/dim0.bin" "$S/tokenizer.model" "$TMP/o1"
    conv_err "missing .bin" 'nosuch\.bin' "$TMP/nosuch.bin" "$S/tokenizer.model" "$TMP/o1"
    conv_err "missing tokenizer" 'nosuch\.model' "$SB" "$TMP/nosuch.model" "$TMP/o1"
    conv_err "tokenizer not a SentencePiece model" 'truncated\.bin' "$SB" "$TMP/truncated.bin" "$TMP/o1"
    cp "$TMP/truncated.bin" "$TMP/tok512.bin"
    conv_err "tokenizer is llama2.c's .bin" 'tok512\.bin.*tokenizer' "$SB" "$TMP/tok512.bin" "$TMP/o1"
    python3 -c 'import sys; b=bytearray(open(sys.argv[1],"rb").read()); b[28:32]=bytes([0,0,0xc0,0x7f]); open(sys.argv[2],"wb").write(b)' "$SB" "$TMP/nan.bin"
    conv_err "NaN weights" 'nan\.bin.*NaN' "$TMP/nan.bin" "$S/tokenizer.model" "$TMP/o1"
    [ ! -e "$TMP/o1" ] && ok "convert error: no output folder left behind" || bad "convert error: $TMP/o1 was created"
fi
# ---------------------------------------------------------------------------------------------
# scripts/download_stories260k.sh, offline: a file:// mirror holding the exported .bin

if [ -f "$SB" ]; then
    mkdir -p "$TMP/mirror"
    cp "$SB" "$TMP/mirror/stories260K.bin"
    cp "$S/tokenizer.model" "$TMP/mirror/tok512.model"
    if LLM_STORIES260K_URL="file://$TMP/mirror" scripts/download_stories260k.sh "$TMP/dl/stories260K" 2>"$TMP/err" &&
        cmp -s "$S/model.safetensors" "$TMP/dl/stories260K/model.safetensors" &&
        cmp -s "$S/tokenizer.model" "$TMP/dl/stories260K/tokenizer.model" &&
        python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' "$S/config.json" "$TMP/dl/stories260K/config.json"; then
        ok "download_stories260k.sh (file:// mirror): the folder equals the shared stories260K"
    else
        bad "download_stories260k.sh (file:// mirror): $(tail -n2 "$TMP/err" | tr '\n' ' ')"
    fi
    if LLM_STORIES260K_URL="file://$TMP/mirror" scripts/download_stories260k.sh "$TMP/dl/stories260K" 2>"$TMP/err" &&
        grep -q "nothing to do" "$TMP/err"; then
        ok "download_stories260k.sh: a complete OUT_DIR is left alone"
    else
        bad "download_stories260k.sh: second run: $(tail -n1 "$TMP/err")"
    fi
    if ! LLM_STORIES260K_URL="file://$TMP/no-mirror" scripts/download_stories260k.sh "$TMP/dl2/stories260K" 2>"$TMP/err" &&
        grep -q "needs the internet" "$TMP/err" && [ ! -e "$TMP/dl2/stories260K" ]; then
        ok "download_stories260k.sh: a failed download exits non-zero, says it needs the internet, writes nothing"
    else
        bad "download_stories260k.sh: failed download: $(tail -n1 "$TMP/err")"
    fi
fi

python3 "$CONVERT" >/dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ] && ok "convert without arguments exits 2 (usage)" || bad "convert without arguments: rc=$rc"

echo
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
