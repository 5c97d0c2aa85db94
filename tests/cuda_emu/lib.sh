# tests/cuda_emu/lib.sh — helpers of tests/test_cuda_emu.sh (sourced): teacher-forced parity runs of
# the emulated GPU against the CPU backend, counters of the emulator, pass/fail bookkeeping.
# Expects: EMU (build/emu/llm-run-emu), CPU (a CPU llm-run), TMP, pass, failn.

ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; failn=$((failn + 1)); }
finish() { echo "$pass passed, $failn failed"; [ "$failn" -eq 0 ]; exit $?; }

json_tokens() { python3 -c 'import json,sys; print(",".join(map(str, json.load(open(sys.argv[1]))["tokens"])))' "$1"; }
json_field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["kv"]["evictions"] if sys.argv[2]=="ev" else d[sys.argv[2]])' "$1" "$2"; }

# parity TAG MODEL REF_MODEL MODE N -- ARGS...: the CPU generates N tokens greedily on MODEL (its
# tokens: the sequence both backends are then teacher-forced on, --force-ids); the emulated GPU
# runs MODEL, the CPU runs REF_MODEL (MODEL itself, or its exact F32 twin) on the same ids; their
# --logits-out rows are compared by parity.py MODE (f32 | lowp), and the eviction counts must
# agree (same decisions on the same sequence) when REF_MODEL is MODEL. A run that evicts and
# misses f32 (after the scalar-kernel retry) may pass as one decision flip at a near-tie: f32 up
# to the flip, lowp everywhere (parity.py --allow-flip; the line says "a decision flip at row").
parity() {
    local tag=$1 model=$2 ref=$3 mode=$4 n=$5
    shift 6
    local args=(--temp 0 -n "$n" --json "$@")
    if ! timeout 600 "$CPU" -m "$model" "${args[@]}" --device cpu >"$TMP/t.json" 2>"$TMP/te"; then
        bad "$tag: CPU run: $(head -2 "$TMP/te")"; return
    fi
    local toks; toks=$(json_tokens "$TMP/t.json")
    [ -n "$toks" ] || toks=1
    if ! timeout 600 "$CPU" -m "$ref" "${args[@]}" --device cpu --force-ids "$toks" --logits-out "$TMP/c.npy" \
        >"$TMP/c.json" 2>"$TMP/ce"; then
        bad "$tag: CPU reference run: $(head -2 "$TMP/ce")"; return
    fi
    if ! timeout 900 "$EMU" -m "$model" "${args[@]}" --device cuda --force-ids "$toks" --logits-out "$TMP/g.npy" \
        >"$TMP/g.json" 2>"$TMP/ge"; then
        bad "$tag: emulated GPU run: $(head -2 "$TMP/ge")"; return
    fi
    local msg evc evg alt=""
    evc=$(json_field "$TMP/c.json" ev) evg=$(json_field "$TMP/g.json" ev)
    if ! msg=$(python3 tests/cuda_emu/parity.py "$TMP/g.npy" "$TMP/c.npy" "$mode") && [ "$ref" = "$model" ]; then
        # a policy decision at a near-tie can go either way with float rounding: the CPU's own
        # kernel families disagree there too. The GPU must then equal the scalar family.
        if LLM_SIMD=scalar timeout 600 "$CPU" -m "$ref" "${args[@]}" --device cpu --force-ids "$toks" \
            --logits-out "$TMP/c.npy" >"$TMP/c.json" 2>"$TMP/ce" &&
            msg=$(python3 tests/cuda_emu/parity.py "$TMP/g.npy" "$TMP/c.npy" "$mode"); then
            alt=" (against the CPU's scalar kernels: the default family decides a near-tie the other way)"
            evc=$(json_field "$TMP/c.json" ev)
        fi
    fi
    local flip=""
    if [ "$mode" = f32 ] && [ "$ref" = "$model" ] && [ "$evg" != 0 ] &&
        ! python3 tests/cuda_emu/parity.py "$TMP/g.npy" "$TMP/c.npy" f32 >/dev/null; then
        # still over: one eviction decided the other way at a near-tie? (parity.py --allow-flip)
        msg=$(python3 tests/cuda_emu/parity.py "$TMP/g.npy" "$TMP/c.npy" f32 --allow-flip) && flip=--allow-flip
    fi
    if python3 tests/cuda_emu/parity.py "$TMP/g.npy" "$TMP/c.npy" "$mode" $flip >/dev/null &&
        { [ "$ref" != "$model" ] || [ "$evc" = "$evg" ]; }; then
        ok "$tag: $msg, $evg evictions$alt"
    else
        bad "$tag: $msg, evictions cpu $evc gpu $evg"
    fi
}

# pjob FUNC ARGS...: `FUNC ARGS...` in the background, at most EMU_JOBS at a time (default: the
# CPUs this process may use). The emulator runs on one OS thread, so two emulated runs on two
# cores take the time of one. Each job has its own TMP; its lines are printed, and its ok/FAIL
# lines counted, in the order the jobs were started (pdrain prints the finished ones at the head
# of the queue, pflush waits for all). A job sees the environment of the moment it started.
# OMP_WAIT_POLICY=passive: the CPU runs' OpenMP threads sleep instead of spinning while they
# wait, so two jobs' threads do not take each other's cores. pparity ARGS...: pjob parity ARGS...
EMU_JOBS=${EMU_JOBS:-$(nproc 2>/dev/null || echo 1)}
pqueue=()
pjob() {
    local d; d=$(mktemp -d "$TMP/job.XXXXXX") || { bad "$1: mktemp"; return; }
    ( TMP=$d; export OMP_WAIT_POLICY=passive; pass=0 failn=0; "$@" >"$d/out" 2>&1; : >"$d/done" ) </dev/null &
    pqueue+=("$d")
    while [ "$(jobs -rp | wc -l)" -ge "$EMU_JOBS" ]; do wait -n; done
    pdrain
}
pparity() { pjob parity "$@"; }
pdrain() {
    local d line
    while [ ${#pqueue[@]} -gt 0 ] && [ -f "${pqueue[0]}/done" ]; do
        d=${pqueue[0]}
        while IFS= read -r line; do
            case $line in "ok   "*) pass=$((pass + 1)) ;; "FAIL "*) failn=$((failn + 1)) ;; esac
            printf '%s\n' "$line"
        done <"$d/out"
        rm -rf "$d"
        pqueue=("${pqueue[@]:1}")
    done
}
pflush() {
    wait
    local d
    for d in "${pqueue[@]}"; do [ -f "$d/done" ] || bad "job $d ended without finishing"; : >"$d/done"; done
    pdrain
}

# counts FILE KEY: a counter of an EMU_STATS file
counts() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# per_token TAG N1 N2 ARGS...: the emulated GPU generates N1 then N2 tokens (same prompt, same
# capacities: give --budget in tokens); prints "syncs d2h kernels graph_launches" per decode
# step, from the difference of the two runs' counters
per_token() {
    local n1=$1 n2=$2
    shift 2
    EMU_STATS="$TMP/s1" timeout 600 "$EMU" -n "$n1" --ignore-eos --temp 0 --device cuda "$@" >/dev/null 2>"$TMP/pe1" || return 1
    EMU_STATS="$TMP/s2" timeout 600 "$EMU" -n "$n2" --ignore-eos --temp 0 --device cuda "$@" >/dev/null 2>"$TMP/pe2" || return 1
    python3 - "$TMP/s1" "$TMP/s2" "$n1" "$n2" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
d = int(sys.argv[4]) - int(sys.argv[3])
print(" ".join("%g" % ((b[k] - a[k]) / d) for k in ("syncs", "d2h", "kernels", "graph_launches")))
PY
}
