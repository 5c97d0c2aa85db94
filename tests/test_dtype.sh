#!/usr/bin/env bash
# Weight dtypes and SIMD kernel families end to end.
#   * --dtype bf16 / f16 on stories260K (an F32 checkpoint; the KV cache then defaults to f16
#     too, --kv-dtype auto): logits within a relative error of
#     the F32 run (max|d|/max|f32| per row ≤ 2e-2 for bf16, 3e-3 for f16: bf16 keeps 8
#     mantissa bits, f16 11) but not equal to it (the weights really were converted: ≥ 1e-4),
#     and the same greedy tokens;
#   * --dtype with a bad value: exit 2 and one line naming the flag;
#   * every SIMD family this CPU runs (LLM_SIMD=scalar, avx2, avx512): the Hugging Face
#     reference fixtures of the F32, F16 and BF16 checkpoints (tests/test_hf_logits.sh), which
#     run natively in their file dtype, and --dtype f32 on the F16/BF16 ones.
set -uo pipefail
cd "$(dirname "$0")/.."
LLM_SHARED=${LLM_SHARED:-../shared}
M=$LLM_SHARED/models/stories260K
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
if [ ! -f "$M/config.json" ]; then echo "SKIP: $M not found"; echo "0 passed, 0 failed"; exit 0; fi

prompt="Once upon a time, there was a little girl named Lily"
for d in f32 bf16 f16; do
    timeout 120 ./llm-run -m "$M" -p "$prompt" -n 24 --dtype "$d" --logits-out "$tmp/$d.npy" --json >"$tmp/$d.json" 2>"$tmp/$d.err" ||
        bad "--dtype $d: exit $? ($(head -1 "$tmp/$d.err"))"
done
for spec in "bf16 2e-2" "f16 3e-3"; do
    set -- $spec
    if msg=$(python3 - "$tmp" "$1" "$2" <<'PY'
import json, sys
import numpy as np
d, dt, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
a, b = np.load(d + "/f32.npy"), np.load(d + "/%s.npy" % dt)
ta, tb = json.load(open(d + "/f32.json"))["tokens"], json.load(open(d + "/%s.json" % dt))["tokens"]
if a.shape != b.shape: sys.exit("shapes %s vs %s" % (a.shape, b.shape))
err = np.abs(a - b).max(axis=1) / np.abs(a).max(axis=1)
if ta != tb: sys.exit("greedy tokens differ: %s vs %s" % (tb, ta))
if err.max() > tol: sys.exit("max|d|/max|f32| = %.3g > %g (row %d)" % (err.max(), tol, err.argmax()))
if err.max() < 1e-4: sys.exit("logits equal to F32 (%.3g): the weights were not converted" % err.max())
print("max|d|/max|f32| = %.3g over %d rows, %d tokens equal" % (err.max(), len(err), len(ta)))
PY
    ); then ok "--dtype $1 on stories260K vs F32: $msg"; else bad "--dtype $1 on stories260K vs F32: $msg"; fi
done

out=$(./llm-run -m "$M" -p x --dtype f8 2>&1); rc=$?
if [ $rc -eq 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && [[ "$out" == *--dtype* ]]; then
    ok "--dtype f8: exit 2, '$out'"
else
    bad "--dtype f8: exit $rc, '$out'"
fi

for fam in scalar avx2 avx512; do
    # a family the CPU cannot run is reported by llm-run on stderr; skip it here
    why=$(LLM_SIMD=$fam ./llm-run -m "$M" -p x -n 1 2>&1 >/dev/null)
    if [[ "$why" != *"not supported"* ]]; then
        if out=$(LLM_SIMD=$fam timeout 600 tests/test_hf_logits.sh stories260K syn-gqa-f32 syn-mha-f16 syn-bf16-sharded syn-hd128-llama2tok 2>&1); then
            ok "LLM_SIMD=$fam: HF fixtures (F32, F16, BF16 natively): $(printf '%s\n' "$out" | tail -1)"
        else
            bad "LLM_SIMD=$fam: HF fixtures:"; printf '%s\n' "$out" | grep -v '^ok' | sed 's/^/    /'
        fi
    else
        echo "skip LLM_SIMD=$fam: not supported by this CPU"
    fi
done
# F16/BF16 checkpoints converted to F32 on load still match their references
cat >"$tmp/llm-run-f32" <<EOF2
#!/usr/bin/env bash
exec "$PWD/llm-run" --dtype f32 "\$@"
EOF2
chmod +x "$tmp/llm-run-f32"
if out=$(LLM_RUN="$tmp/llm-run-f32" timeout 600 tests/test_hf_logits.sh syn-mha-f16 syn-bf16-sharded 2>&1); then
    ok "--dtype f32 on the F16/BF16 fixtures: $(printf '%s\n' "$out" | tail -1)"
else
    bad "--dtype f32 on the F16/BF16 fixtures:"; printf '%s\n' "$out" | grep -v '^ok' | sed 's/^/    /'
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
