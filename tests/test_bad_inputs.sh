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

# The case blocks: a fresh copy of the model (fresh NAME, in $d) with one change, then check.
# st_case NAME WHAT PATTERN OP ARGS...    model.safetensors edited by st_edit OP ARGS
# cfg_case NAME WHAT PATTERN KEY JSON     config.json's KEY set to the JSON value
# dir_case NAME WHAT PATTERN SHELL        SHELL (eval'd; "$d" is the copy) makes the change
st_case() {
    local d
    d="$(fresh "$1")"
    st_edit "$d/model.safetensors" "${@:4}"
    check "$2" "$3" -m "$d" "${P[@]}"
}
cfg_case() {
    local d
    d="$(fresh "$1")"
    cfg_set "$d/config.json" "$4" "$5"
    check "$2" "$3" -m "$d" "${P[@]}"
}
dir_case() {
    local d
    d="$(fresh "$1")"
    eval "$4"
    check "$2" "$3" -m "$d" "${P[@]}"
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

# files the cases share: a prompt, a folder where a file is expected, a file where a folder is,
# and ~3000 characters of TinyStories-style text (more tokens than the context of 512)
echo "Once upon a time" >"$TMP/prompt.txt"
mkdir -p "$TMP/prompt-dir"
echo "not a folder" >"$TMP/model-is-a-file"
python3 -c 'import sys
s = ("Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine. "
     "One day, she saw a big red ball in the park and ran to get it. ")
open(sys.argv[1], "w").write(s * 20)' "$TMP/long.txt"

# ---------------------------------------------------------------------------------------------
# the cases, by theme: tests/bad_inputs/*.sh, sourced here (they use check, st_case, cfg_case,
# dir_case, fresh, st_edit, cfg_set, P, GOOD, SRC, ST_SIZE, HLEN)
for f in tests/bad_inputs/*.sh; do
    echo "--- $f"
    # shellcheck source=/dev/null
    . "$f"
done

echo
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
