#!/usr/bin/env bash
# Hardening round 2 (issue 19): each fault of the outside review, and the new user's first ten
# minutes, as a case that failed before its fix. Ends with "N passed, M failed".
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BIN=${LLM_RUN:-./llm-run}
SHARED=${LLM_SHARED:-../shared}
SRC=$SHARED/models/stories260K
pass=0; fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
P=(-t 1 -p "Once upon a time" -n 8)

# one_line NAME PATTERN CMD...: non-zero exit, exactly one stderr line matching PATTERN, no crash
one_line() {
    local name="$1" pat="$2"; shift 2
    timeout 20 "$@" >"$TMP/out" 2>"$TMP/err"; local rc=$?
    local n; n=$(grep -cv '^[[:space:]]*$' "$TMP/err")
    if [ $rc -eq 0 ] || [ $rc -ge 124 ]; then bad "$name: exit $rc"; 
    elif [ "$n" -ne 1 ]; then bad "$name: $n stderr lines: $(head -c 300 "$TMP/err")";
    elif ! grep -qE -- "$pat" "$TMP/err"; then bad "$name: '$(cat "$TMP/err")' does not match /$pat/";
    else ok "$name: $(cat "$TMP/err")"; fi
}

# ---- weights with NaN/Inf: refused at load, naming the tensor and the element
mkdir -p "$TMP/nan"; cp "$SRC/config.json" "$SRC/tokenizer.model" "$TMP/nan/"
python3 - "$SRC/model.safetensors" "$TMP/nan/model.safetensors" <<'PY'
import json, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
n = struct.unpack("<Q", b[:8])[0]; h = json.loads(b[8:8 + n]); base = 8 + n
s, e = h["model.layers.2.mlp.up_proj.weight"]["data_offsets"]
b[base + s + 4 * 77: base + s + 4 * 78] = struct.pack("<f", float("nan"))
open(sys.argv[2], "wb").write(b)
PY
one_line "NaN weight refused at load" 'model\.layers\.2\.mlp\.up_proj\.weight: non-finite value .* element 77 \(row 1, column 13\)' "$BIN" -m "$TMP/nan" "${P[@]}"
# ---- ... and with --no-check, subgen / subgen_stream on non-finite keys no longer write dist[-1]
for pol in subgen subgen_stream; do
    if timeout 60 "$BIN" -m "$TMP/nan" "${P[@]}" -n 24 --no-check --policy $pol --budget 0.3 >/dev/null 2>"$TMP/err"; then
        ok "--no-check + $pol on NaN weights: runs to the end (no out-of-bounds write)"
    else bad "--no-check + $pol on NaN weights: exit $?: $(tail -2 "$TMP/err")"; fi
done

# ---- a safetensors header whose length is not a multiple of 4: F32 data misaligned, read
#      safely (same logits as the aligned file; UBSan would flag float * loads)
mkdir -p "$TMP/mis"; cp "$SRC/config.json" "$SRC/tokenizer.model" "$TMP/mis/"
python3 - "$SRC/model.safetensors" "$TMP/mis/model.safetensors" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
hdr = b[8:8 + n].rstrip(b" ") + b" "      # one trailing space: any length
while (8 + len(hdr)) % 4 == 0: hdr += b" "
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hdr)) + hdr + b[8 + n:])
PY
"$BIN" -m "$SRC" "${P[@]}" --logits-out "$TMP/a.npy" >/dev/null 2>&1
if "$BIN" -m "$TMP/mis" "${P[@]}" --logits-out "$TMP/b.npy" >/dev/null 2>"$TMP/err" && cmp -s "$TMP/a.npy" "$TMP/b.npy"; then
    ok "misaligned safetensors data: same logits as the aligned file"
else bad "misaligned safetensors data: $(head -c 300 "$TMP/err")"; fi

# ---- FIFOs where a file is required: one line, no hang
mkfifo "$TMP/fifo.txt"
one_line "FIFO as the prompt file" 'fifo\.txt: not a regular file' "$BIN" -m "$SRC" -n 2 "$TMP/fifo.txt"
mkdir -p "$TMP/fifocfg"; cp "$SRC/model.safetensors" "$SRC/tokenizer.model" "$TMP/fifocfg/"; mkfifo "$TMP/fifocfg/config.json"
one_line "FIFO as config.json" 'config\.json: not a regular file' "$BIN" -m "$TMP/fifocfg" "${P[@]}"
one_line "FIFO as --policy-config" 'fifo\.txt: policy preset is not a regular file' "$BIN" -m "$SRC" "${P[@]}" --policy-config "$TMP/fifo.txt"

# ---- a 13 MB prompt is refused by its size before it is tokenized
head -c 13000000 /dev/zero | tr '\0' 'a' >"$TMP/huge.txt"
t0=$(date +%s%N)
one_line "13 MB prompt refused before tokenizing" 'at least [0-9]+ tokens, longer than the context of 512' "$BIN" -m "$SRC" -n 2 "$TMP/huge.txt"
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$ms" -lt 3000 ] && ok "13 MB prompt refused in ${ms} ms" || bad "13 MB prompt took ${ms} ms to refuse"
# ... while a budgeted shifted chunked run may still take a long prompt
python3 -c "print('Once upon a time there was a cat. ' * 120)" >"$TMP/long.txt"
if "$BIN" -m "$SRC" -t 1 -n 4 --policy streaming --budget 100 --rope shifted --prefill-chunk 64 "$TMP/long.txt" >/dev/null 2>"$TMP/err"; then
    ok "a prompt longer than the context still runs with --rope shifted --prefill-chunk"
else bad "long prompt with --rope shifted: $(head -c 300 "$TMP/err")"; fi

# ---- NUL byte in the prompt: refused, not cut silently
printf 'Once upon\0 a time' >"$TMP/nul.txt"
one_line "NUL byte in the prompt" 'nul\.txt: the prompt contains a NUL byte at offset 9' "$BIN" -m "$SRC" -n 2 "$TMP/nul.txt"

# ---- budgets: 1.5 is an error; below the protected minimum: raised, said on stderr and in --json
one_line "--budget 1.5" '--budget: 1\.5 is neither a fraction' "$BIN" -m "$SRC" "${P[@]}" --policy h2o --budget 1.5
for case in "streaming --sink 4 --budget 3" "buzz --budget 3" "scissorhands --budget 3"; do
    set -- $case
    pol=$1; shift
    "$BIN" -m "$SRC" "${P[@]}" --policy $pol "$@" >/dev/null 2>"$TMP/err"
    "$BIN" -m "$SRC" "${P[@]}" --policy $pol "$@" --json >"$TMP/j.json" 2>/dev/null
    if grep -q "the budget's 3 was raised to" "$TMP/err" &&
       python3 -c 'import json,sys; k=json.load(open(sys.argv[1]))["kv"]; sys.exit(0 if k["capacity_raised"] and k["capacity"] > k["budget_capacity"] == 3 else 1)' "$TMP/j.json"; then
        ok "$pol $*: capacity raised, noted ($(grep -o 'raised to [0-9]*' "$TMP/err"))"
    else bad "$pol $*: no raise reported: $(cat "$TMP/err")"; fi
done

# ---- subgen_stream's sketch is part of the cache: counted in the KV bytes
"$BIN" -m "$SRC" -t 1 -p "Once upon a time there was a little girl named Lily who" -n 40 \
    --policy subgen_stream --budget 0.3 --json >"$TMP/ss.json" 2>/dev/null
if python3 - "$TMP/ss.json" <<'PY'
import json, sys
k = json.load(open(sys.argv[1]))["kv"]; j = json.load(open(sys.argv[1]))
bpt = j["kv"]["full_bytes"] / (j["n_prompt_tokens"] + j["n_generated_tokens"] - 1)
assert k["sketch_bytes"] > 0, k
assert k["allocated_bytes"] >= k["sketch_bytes"] + k["capacity"] * bpt, k
assert abs(k["peak_bytes"] - (k["live_peak_tokens"] * bpt + k["sketch_bytes"])) < 1, (k, bpt)
# 2 clusters x (centre + 8 samples) + 4 value-norm samples (k and v) in f32 + bookkeeping, per (layer, head)
d = 8; per = 2 * (d * 4 + 8 + 8 * d * 4 + 8 * 4) + 4 * (2 * d * 4 + 8 + 4)
assert k["sketch_bytes"] == 5 * 4 * per, (k["sketch_bytes"], 20 * per)
PY
then ok "subgen_stream: sketch bytes counted (its f32 arrays and bookkeeping, in peak and allocated bytes)"
else bad "subgen_stream sketch bytes: $(head -c 400 "$TMP/ss.json")"; fi

# ---- --logits-out equal to an input
cp "$TMP/long.txt" "$TMP/p.txt"
one_line "--logits-out = the prompt file" 'refusing to overwrite' "$BIN" -m "$SRC" -n 2 "$TMP/p.txt" --logits-out "$TMP/p.txt"
cmp -s "$TMP/long.txt" "$TMP/p.txt" && ok "the prompt file is untouched" || bad "the prompt file was changed"

# ---- hidden_act other than silu, other architectures
for kv in '"hidden_act": "gelu"' '"model_type": "gemma"' '"num_local_experts": 8' '"model_type": "mistral", "sliding_window": 64'; do
    d="$TMP/cfg$RANDOM"; mkdir -p "$d"; cp "$SRC/model.safetensors" "$SRC/tokenizer.model" "$d/"
    python3 - "$SRC/config.json" "$d/config.json" "{$kv}" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c.update(json.loads(sys.argv[3])); json.dump(c, open(sys.argv[2], "w"))
PY
    one_line "config $kv refused" 'config\.json: .*(not supported)' "$BIN" -m "$d" "${P[@]}"
done

# ---- a file-size limit: the write fails with its file named (no silent SIGXFSZ death)
( ulimit -f 8; "$BIN" -m "$SRC" -t 1 -p "Once upon a time" -n 40 --logits-out "$TMP/big.npy" >/dev/null 2>"$TMP/err" ); rc=$?
if [ $rc -ne 0 ] && [ $rc -lt 128 ] && grep -q "big\.npy: write failed" "$TMP/err"; then ok "ulimit -f: $(head -1 "$TMP/err")"
else bad "ulimit -f: exit $rc: $(head -c 300 "$TMP/err")"; fi

# ---- a prompt over 2k tokens, unchunked, stderr a terminal: a prefill progress line by layer
d="$TMP/ctx4k"; mkdir -p "$d"; cp "$SRC/model.safetensors" "$SRC/tokenizer.model" "$d/"
python3 - "$SRC/config.json" "$d/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["max_position_embeddings"] = 4096; json.dump(c, open(sys.argv[2], "w"))
PY
python3 -c 'print("Once upon a time there was a cat. " * 300)' >"$TMP/long4k.txt"
script -qec "$BIN -m $d -t 1 -f $TMP/long4k.txt -n 2" /dev/null >"$TMP/tty.out" 2>&1
if grep -q "prefill [0-9]* tokens: layer 5/5" "$TMP/tty.out"; then ok "prefill progress on a terminal for a prompt > 2k tokens"
else bad "no prefill progress line: $(tail -c 300 "$TMP/tty.out")"; fi
"$BIN" -m "$d" -t 1 -f "$TMP/long4k.txt" -n 2 >/dev/null 2>"$TMP/err"
grep -q "prefill .* layer" "$TMP/err" && bad "progress line written to a non-terminal" || ok "no progress line when stderr is not a terminal"

# ---- a new user's first minutes
one_line "did you mean --policy" "did you mean '--policy'" "$BIN" -m "$SRC" "${P[@]}" --polcy buzz
one_line "did you mean buzz" "did you mean 'buzz'" "$BIN" -m "$SRC" "${P[@]}" --policy buz
"$BIN" -m "$SRC" "${P[@]}" --budget 0.3 >/dev/null 2>"$TMP/err"
grep -q -- "--budget without --policy" "$TMP/err" && ok "--budget without --policy warns" || bad "--budget without --policy: silent"
printf 'Once upon a time\n' >"$TMP/nl.txt"
a=$("$BIN" -m "$SRC" -t 1 -f "$TMP/nl.txt" -n 8 --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["n_prompt_tokens"])')
b=$("$BIN" -m "$SRC" -t 1 -p "Once upon a time" -n 8 --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["n_prompt_tokens"])')
[ -n "$a" ] && [ "$a" = "$b" ] && ok "-f drops one trailing newline ($a tokens, as -p)" || bad "-f: $a tokens vs -p $b"
n=$("$BIN" -m "$SRC" -t 1 -p "Once upon a time" -n 100 -c 20 --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["n_prompt_tokens"] + d["n_generated_tokens"])')
[ -n "$n" ] && [ "$n" -le 21 ] && ok "-c 20 caps prompt + generated positions ($n)" || bad "-c 20: $n positions"
"$BIN" -m "$SRC" "${P[@]}" -ngl 99 >/dev/null 2>"$TMP/err" && grep -q "llama.cpp's layer offload" "$TMP/err" && ok "-ngl accepted with a note" || bad "-ngl: $(cat "$TMP/err")"
h=$("$BIN" --help | wc -l); [ "$h" -lt 60 ] && ok "--help is $h lines (< 60)" || bad "--help is $h lines"
"$BIN" --help-all | grep -q -- "--kv-mem-limit" && ok "--help-all lists every option" || bad "--help-all misses --kv-mem-limit"
d="$TMP/toko"; mkdir -p "$d"; echo '{}' >"$d/tokenizer.json"
one_line "a folder with only tokenizer.json" 'no config\.json: not a Hugging Face model folder \(it has a tokenizer\.json only' "$BIN" -m "$d" "${P[@]}"

# ---- the OpenMP wait chosen at start (cli/runtime.c): the user's setting wins; with every CPU
# busy (another process per CPU) a multi-threaded run waits passively instead of spinning
w=$(OMP_WAIT_POLICY=active "$BIN" -m "$SRC" -t 2 -p "Once" -n 2 --json 2>/dev/null | jq -r .omp_wait)
[ "$w" = active ] && ok "OMP_WAIT_POLICY set by the user is kept ($w)" || bad "OMP_WAIT_POLICY=active became '$w'"
w=$(GOMP_SPINCOUNT=1000 "$BIN" -m "$SRC" -t 2 -p "Once" -n 2 --json 2>/dev/null | jq -r .omp_wait)
[ "$w" = spin ] && ok "GOMP_SPINCOUNT set by the user is kept (no passive override)" || bad "GOMP_SPINCOUNT=1000 gave '$w'"
busy=()
for _ in $(seq "$(nproc)"); do sh -c 'while :; do :; done' & busy+=($!); done
sleep 0.3
w=$("$BIN" -m "$SRC" -t 2 -p "Once" -n 2 --json 2>/dev/null | jq -r .omp_wait)
kill "${busy[@]}" 2>/dev/null; wait "${busy[@]}" 2>/dev/null
[ "$w" = passive ] && ok "every CPU busy: 2 threads wait passively" || bad "every CPU busy: omp_wait '$w' (want passive)"
w=$("$BIN" -m "$SRC" -t 1 -p "Once" -n 2 --json 2>/dev/null | jq -r .omp_wait)
case "$w" in spin|passive) ok "the wait is always chosen ($w here)";; *) bad "omp_wait '$w'";; esac

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
