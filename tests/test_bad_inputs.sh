#!/usr/bin/env bash
# Bad inputs: every case must exit non-zero without crashing, print exactly one line on stderr
# (empty lines ignored) that starts with "llm-run: " and names the file, tensor or flag at fault,
# and print nothing on stdout.
#
# Each case builds its bad input in a temporary folder from a copy of
# $LLM_SHARED/models/stories260K (LLM_SHARED defaults to ../shared). Safetensors edits are made
# with python3 (standard library only). LLM_RUN overrides the binary (default ./llm-run).
#
# Prints one line per case, "ok   <case>: <the error line>" or "FAIL <case>: <why>", then
# "N passed, M failed"; exits non-zero when a case failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

SHARED="${LLM_SHARED:-../shared}"
SRC="$SHARED/models/stories260K"
BIN="${LLM_RUN:-./llm-run}"
TIMEOUT="${LLM_TIMEOUT:-60}"

if [ ! -x "$BIN" ]; then
    echo "test_bad_inputs: $BIN not built (run: make llm-run)" >&2
    echo "0 passed, 1 failed"
    exit 1
fi
if [ ! -f "$SRC/model.safetensors" ] || [ ! -f "$SRC/config.json" ] || [ ! -f "$SRC/tokenizer.model" ]; then
    echo "test_bad_inputs: $SRC (config.json, model.safetensors, tokenizer.model) not found; set LLM_SHARED" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

TMP="$(mktemp -d "${TMPDIR:-/tmp}/llm-bad.XXXXXX")" || exit 1
trap 'rm -rf "$TMP"' EXIT

pass=0
fail=0

# ---------------------------------------------------------------------------------------------
# python3 helpers (stdlib only)

# st_edit FILE OP ARGS...: edits a safetensors file in place.
#   truncate N                  keep the first N bytes
#   garbage N SEED              replace the file with N pseudo-random bytes
#   hlen N                      overwrite the u64 header length with N
#   raw_header TEXT             replace the header JSON with TEXT (data kept, length updated)
#   break_json                  make the header JSON malformed (same length: last '}' -> ' ')
#   set_dtype TENSOR DTYPE      change a tensor's dtype string
#   set_offsets TENSOR B E      change a tensor's data_offsets
#   set_shape TENSOR D0,D1,..   change a tensor's shape
#   remove TENSOR               drop a tensor (header entry and its bytes; offsets recomputed)
#   split TENSOR SHARD          move TENSOR into its own file SHARD (same folder), write the
#                               rest to model-rest.safetensors and an index naming both, and
#                               delete model.safetensors
ST_EDIT='
import json, os, random, struct, sys

path, op, args = sys.argv[1], sys.argv[2], sys.argv[3:]
blob = open(path, "rb").read()

def parse(b):
    n = struct.unpack("<Q", b[:8])[0]
    return json.loads(b[8:8 + n].decode("utf-8")), b[8 + n:]

def header_bytes(h):
    t = json.dumps(h, separators=(",", ":")).encode("utf-8")
    return t + b" " * ((-len(t)) % 8)

def write(p, h, data):
    t = header_bytes(h)
    with open(p, "wb") as f:
        f.write(struct.pack("<Q", len(t)) + t + data)

def repack(h, data, drop=()):
    """Rebuilds header and data with only the tensors not in drop, offsets recomputed."""
    out, parts, pos = {}, [], 0
    if "__metadata__" in h:
        out["__metadata__"] = h["__metadata__"]
    items = sorted(((k, v) for k, v in h.items() if k != "__metadata__" and k not in drop),
                   key=lambda kv: kv[1]["data_offsets"][0])
    for k, v in items:
        b, e = v["data_offsets"]
        parts.append(data[b:e])
        out[k] = dict(v, data_offsets=[pos, pos + e - b])
        pos += e - b
    return out, b"".join(parts)

if op == "truncate":
    open(path, "wb").write(blob[:int(args[0])])
elif op == "garbage":
    rng = random.Random(int(args[1]))
    open(path, "wb").write(bytes(rng.getrandbits(8) for _ in range(int(args[0]))))
elif op == "hlen":
    open(path, "wb").write(struct.pack("<Q", int(args[0])) + blob[8:])
elif op == "raw_header":
    _, data = parse(blob)
    t = args[0].encode("utf-8")
    open(path, "wb").write(struct.pack("<Q", len(t)) + t + data)
elif op == "break_json":
    n = struct.unpack("<Q", blob[:8])[0]
    hdr = bytearray(blob[8:8 + n])
    i = hdr.rindex(b"}")
    hdr[i:i + 1] = b" "
    open(path, "wb").write(blob[:8] + bytes(hdr) + blob[8 + n:])
else:
    h, data = parse(blob)
    if op == "set_dtype":
        h[args[0]]["dtype"] = args[1]
    elif op == "set_offsets":
        h[args[0]]["data_offsets"] = [int(args[1]), int(args[2])]
    elif op == "set_shape":
        h[args[0]]["shape"] = [int(x) for x in args[1].split(",")]
    elif op == "remove":
        assert args[0] in h, args[0]
        h, data = repack(h, data, drop={args[0]})
        assert args[0] not in h
    elif op == "split":
        name, shard = args
        d = os.path.dirname(path)
        one, one_data = repack({name: h[name]}, data)
        rest, rest_data = repack(h, data, drop={name})
        write(os.path.join(d, shard), one, one_data)
        write(os.path.join(d, "model-rest.safetensors"), rest, rest_data)
        wm = {k: "model-rest.safetensors" for k in rest if k != "__metadata__"}
        wm[name] = shard
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": len(one_data) + len(rest_data)}, "weight_map": wm}, f, indent=1)
        os.remove(path)
        sys.exit(0)
    else:
        sys.exit("st_edit: unknown op " + op)
    write(path, h, data)
'
st_edit() { python3 -c "$ST_EDIT" "$@"; }

# cfg_set FILE KEY JSON_VALUE: sets one key of a JSON object file.
cfg_set() {
    python3 -c 'import json,sys
p,k,v=sys.argv[1:4]; c=json.load(open(p)); c[k]=json.loads(v); json.dump(c,open(p,"w"),indent=2)' "$@"
}

# fresh NAME: a writable copy of the model in $TMP/NAME; prints its path.
fresh() {
    local d="$TMP/$1"
    rm -rf "$d"
    mkdir -p "$d"
    cp "$SRC/config.json" "$SRC/model.safetensors" "$SRC/tokenizer.model" "$d/"
    chmod -R u+w "$d"
    echo "$d"
}

# ---------------------------------------------------------------------------------------------
# check NAME PATTERN [args...]: runs llm-run with args and checks the failure.
# PATTERN is an extended regular expression the error line must contain.
check() {
    local name="$1" pat="$2"
    shift 2
    local out="$TMP/stdout" err="$TMP/stderr" rc
    timeout "$TIMEOUT" "$BIN" "$@" </dev/null >"$out" 2>"$err"
    rc=$?
    local lines first why=""
    lines="$(grep -cv '^[[:space:]]*$' "$err")"
    first="$(grep -v '^[[:space:]]*$' "$err" | head -n 1)"
    if [ "$rc" -eq 0 ]; then
        why="exit code 0"
    elif [ "$rc" -eq 124 ]; then
        why="timed out after ${TIMEOUT}s"
    elif [ "$rc" -ge 128 ]; then
        why="crashed: exit code $rc (signal $((rc - 128)))"
    elif grep -qiE 'Segmentation|Aborted|core dumped|Sanitizer|runtime error:|terminate called' "$err"; then
        why="crash text on stderr"
    elif [ "$lines" -ne 1 ]; then
        why="stderr has $lines lines, expected 1"
    elif [[ "$first" != "llm-run: "* ]]; then
        why="stderr line does not start with 'llm-run: '"
    elif ! grep -v '^[[:space:]]*$' "$err" | grep -qE -- "$pat"; then
        why="error line does not match /$pat/"
    elif [ -s "$out" ]; then
        why="stdout is not empty: $(head -c 200 "$out" | tr '\n' ' ')"
    fi
    if [ -z "$why" ]; then
        pass=$((pass + 1))
        echo "ok   $name: $first"
    else
        fail=$((fail + 1))
        echo "FAIL $name: $why (rc=$rc)"
        echo "     command: $BIN $*" | cut -c 1-400
        sed 's/^/     stderr: /' "$err" | head -n 8 | cut -c 1-400
    fi
}

P=(-t 1 -p "Once upon a time" -n 4)
GOOD="$(fresh good)"
ST_SIZE=$(stat -c %s "$GOOD/model.safetensors")
HLEN=$(python3 -c 'import struct,sys; print(struct.unpack("<Q", open(sys.argv[1],"rb").read(8))[0])' "$GOOD/model.safetensors")

# sanity: the pristine copy runs (otherwise every case below proves nothing)
if ! timeout "$TIMEOUT" "$BIN" -m "$GOOD" "${P[@]}" >/dev/null 2>"$TMP/sanity.err"; then
    echo "FAIL sanity: the unmodified copy of $SRC does not run:"
    sed 's/^/     /' "$TMP/sanity.err" | head -n 5
    fail=$((fail + 1))
else
    pass=$((pass + 1))
    echo "ok   sanity: unmodified copy runs"
fi

# ---------------------------------------------------------------------------------------------
# model.safetensors

for cut in 0 4 7 8 100 $((8 + HLEN - 1)) $((8 + HLEN)) $((8 + HLEN + 1)) 500000 $((ST_SIZE - 4)) $((ST_SIZE - 1)); do
    d="$(fresh "trunc$cut")"
    st_edit "$d/model.safetensors" truncate "$cut"
    check "truncated model.safetensors at $cut of $ST_SIZE bytes" 'model\.safetensors' -m "$d" "${P[@]}"
done

d="$(fresh garbage)"
st_edit "$d/model.safetensors" garbage "$ST_SIZE" 1
check "garbage model.safetensors ($ST_SIZE random bytes)" 'model\.safetensors' -m "$d" "${P[@]}"

d="$(fresh garbage_small_hlen)"
# a plausible header length followed by random bytes: the JSON parser sees garbage
python3 -c 'import struct,random,sys
r=random.Random(2); open(sys.argv[1],"wb").write(struct.pack("<Q",64)+bytes(r.getrandbits(8) for _ in range(4096)))' "$d/model.safetensors"
check "garbage header JSON (64 random bytes)" 'model\.safetensors' -m "$d" "${P[@]}"

d="$(fresh hlen_eof)"
st_edit "$d/model.safetensors" hlen "$ST_SIZE"
check "header length past EOF" 'model\.safetensors.*header length' -m "$d" "${P[@]}"

d="$(fresh hlen_huge)"
st_edit "$d/model.safetensors" hlen 18446744073709551615
check "header length 2^64-1" 'model\.safetensors.*header length' -m "$d" "${P[@]}"

d="$(fresh hlen_zero)"
st_edit "$d/model.safetensors" hlen 0
check "header length 0" 'model\.safetensors' -m "$d" "${P[@]}"

d="$(fresh badjson)"
st_edit "$d/model.safetensors" break_json
check "header JSON malformed (no closing brace)" 'model\.safetensors.*(JSON|json)' -m "$d" "${P[@]}"

d="$(fresh notobject)"
st_edit "$d/model.safetensors" raw_header '[1, 2, 3]'
check "header JSON is an array" 'model\.safetensors' -m "$d" "${P[@]}"

d="$(fresh emptyobj)"
st_edit "$d/model.safetensors" raw_header '{}'
check "header JSON has no tensors" 'model\.safetensors.*model\.' -m "$d" "${P[@]}"

d="$(fresh offsets_out)"
st_edit "$d/model.safetensors" set_offsets model.norm.weight 1040128 9999999
check "offsets outside the data buffer" 'model\.safetensors.*model\.norm\.weight' -m "$d" "${P[@]}"

d="$(fresh offsets_rev)"
st_edit "$d/model.safetensors" set_offsets model.norm.weight 1040128 1039872
check "offsets begin > end" 'model\.safetensors.*model\.norm\.weight' -m "$d" "${P[@]}"

d="$(fresh offsets_neg)"
st_edit "$d/model.safetensors" set_offsets model.norm.weight -256 0
check "negative offsets" 'model\.safetensors.*model\.norm\.weight' -m "$d" "${P[@]}"

d="$(fresh offsets_span)"
st_edit "$d/model.safetensors" set_offsets model.norm.weight 1040000 1040128
check "offsets span != shape" 'model\.safetensors.*model\.norm\.weight' -m "$d" "${P[@]}"

d="$(fresh overlap)"
st_edit "$d/model.safetensors" set_offsets model.norm.weight 1039616 1039872
check "offsets overlap another tensor" 'model\.safetensors.*(model\.norm\.weight|v_proj)' -m "$d" "${P[@]}"

d="$(fresh dtype_i8)"
st_edit "$d/model.safetensors" set_dtype model.layers.0.self_attn.q_proj.weight I8
check "unknown dtype I8" 'model\.safetensors.*q_proj.*I8' -m "$d" "${P[@]}"

d="$(fresh dtype_f64)"
st_edit "$d/model.safetensors" set_dtype model.norm.weight F64
check "unsupported dtype F64" 'model\.safetensors.*model\.norm\.weight.*F64' -m "$d" "${P[@]}"

d="$(fresh missing_tensor)"
st_edit "$d/model.safetensors" remove model.layers.2.mlp.up_proj.weight
check "missing tensor" 'model\.safetensors.*model\.layers\.2\.mlp\.up_proj\.weight' -m "$d" "${P[@]}"

d="$(fresh missing_norm)"
st_edit "$d/model.safetensors" remove model.norm.weight
check "missing final norm" 'model\.norm\.weight' -m "$d" "${P[@]}"

d="$(fresh missing_embed)"
st_edit "$d/model.safetensors" remove model.embed_tokens.weight
check "missing embeddings" 'model\.embed_tokens\.weight' -m "$d" "${P[@]}"

d="$(fresh shape_header)"
st_edit "$d/model.safetensors" set_shape model.layers.1.self_attn.k_proj.weight 64,32
check "tensor shape transposed" 'model\.layers\.1\.self_attn\.k_proj\.weight' -m "$d" "${P[@]}"

d="$(fresh sharded_missing)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
rm "$d/model-00002-of-00002.safetensors"
check "sharded index naming a missing shard" 'model\.safetensors\.index\.json.*model-00002-of-00002\.safetensors' -m "$d" "${P[@]}"

d="$(fresh sharded_badindex)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
printf '{"weight_map": {' >"$d/model.safetensors.index.json"
check "sharded index malformed JSON" 'model\.safetensors\.index\.json' -m "$d" "${P[@]}"

d="$(fresh sharded_unlisted)"
st_edit "$d/model.safetensors" split model.layers.2.mlp.up_proj.weight model-00002-of-00002.safetensors
python3 -c 'import json,sys
p=sys.argv[1]; j=json.load(open(p)); del j["weight_map"]["model.layers.2.mlp.up_proj.weight"]; json.dump(j,open(p,"w"))' \
    "$d/model.safetensors.index.json"
check "sharded index missing a tensor" 'model\.layers\.2\.mlp\.up_proj\.weight' -m "$d" "${P[@]}"

d="$(fresh no_weights)"
rm "$d/model.safetensors"
check "no model.safetensors" 'model\.safetensors' -m "$d" "${P[@]}"

d="$(fresh st_is_dir)"
rm "$d/model.safetensors"
mkdir "$d/model.safetensors"
check "model.safetensors is a directory" 'model\.safetensors' -m "$d" "${P[@]}"

# ---------------------------------------------------------------------------------------------
# config.json

d="$(fresh shape_mismatch)"
cfg_set "$d/config.json" intermediate_size 128
check "shape mismatch (config intermediate_size 128)" 'model\.safetensors.*mlp\.(gate|up|down)_proj\.weight' -m "$d" "${P[@]}"

d="$(fresh vocab_mismatch)"
cfg_set "$d/config.json" vocab_size 256
check "shape mismatch (config vocab_size 256)" 'embed_tokens|vocab_size|tokenizer\.model' -m "$d" "${P[@]}"

d="$(fresh cfg_malformed)"
head -c 100 "$SRC/config.json" >"$d/config.json"
check "malformed config.json (truncated)" 'config\.json' -m "$d" "${P[@]}"

d="$(fresh cfg_notobj)"
echo '[64, 172]' >"$d/config.json"
check "config.json is an array" 'config\.json' -m "$d" "${P[@]}"

d="$(fresh cfg_empty)"
: >"$d/config.json"
check "config.json empty" 'config\.json' -m "$d" "${P[@]}"

d="$(fresh cfg_kvheads)"
cfg_set "$d/config.json" num_key_value_heads 3
check "num_key_value_heads 3 does not divide 8 heads" 'config\.json.*num_key_value_heads' -m "$d" "${P[@]}"

d="$(fresh cfg_hidden0)"
cfg_set "$d/config.json" hidden_size 0
check "hidden_size 0" 'config\.json.*hidden_size' -m "$d" "${P[@]}"

d="$(fresh cfg_hidden_neg)"
cfg_set "$d/config.json" hidden_size -64
check "hidden_size -64" 'config\.json.*hidden_size' -m "$d" "${P[@]}"

d="$(fresh cfg_hidden_str)"
cfg_set "$d/config.json" hidden_size '"64"'
check "hidden_size a string" 'config\.json.*hidden_size' -m "$d" "${P[@]}"

d="$(fresh cfg_hidden_frac)"
cfg_set "$d/config.json" hidden_size 64.5
check "hidden_size 64.5" 'config\.json.*hidden_size' -m "$d" "${P[@]}"

d="$(fresh cfg_heads0)"
cfg_set "$d/config.json" num_attention_heads 0
check "num_attention_heads 0" 'config\.json.*num_attention_heads' -m "$d" "${P[@]}"

d="$(fresh cfg_layers_missing)"
python3 -c 'import json,sys
p=sys.argv[1]; c=json.load(open(p)); del c["num_hidden_layers"]; json.dump(c,open(p,"w"))' "$d/config.json"
check "config.json without num_hidden_layers" 'config\.json.*num_hidden_layers' -m "$d" "${P[@]}"

d="$(fresh cfg_eps)"
cfg_set "$d/config.json" rms_norm_eps -1
check "rms_norm_eps -1" 'config\.json.*rms_norm_eps' -m "$d" "${P[@]}"

d="$(fresh cfg_ctx0)"
cfg_set "$d/config.json" max_position_embeddings 0
check "max_position_embeddings 0" 'config\.json.*max_position_embeddings' -m "$d" "${P[@]}"

d="$(fresh cfg_bos)"
cfg_set "$d/config.json" bos_token_id 100000
check "bos_token_id outside the vocabulary" 'config\.json.*bos_token_id' -m "$d" "${P[@]}"

d="$(fresh cfg_missing)"
rm "$d/config.json"
check "missing config.json" 'config\.json' -m "$d" "${P[@]}"

d="$(fresh cfg_dir)"
rm "$d/config.json"
mkdir "$d/config.json"
check "config.json is a directory" 'config\.json' -m "$d" "${P[@]}"

# ---------------------------------------------------------------------------------------------
# tokenizer.model

d="$(fresh tok_missing)"
rm "$d/tokenizer.model"
check "missing tokenizer.model" 'tokenizer\.model' -m "$d" "${P[@]}"

d="$(fresh tok_garbage)"
python3 -c 'import random,sys
r=random.Random(3); open(sys.argv[1],"wb").write(bytes(r.getrandbits(8) for _ in range(8222)))' "$d/tokenizer.model"
check "corrupt tokenizer.model (random bytes)" 'tokenizer\.model' -m "$d" "${P[@]}"

d="$(fresh tok_trunc)"
head -c 4000 "$SRC/tokenizer.model" >"$d/tokenizer.model"
check "corrupt tokenizer.model (truncated)" 'tokenizer\.model' -m "$d" "${P[@]}"

d="$(fresh tok_empty)"
: >"$d/tokenizer.model"
check "empty tokenizer.model" 'tokenizer\.model' -m "$d" "${P[@]}"

d="$(fresh tok_dir)"
rm "$d/tokenizer.model"
mkdir "$d/tokenizer.model"
check "tokenizer.model is a directory" 'tokenizer\.model' -m "$d" "${P[@]}"

# ---------------------------------------------------------------------------------------------
# model folder and prompt

check "missing model dir" 'no-such-model-dir' -m "$TMP/no-such-model-dir" "${P[@]}"

echo "not a folder" >"$TMP/model-is-a-file"
check "model dir is a file" 'model-is-a-file' -m "$TMP/model-is-a-file" "${P[@]}"

check "missing prompt file" 'no-such-prompt\.txt' -m "$GOOD" -n 4 "$TMP/no-such-prompt.txt"

mkdir -p "$TMP/prompt-dir"
check "directory as prompt file" 'prompt-dir' -m "$GOOD" -n 4 "$TMP/prompt-dir"

echo "Once upon a time" >"$TMP/prompt.txt"
check "prompt file and -p together" 'prompt\.txt|-p' -m "$GOOD" -p "hi" -n 4 "$TMP/prompt.txt"
check "two prompt files" 'prompt\.txt' -m "$GOOD" -n 4 "$TMP/prompt.txt" "$TMP/prompt.txt"

# ~3000 characters of TinyStories-style text: more tokens than the context of 512
python3 -c 'import sys
s = ("Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. "
     "One day, she saw a big red ball in the park and ran to get it. ")
open(sys.argv[1], "w").write(s * 20)' "$TMP/long.txt"
check "prompt longer than the model's context" 'context' -m "$GOOD" -n 4 "$TMP/long.txt"
check "prompt longer than the context (--budget 0.5)" 'context' -m "$GOOD" -n 4 --policy local --budget 0.5 "$TMP/long.txt"

# ---------------------------------------------------------------------------------------------
# command line

check "unknown flag at the end" "--frobnicate" -m "$GOOD" "${P[@]}" --frobnicate
check "unknown flag with a value" "--frobnicate" -m "$GOOD" --frobnicate 3 "${P[@]}"
check "unknown short flag" "'-x'" -m "$GOOD" -x "${P[@]}"
check "flag missing its value (-n at the end)" '-n' -m "$GOOD" -p "hi" -n
check "flag missing its value (-m at the end)" '-m' -m
check "flag missing its value (--policy at the end)" '--policy' -m "$GOOD" -p hi --policy
check "-n not a number" '-n.*abc' -m "$GOOD" -p hi -n abc
check "-n 12x" '-n.*12x' -m "$GOOD" -p hi -n 12x
check "-n -1" '-n' -m "$GOOD" -p hi -n -1
check "-n 99999999999999999999" '-n' -m "$GOOD" -p hi -n 99999999999999999999
check "--temp negative" '--temp' -m "$GOOD" "${P[@]}" --temp -0.5
check "--temp nan" '--temp' -m "$GOOD" "${P[@]}" --temp nan
check "--top-p 2" '--top-p' -m "$GOOD" "${P[@]}" --top-p 2
check "--top-k -1" '--top-k' -m "$GOOD" "${P[@]}" --top-k -1
check "--seed abc" '--seed' -m "$GOOD" "${P[@]}" --seed abc
check "--threads 0" '--threads' -m "$GOOD" "${P[@]}" --threads 0
check "-t -2" '-t' -m "$GOOD" "${P[@]}" -t -2
check "--budget 0" '--budget' -m "$GOOD" "${P[@]}" --budget 0
check "--budget -1" '--budget' -m "$GOOD" "${P[@]}" --budget -1
check "--budget abc" '--budget' -m "$GOOD" "${P[@]}" --budget abc
check "--budget nan" '--budget' -m "$GOOD" "${P[@]}" --budget nan
check "--budget-tokens 0" '--budget-tokens' -m "$GOOD" "${P[@]}" --budget-tokens 0
check "--prefill-chunk 0" '--prefill-chunk' -m "$GOOD" "${P[@]}" --prefill-chunk 0
check "--policy nosuch" '--policy.*nosuch' -m "$GOOD" "${P[@]}" --policy nosuch
check "--budget-ref bogus" '--budget-ref.*bogus' -m "$GOOD" "${P[@]}" --budget-ref bogus
check "--rope bogus" '--rope.*bogus' -m "$GOOD" "${P[@]}" --rope bogus
check "--system without --chat" '--system' -m "$GOOD" "${P[@]}" --system "be nice"

check "--policy-config missing file" 'no-such-preset\.json' -m "$GOOD" "${P[@]}" --policy-config "$TMP/no-such-preset.json"
printf '{"policy": "streaming", "sink": ' >"$TMP/malformed.json"
check "--policy-config malformed JSON" 'malformed\.json' -m "$GOOD" "${P[@]}" --policy-config "$TMP/malformed.json"
echo '{"policy": "streaming", "budget": 0.5, "no_such_key": 3}' >"$TMP/unknown-key.json"
check "--policy-config unknown key" 'unknown-key\.json.*no_such_key' -m "$GOOD" "${P[@]}" --policy-config "$TMP/unknown-key.json"
echo '{"policy": "nosuch"}' >"$TMP/unknown-policy.json"
check "--policy-config unknown policy" 'unknown-policy\.json.*nosuch' -m "$GOOD" "${P[@]}" --policy-config "$TMP/unknown-policy.json"
echo '{"policy": "streaming", "budget": -3}' >"$TMP/bad-budget.json"
check "--policy-config budget -3" 'bad-budget\.json.*budget' -m "$GOOD" "${P[@]}" --policy-config "$TMP/bad-budget.json"
echo '{"policy": "streaming", "sink": "abc"}' >"$TMP/bad-sink.json"
check "--policy-config sink abc" 'bad-sink\.json.*sink' -m "$GOOD" "${P[@]}" --policy-config "$TMP/bad-sink.json"
echo '{"policy": "full", "sink": 4}' >"$TMP/full-sink.json"
check "--policy-config parameter the policy lacks" 'full-sink\.json.*sink' -m "$GOOD" "${P[@]}" --policy-config "$TMP/full-sink.json"
check "--policy-config a directory" 'prompt-dir' -m "$GOOD" "${P[@]}" --policy-config "$TMP/prompt-dir"

check "policy parameter the policy doesn't have (--policy full --sink 4)" '--sink|sink' -m "$GOOD" "${P[@]}" --policy full --sink 4
check "policy parameter of another policy (--policy streaming --buzz-s 5)" 'buzz-s' -m "$GOOD" "${P[@]}" --policy streaming --buzz-s 5
check "policy parameter not a number (--policy streaming --sink abc)" 'sink.*abc|abc.*sink' -m "$GOOD" "${P[@]}" --policy streaming --budget 0.5 --sink abc
check "policy parameter bad choice (--policy h2o --h2o-score bogus)" 'h2o-score|bogus' -m "$GOOD" "${P[@]}" --policy h2o --budget 0.5 --h2o-score bogus

check "--logits-out into a nonexistent directory" 'no-such-dir/logits\.npy' -m "$GOOD" "${P[@]}" --logits-out "$TMP/no-such-dir/logits.npy"
check "--logits-out is a directory" 'prompt-dir' -m "$GOOD" "${P[@]}" --logits-out "$TMP/prompt-dir"

# ---------------------------------------------------------------------------------------------
# more cases (issue 7): tests/bad_inputs/*.sh, sourced here (they use check, fresh, st_edit)
for f in tests/bad_inputs/*.sh; do
    echo "--- $f"
    # shellcheck source=/dev/null
    . "$f"
done

echo
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
