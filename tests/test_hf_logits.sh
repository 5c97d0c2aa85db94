#!/usr/bin/env bash
# llm-run against the Hugging Face transformers reference (tests/fixtures/hf, made by
# scripts/make_hf_fixtures.py).
#
#   tests/test_hf_logits.sh [NAME...]      run every fixture (or the named ones)
#   tests/test_hf_logits.sh --self-test    check the harness itself with a fake llm-run
#
# For each fixture NAME.json + NAME.logits.npy:
#   * the model folder is $BUILD/synthetic/NAME for synthetic models (written by
#     scripts/make_synthetic_models.py when missing, and checked against the sha256 of the
#     weight files the fixture was made from) or $LLM_SHARED/models/NAME for real ones;
#   * runs  $LLM_RUN -m DIR -p PROMPT -n 8 --temp 0 --logits-out OUT.npy --json
#     (OUT.npy: float32 [rows][vocab], all prompt positions then one row per decode step,
#     N + 8 - 1 rows; stdout: {"tokens": [generated ids], ...});
#   * the generated ids must equal the fixture's, and every row must satisfy
#     max|out - ref| / max|ref| <= HF_TOL (default 1e-4: float32 compute), when the run's KV
#     cache is f32 (--json kv.kv_dtype; the default for F32 checkpoints). The 16-bit checkpoints
#     run with the default f16 cache (--kv-dtype auto), whose K/V rounding (2^-11) the reference
#     does not have: their rows get HF_KV16_TOL (default 2e-3, about 4 units; measured up to
#     1.1e-3), a bf16 cache 8 times that.
# Prints the worst error and its row per fixture and ends with "N passed, M failed".
#
# Environment: BUILD (default build), LLM_RUN (default ./llm-run), LLM_SHARED (default
# ../shared), HF_TOL. Needs python3 with numpy.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=${BUILD:-build}
LLM_RUN=${LLM_RUN:-./llm-run}
LLM_SHARED=${LLM_SHARED:-$ROOT/../shared}
HF_TOL=${HF_TOL:-1e-4}
HF_KV16_TOL=${HF_KV16_TOL:-2e-3}
FIX=${HF_FIXTURES:-tests/fixtures/hf}
export LLM_SHARED

die() { echo "test_hf_logits: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

command -v python3 >/dev/null || die "python3 not found (needed with numpy to compare logits)"
python3 -c "import numpy" 2>/dev/null ||
    die "python3 cannot import numpy; install it (pip install numpy / apt-get install python3-numpy)"

# ------------------------------------------------------------------------------ self-test
if [ "${1:-}" = "--self-test" ]; then
    shift
    ST=$(mktemp -d) || exit 1
    trap 'rm -rf "$ST"' EXIT
    # A fake llm-run that answers from the fixture (optionally damaged, see FAKE_MODE).
    cat > "$ST/fake-llm-run" <<'EOF'
#!/usr/bin/env python3
import json, os, sys
import numpy as np
a = sys.argv[1:]
def opt(k):
    return a[a.index(k) + 1]
assert opt("-n") == "8" and opt("--temp") == "0" and "--json" in a, a
name = os.path.basename(os.path.normpath(opt("-m")))
fix = os.environ["HF_FIXTURES"]
meta = json.load(open(os.path.join(fix, name + ".json")))
assert opt("-p") == meta["prompt"], "prompt not passed through intact: %r" % opt("-p")
assert os.path.isfile(os.path.join(opt("-m"), "config.json")), "no model folder"
x = np.load(os.path.join(fix, meta["logits_file"])).astype(np.float32)
toks = list(meta["generated_ids"])
mode = os.environ.get("FAKE_MODE", "exact")
rng = np.random.default_rng(7)
scale = np.abs(x).max(axis=1, keepdims=True)
if mode == "noise":        # within tolerance everywhere: 0.3 * 1e-4 of each row's max
    x = x + (rng.uniform(-0.3e-4, 0.3e-4, x.shape) * scale).astype(np.float32)
elif mode == "perturb":    # one element off by 2e-4 of its row's max, in a decode row
    r = x.shape[0] - 3
    x[r, 5] += 2e-4 * scale[r, 0]
elif mode == "token":
    toks[4] = (toks[4] + 1) % meta["vocab"]
elif mode == "rows":       # one row short
    x = x[:-1]
elif mode == "f64":
    x = x.astype(np.float64)
elif mode == "crash":
    sys.exit("fake llm-run: crashing on purpose")
np.save(opt("--logits-out"), x)
print(json.dumps({"tokens": toks, "n_prompt": meta["n_prompt"]}))
EOF
    chmod +x "$ST/fake-llm-run"
    ok=0 bad=0
    args=("$@")
    # expect pass|fail MODE [REGEX]: every fixture must pass, or every fixture must fail with
    # a message matching REGEX.
    expect() {
        local want=$1 mode=$2 re=${3:-.} out rc summary n_fail n_pass n_match
        out=$(FAKE_MODE=$mode LLM_RUN="$ST/fake-llm-run" HF_FIXTURES="$FIX" "$0" "${args[@]}" 2>&1)
        rc=$?
        summary=$(printf '%s\n' "$out" | tail -n 1)
        n_pass=$(printf '%s\n' "$out" | grep -c '^ok ')
        n_fail=$(printf '%s\n' "$out" | grep -c '^FAIL ')
        n_match=$(printf '%s\n' "$out" | grep '^FAIL ' | grep -Ec -- "$re")
        if printf '%s\n' "$summary" | grep -Eq '^[0-9]+ passed, [0-9]+ failed$' &&
           { { [ "$want" = pass ] && [ $rc -eq 0 ] && [ "$n_fail" -eq 0 ] && [ "$n_pass" -gt 0 ]; } ||
             { [ "$want" = fail ] && [ $rc -ne 0 ] && [ "$n_pass" -eq 0 ] && [ "$n_fail" -gt 0 ] &&
               [ "$n_match" -eq "$n_fail" ]; }; }; then
            echo "self-test ok: FAKE_MODE=$mode -> $want ($summary)"; ok=$((ok + 1)); return
        fi
        echo "self-test FAILED: FAKE_MODE=$mode expected $want${3:+ matching /$re/}, got rc=$rc:"
        printf '%s\n' "$out" | sed 's/^/    /'
        bad=$((bad + 1))
    }
    expect pass exact
    expect pass noise
    expect fail perturb 'rows above'
    expect fail token 'first difference at step 4'
    expect fail rows 'logits shape'
    expect fail f64 'dtype float64'
    expect fail crash 'exited with'
    echo "$ok passed, $bad failed"
    [ $bad -eq 0 ]
    exit
fi

# ---------------------------------------------------------------------------------- tests
[ -x "$LLM_RUN" ] || die "$LLM_RUN not found or not executable (build it with make, or set LLM_RUN)"
SYN=$BUILD/synthetic
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT

if [ $# -gt 0 ]; then
    names=("$@")
else
    names=()
    for j in "$FIX"/*.json; do [ -e "$j" ] && names+=("$(basename "$j" .json)"); done
fi
[ ${#names[@]} -gt 0 ] || die "no fixtures in $FIX"

# fixture_info JSON PROMPT_FILE -> prints "synthetic model_dir" and writes the prompt (UTF-8,
# no trailing newline) to PROMPT_FILE
fixture_info() {
    python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); open(sys.argv[2],"w",encoding="utf-8").write(m["prompt"]); print(str(m["synthetic"]).lower(), m["model_dir"])' "$1" "$2"
}

# weights_match JSON DIR -> exit 0 when the weight files' sha256 equal the fixture's
weights_match() {
    python3 - "$1" "$2" <<'EOF'
import hashlib, json, os, sys
meta = json.load(open(sys.argv[1]))
bad = []
for f, want in meta["weights_sha256"].items():
    p = os.path.join(sys.argv[2], f)
    if not os.path.isfile(p):
        bad.append(f + " missing")
        continue
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    if h.hexdigest() != want:
        bad.append(f + " sha256 differs")
if bad:
    print("; ".join(bad))
    sys.exit(1)
EOF
}

pass=0 failn=0
for name in "${names[@]}"; do
    json=$FIX/$name.json
    if [ ! -f "$json" ] || [ ! -f "$FIX/$name.logits.npy" ]; then
        echo "FAIL $name: no fixture $json / .logits.npy"; failn=$((failn + 1)); continue
    fi
    info=$(fixture_info "$json" "$TMP/$name.prompt") ||
        { echo "FAIL $name: cannot read $json"; failn=$((failn + 1)); continue; }
    synthetic=${info%% *}
    if [ "$synthetic" = true ]; then
        dir=$SYN/$name
        if [ ! -f "$dir/config.json" ]; then
            python3 scripts/make_synthetic_models.py "$SYN" --only "$name" >/dev/null ||
                { echo "FAIL $name: scripts/make_synthetic_models.py failed"; failn=$((failn + 1)); continue; }
        fi
        if ! why=$(weights_match "$json" "$dir"); then  # stale folder: regenerate once
            python3 scripts/make_synthetic_models.py "$SYN" --only "$name" >/dev/null
            if ! why=$(weights_match "$json" "$dir"); then
                echo "FAIL $name: generated weights differ from the fixture's ($why): the generator" \
                     "changed; rerun scripts/make_hf_fixtures.py"
                failn=$((failn + 1)); continue
            fi
        fi
    else
        dir=${info#* }
        dir=${dir//\$LLM_SHARED/$LLM_SHARED}
        if ! why=$(weights_match "$json" "$dir"); then
            echo "FAIL $name: $dir does not hold the weights the fixture was made from ($why)"
            failn=$((failn + 1)); continue
        fi
    fi
    prompt=$(cat "$TMP/$name.prompt")
    out=$TMP/$name.npy
    "$LLM_RUN" -m "$dir" -p "$prompt" -n 8 --temp 0 --logits-out "$out" --json \
        >"$TMP/$name.stdout" 2>"$TMP/$name.stderr"
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "FAIL $name: llm-run exited with $rc"; tail -n 5 "$TMP/$name.stderr" | sed 's/^/    /'
        failn=$((failn + 1)); continue
    fi
    if python3 - "$json" "$FIX/$name.logits.npy" "$out" "$TMP/$name.stdout" "$HF_TOL" "$HF_KV16_TOL" <<'EOF'
import json, sys
import numpy as np
meta_path, ref_path, out_path, stdout_path, tol, tol16 = sys.argv[1:7]
tol = float(tol)
meta = json.load(open(meta_path))
name, N = meta["name"], meta["n_prompt"]
problems = []

text = open(stdout_path, encoding="utf-8", errors="replace").read()
doc = None
try:
    doc = json.loads(text)
except ValueError:
    for line in reversed(text.splitlines()):
        if line.lstrip().startswith("{"):
            try:
                doc = json.loads(line)
                break
            except ValueError:
                pass
if not isinstance(doc, dict) or "tokens" not in doc:
    problems.append("no JSON object with \"tokens\" on stdout")
else:   # the tolerance follows the run's cache dtype
    kvdt = doc.get("kv", {}).get("kv_dtype", "f32") if isinstance(doc.get("kv"), dict) else "f32"
    if kvdt != "f32":   # the cache rounds K/V to 16 bits; the reference does not
        tol = max(tol, float(tol16) * (8 if kvdt == "bf16" else 1))
if isinstance(doc, dict) and "tokens" in doc and list(doc["tokens"]) != meta["generated_ids"]:
    got, want = list(doc["tokens"]), meta["generated_ids"]
    k = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), min(len(got), len(want)))
    problems.append("tokens %s, expected %s (first difference at step %d)" % (got, want, k))

ref = np.load(ref_path)
worst = None
try:
    out = np.load(out_path, allow_pickle=False)
except Exception as e:
    out = None
    problems.append("cannot read %s: %s" % (out_path, e))
if out is not None:
    if out.dtype != np.float32:
        problems.append("logits dtype %s, expected float32" % out.dtype)
    if out.shape != ref.shape:
        problems.append("logits shape %s, expected %s (N=%d prompt rows + %d decode rows)"
                        % (out.shape, ref.shape, N, ref.shape[0] - N))
    else:
        a, b = out.astype(np.float64), ref.astype(np.float64)
        err = np.abs(a - b).max(axis=1) / np.abs(b).max(axis=1)
        err[~np.isfinite(a).all(axis=1)] = np.inf
        r = int(err.argmax())
        where = "prompt pos %d" % r if r < N else "decode step %d" % (r - N + 1)
        worst = "worst max|d|/max|ref| = %.3g at row %d (%s)" % (err[r], r, where)
        over = np.nonzero(err > tol)[0]
        if len(over):
            problems.append("%d of %d rows above %g, first at row %d (%.3g)"
                            % (len(over), len(err), tol, over[0], err[over[0]]))

if problems:
    print("FAIL %s: %s%s" % (name, "; ".join(problems), ("; " + worst) if worst else ""))
    sys.exit(1)
print("ok   %s: %s (tolerance %g); %d/%d tokens match" % (name, worst, tol, len(meta["generated_ids"]), len(meta["generated_ids"])))
EOF
    then pass=$((pass + 1)); else failn=$((failn + 1)); fi
done

echo "$pass passed, $failn failed"
[ $failn -eq 0 ]
