#!/usr/bin/env bash
# Layering (issue 20): scripts/deps.sh passes on the tree, and fails on a copy of the tree with an
# upward include planted (kernels → model), a sideways one (tokenizer → model) and a cycle, so
# the check can fail. Ends with "N passed, M failed".
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
pass=0; fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
if out=$("$ROOT/scripts/deps.sh" --quiet); then ok "the tree's includes point down ($out)"
else bad "deps.sh on the tree:"; echo "$out"; fi
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
plant() { # NAME FILE LINE: copy the tree, add LINE to FILE, expect deps.sh to fail naming FILE
    rm -rf "$TMP/t"; mkdir -p "$TMP/t"
    (cd "$ROOT" && cp -r scripts main.c kernels eviction model tokenizer eval "$TMP/t/" 2>/dev/null)
    [ -d "$ROOT/cli" ] && cp -r "$ROOT/cli" "$TMP/t/"
    echo "$3" >> "$TMP/t/$2"
    if out=$("$TMP/t/scripts/deps.sh" --quiet 2>&1); then bad "$1: not caught"
    elif grep -q "$2" <<<"$out" || [[ "$1" == cycle* ]]; then ok "$1 caught: $(head -1 <<<"$out")"
    else bad "$1: failed without naming $2: $out"; fi
}
plant "upward kernels -> model" kernels/cpu/ops.c '#include "model/model.h"'
plant "upward eviction -> eval" eviction/kv_cache.c '#include "eval/eval.h"'
plant "sideways tokenizer -> model" tokenizer/chat.c '#include "model/model.h"'
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
