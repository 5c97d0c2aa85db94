#!/usr/bin/env bash
# llama.cpp's command-line flags (cli/options_llama.c), end to end on stories260K (greedy, -t 1)
# and SmolLM2 (its chat template; scripts/fetch_model.sh smollm2-135m, which run_all.sh fetches):
#   * the accepted flags change nothing: -fa, -fa on, -b, -ub, -tb, --jinja, --no-mmap,
#     --no-warmup, -co, --log-disable, -no-cnv, --numa, -sm, -mg 0, -dev none, -ngl 0, -v, --simple-io,
#     -np 1, -cb, -nocb, -kvu, -no-kvu, -dt, --swa-full, --no-context-shift, -nkvo, -kvo, -nr,
#     --repack, --check-tensors, --warmup, --no-perf, --perf, --display-prompt, --poll,
#     --prio-batch, --poll-batch, --no-host, --offline, --no-jinja, --log-colors, -lv, --log-prefix,
#     --log-timestamps give the
#     same text as the run without them; -ngl 0 and -dev none choose the CPU; --prio -1 runs at
#     nice 5; -s N is
#     --seed N (a sampled run), -s -1 draws a seed it reports (stderr, --json) and -s with that
#     seed repeats the run; --n-predict is -n, and -n -1 runs to the context; --mlock gives the
#     same text (and at most a one-line warning);
#   * -ctk/-ctv are --kv-dtype (--json kv.kv_dtype and the text), in compare too (its KV peak);
#     -ctk with another --kv-dtype is an error;
#   * --rope-freq-base, --rope-freq-scale, --rope-scale, --rope-scaling none: the logits
#     (--logits-out, bit for bit) of the folder whose config.json says the same (rope_theta,
#     rope_scaling linear), which differ from the plain run's; compare reads them too;
#   * -sys TEXT is --chat --system TEXT, -sysf FILE the same with the file's text, -st and -cnv
#     are --chat (the same ids, --verbose-prompt);
#   * -e turns \n and \xHH into their bytes (the prompt's ids equal those of the real bytes)
#     and leaves them as written without it;
#   * -r TEXT stops once the output contains TEXT, also a TEXT spanning tokens: stop "stop", the
#     text a prefix of the unstopped run's ending with TEXT;
#   * --repeat-penalty: each generated id equals the argmax of the raw logits (--logits-out) after
#     llama.cpp's penalty over the last --repeat-last-n ids of prompt + output (numpy), and the
#     output differs from the plain greedy run's; --repeat-last-n 0 turns it off;
#   * --min-p 1 at --temp 1 keeps only the top token: the greedy run's text;
#   * --chat-template-file renders as the family its text shows (Llama-2: --chat-template llama2;
#     ChatML without a default system prompt: not SmolLM2's own);
#   * -sp prints special tokens: the same ids, the end-of-turn token's text at the end, forced
#     special ids as their text.
# Ends with "N passed, M failed".
set -uo pipefail
cd "$(dirname "$0")/.."
SHARED=${LLM_SHARED:-../shared}
M=$SHARED/models/stories260K
BIN=${LLM_RUN:-./llm-run}
SMOL=${LLM_RUN_MODELS:-$HOME/.cache/llm-run}/SmolLM2-135M-Instruct.Q4_1.gguf
pass=0; fail=0
ok()  { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
run() { "$BIN" -m "$M" -t 1 "$@" 2>"$TMP/err"; }
same() {   # name, then the two commands' outputs in files
    if cmp -s "$2" "$3"; then ok "$1"; else bad "$1: outputs differ ($(head -c 80 "$2" | tr '\n' ' ') | $(head -c 80 "$3" | tr '\n' ' '))"; fi
}

P=(-p "Once upon a time" -n 40)
run "${P[@]}" >"$TMP/plain" || bad "plain run failed: $(head -1 "$TMP/err")"
[ -s "$TMP/plain" ] && ok "plain run: $(wc -c <"$TMP/plain") bytes" || bad "plain run printed nothing"
for flags in "-fa" "-fa on" "--flash-attn off" "-b 512 -ub 128" "--no-mmap --no-warmup" "-co --log-disable -no-cnv" "-tb 2 --jinja" \
             "--numa distribute -sm row -mg 0" "-dev none" "-ngl 0" "-v --simple-io" \
             "-np 1 -cb -kvu -dt 0.1 --swa-full" "-nocb -no-kvu --no-context-shift -nkvo -kvo" \
             "-nr --repack --check-tensors --warmup" "--no-perf --perf --display-prompt --poll 50" \
             "--prio-batch 1 --poll-batch 50 --no-host --offline --no-jinja" "--log-colors off -lv 3 --log-prefix --log-timestamps"; do
    # shellcheck disable=SC2086
    run "${P[@]}" $flags >"$TMP/f" 2>/dev/null
    same "accepted $flags: the same text" "$TMP/plain" "$TMP/f"
done
run "${P[@]}" --mlock >"$TMP/f"
same "--mlock: the same text" "$TMP/plain" "$TMP/f"
n=$(grep -cv '^\(load time\|prompt eval\|eval \|total time\|kv:\)' "$TMP/err")
[ "$n" -le 1 ] && ok "--mlock: at most one line besides the summary ($n)" || bad "--mlock: $n extra lines: $(head -2 "$TMP/err")"

# -ngl 0 and -dev none are the CPU (--json device), whatever $LLM_DEVICE says
for f in "-ngl 0" "-dev none"; do
    # shellcheck disable=SC2086
    d=$(LLM_DEVICE=cuda "$BIN" -m "$M" -t 1 "${P[@]}" $f --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin).get("device"))' 2>&1)
    [ "$d" = cpu ] && ok "$f: device cpu (over LLM_DEVICE=cuda)" || bad "$f: device $d"
done
# --prio -1: the process runs at nice 5 (/proc/PID/stat while it waits for its prompt on stdin)
mkfifo "$TMP/fifo"
"$BIN" -m "$M" -t 1 -n 4 --prio -1 - <"$TMP/fifo" >/dev/null 2>&1 &
pid=$!
exec 9>"$TMP/fifo"
ni=""
for _ in $(seq 50); do sleep 0.1; ni=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | awk '{print $17}'); [ "$ni" = 5 ] && break; done
(trap '' PIPE; echo "Once upon a time" >&9) 2>/dev/null; exec 9>&-; wait "$pid"   # no SIGPIPE here if it exited early
[ "$ni" = 5 ] && ok "--prio -1: nice 5" || bad "--prio -1: nice '$ni'"

run -p "Once upon a time" --n-predict 12 >"$TMP/a"; run -p "Once upon a time" -n 12 >"$TMP/b"
same "--n-predict 12 is -n 12" "$TMP/a" "$TMP/b"
g=$(run -p "Once upon a time" -n -1 -c 64 --ignore-eos --json | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["n_prompt_tokens"], j["n_generated_tokens"])')
[ "$g" = "5 60" ] && ok "-n -1 -c 64: generates up to the context (5 + 60 - 1 positions)" || bad "-n -1 -c 64: prompt, generated = $g (want 5 60)"
run "${P[@]}" --temp 0.9 -s 7 >"$TMP/a"; run "${P[@]}" --temp 0.9 --seed 7 >"$TMP/b"; run "${P[@]}" --temp 0.9 --seed 8 >"$TMP/c"
same "-s 7 is --seed 7" "$TMP/a" "$TMP/b"
cmp -s "$TMP/a" "$TMP/c" && bad "--seed 8 gave --seed 7's sample (the seed is not read?)" || ok "--seed 8 samples differently"
# -s -1: a seed drawn at start-up, reported on stderr and in --json; -s with it repeats the run
run "${P[@]}" --temp 0.9 -s -1 >"$TMP/r1"; s1=$(sed -n 's/^llm-run: seed \([0-9]*\) (drawn for -s -1.*/\1/p' "$TMP/err")
run "${P[@]}" --temp 0.9 -s -1 --json >"$TMP/r2j"; s2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seed"])' "$TMP/r2j")
run "${P[@]}" --temp 0.9 -s "$s1" >"$TMP/r3"
if [ -n "$s1" ] && [ -n "$s2" ] && [ "$s1" != "$s2" ]; then ok "-s -1 draws a seed and reports it ($s1, then $s2 in --json)"; else bad "-s -1: seeds '$s1' '$s2'"; fi
same "-s <the seed -s -1 reported> repeats that run" "$TMP/r1" "$TMP/r3"

for t in f16 bf16; do
    run "${P[@]}" -ctk $t -ctv $t --json >"$TMP/j1"; run "${P[@]}" --kv-dtype $t --json >"$TMP/j2"
    d=$(python3 -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); print(a["kv"]["kv_dtype"], a["text"] == b["text"], b["kv"]["kv_dtype"])' "$TMP/j1" "$TMP/j2")
    [ "$d" = "$t True $t" ] && ok "-ctk/-ctv $t is --kv-dtype $t" || bad "-ctk/-ctv $t: kv_dtype and same text: $d"
done
run "${P[@]}" -ctv bf16 --json >"$TMP/j1"
d=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kv"]["kv_dtype"])' "$TMP/j1")
[ "$d" = bf16 ] && ok "-ctv alone sets the type" || bad "-ctv bf16 alone: kv_dtype $d"

"$BIN" -m "$M" -t 1 "${P[@]}" -ctk bf16 --kv-dtype f16 >/dev/null 2>"$TMP/err" && bad "-ctk bf16 with --kv-dtype f16 accepted" \
    || { grep -q 'two cache types' "$TMP/err" && ok "-ctk bf16 with --kv-dtype f16: $(head -1 "$TMP/err")" || bad "-ctk/--kv-dtype conflict: $(head -1 "$TMP/err")"; }

# RoPE overrides: each equals the model folder whose config.json says the same (a copy with
# rope_theta / rope_scaling edited), logits bit for bit; and differs from the plain run
rope_copy() {   # DIR, then python assignments to the config dict c
    mkdir -p "$1"; cp "$M"/model.safetensors "$M"/tokenizer.model "$1"/
    python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); exec(sys.argv[3]); json.dump(c, open(sys.argv[2], "w"))' "$M/config.json" "$1/config.json" "$2"
}
rope_copy "$TMP/theta" 'c["rope_theta"] = 5000.0'
rope_copy "$TMP/lin2" 'c["rope_scaling"] = {"type": "linear", "factor": 2.0}'
RP=(-t 1 -p "Once upon a time there was a little girl named Lily" -n 12 --ignore-eos)
logits() { local out=$1 dir=$2; shift 2; "$BIN" -m "$dir" "${RP[@]}" --logits-out "$out" "$@" >/dev/null 2>"$TMP/err" || bad "logits $*: $(head -1 "$TMP/err")"; }
logits "$TMP/plain.npy" "$M"
logits "$TMP/theta.npy" "$TMP/theta"
logits "$TMP/lin2.npy" "$TMP/lin2"
cmp -s "$TMP/plain.npy" "$TMP/theta.npy" && bad "rope_theta 5000 gave the same logits as 10000: the test cannot tell" || ok "rope_theta 5000 changes the logits"
cmp -s "$TMP/plain.npy" "$TMP/lin2.npy" && bad "linear factor 2 gave the same logits: the test cannot tell" || ok "linear rope_scaling 2 changes the logits"
logits "$TMP/a.npy" "$M" --rope-freq-base 5000
same "--rope-freq-base 5000: the logits of a config with rope_theta 5000" "$TMP/theta.npy" "$TMP/a.npy"
v=$("$BIN" -m "$M" "${RP[@]}" --rope-freq-base 5000 --rope-scale 4 --json 2>/dev/null | python3 -c 'import json,sys; m=json.load(sys.stdin)["model"]; print(m["rope_theta"], m["rope_freq_scale"])')
[ "$v" = "5000 0.25" ] && ok "--json model: rope_theta 5000, rope_freq_scale 0.25" || bad "--json model.rope_theta / rope_freq_scale: $v"
logits "$TMP/a.npy" "$M" --rope-freq-base 10000
same "--rope-freq-base 10000 (the model's): the plain logits" "$TMP/plain.npy" "$TMP/a.npy"
logits "$TMP/a.npy" "$M" --rope-freq-scale 0.5
same "--rope-freq-scale 0.5: the logits of rope_scaling linear 2" "$TMP/lin2.npy" "$TMP/a.npy"
logits "$TMP/a.npy" "$M" --rope-scale 2
same "--rope-scale 2: the logits of rope_scaling linear 2" "$TMP/lin2.npy" "$TMP/a.npy"
logits "$TMP/a.npy" "$TMP/lin2" --rope-scaling none
same "--rope-scaling none on the linear-2 folder: the plain logits" "$TMP/plain.npy" "$TMP/a.npy"
logits "$TMP/a.npy" "$TMP/lin2" --rope-freq-scale 1
same "--rope-freq-scale 1 on the linear-2 folder: the plain logits" "$TMP/plain.npy" "$TMP/a.npy"
"$BIN" compare -m "$M" "${RP[@]}" --policies h2o --budgets 0.5 --rope-freq-base 5000 --json >"$TMP/c1" 2>/dev/null
"$BIN" compare -m "$TMP/theta" "${RP[@]}" --policies h2o --budgets 0.5 --json >"$TMP/c2" 2>/dev/null
v=$(python3 -c 'import json,sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
strip = lambda j: json.dumps([{k: v for k, v in r.items() if k != "tok_s"} for r in j["runs"]], sort_keys=True)
print("same" if strip(a) == strip(b) and a["runs"][1]["kl"] > 0 else "differ: %s | %s" % (strip(a)[:200], strip(b)[:200]))' "$TMP/c1" "$TMP/c2" 2>&1)
[ "$v" = same ] && ok "compare --rope-freq-base 5000: the rows of the rope_theta 5000 folder" || bad "compare --rope-freq-base: $v"

"$BIN" compare -m "$M" "${RP[@]}" --policies h2o --budgets 0.5 --json >"$TMP/c1" 2>/dev/null
"$BIN" compare -m "$M" "${RP[@]}" --policies h2o --budgets 0.5 --mlock --json >"$TMP/c2" 2>"$TMP/err"
v=$(python3 -c 'import json,sys; a, b = (json.load(open(p)) for p in sys.argv[1:3]); print([r["text"] for r in a["runs"]] == [r["text"] for r in b["runs"]])' "$TMP/c1" "$TMP/c2" 2>&1)
[ "$v" = True ] && [ "$(grep -vc '^llm-run: warning: --mlock' "$TMP/err")" -eq 0 ] && ok "compare --mlock: the same texts (at most its warning)" || bad "compare --mlock: $v, $(head -1 "$TMP/err")"

# compare reads -ctk too: the full row's KV peak halves (f32 → bf16)
kvpeak() { "$BIN" compare -m "$M" -t 1 -p "Once upon a time" -n 8 --policies h2o --budgets 0.5 "$@" 2>/dev/null | awk '$1 == "full" {print $3}'; }
a=$(kvpeak); b=$(kvpeak -ctk bf16)
python3 -c 'import sys
v = lambda s: float(s.rstrip("Ki")) * (1024 if s.endswith("Ki") else 1)
sys.exit(0 if v(sys.argv[1]) == 2 * v(sys.argv[2]) else 1)' "$a" "$b" 2>/dev/null && ok "compare -ctk bf16: KV peak $a -> $b" || bad "compare -ctk bf16: KV peak $a -> $b (not half)"

# -e: escapes processed only when asked
ids() { "$BIN" tokenize -m "$M" "$@" 2>&1; }
ids -p $'Once upon\na time\x41' >"$TMP/real"
ids -e -p 'Once upon\na time\x41' >"$TMP/esc"
ids -p 'Once upon\na time\x41' >"$TMP/lit"
same "-e: \\n and \\x41 become their bytes" "$TMP/real" "$TMP/esc"
cmp -s "$TMP/real" "$TMP/lit" && bad "without -e the backslashes were processed" || ok "without -e the text is as written"
ids -e -p 'a\qb\\n' >"$TMP/esc"; ids -p 'a\qb\n' >"$TMP/lit"
same "-e: an unknown escape stays, \\\\ is one backslash" "$TMP/lit" "$TMP/esc"

# -r: stop texts, within a token and across tokens
run "${P[@]}" -n 80 --json >"$TMP/full.json"
for stop in "Lily" "named Li" "park."; do
    run "${P[@]}" -n 80 -r "$stop" --json >"$TMP/r.json"
    v=$(python3 - "$TMP/full.json" "$TMP/r.json" "$stop" <<'PY'
import json, sys
full, r, stop = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
if stop not in full["text"]:
    print("the unstopped run never says %r: no test" % stop); sys.exit()
t = r["text"]
at = t.find(stop)
print("ok" if r["stop"] == "stop" and full["text"].startswith(t) and at >= 0 and len(t) - (at + len(stop)) < 16
      else "stop %s, text %r" % (r["stop"], t[-60:]))
PY
)
    [ "$v" = ok ] && ok "-r '$stop': stops there" || bad "-r '$stop': $v"
done

# --repeat-penalty: the ids against numpy on the raw logits
IDS=$(ids -p "Once upon a time there was a little girl" | python3 -c 'import sys,re; print(",".join(re.findall(r"^\s*(\d+) ->", sys.stdin.read(), re.M)))')
if [ -z "$IDS" ]; then
    bad "tokenize gave no ids"
else
    for cfg in "1.3 64 0 0" "1.5 8 0.2 0.1" "0.8 16 0 0"; do
        read -r rp ln fp pp <<<"$cfg"
        run --prompt-ids "$IDS" -n 30 --repeat-penalty "$rp" --repeat-last-n "$ln" --frequency-penalty "$fp" \
            --presence-penalty "$pp" --logits-out "$TMP/l.npy" --json >"$TMP/p.json"
        v=$(python3 - "$TMP/l.npy" "$TMP/p.json" "$IDS" "$rp" "$ln" "$fp" "$pp" <<'PY'
import json, sys
import numpy as np
L = np.load(sys.argv[1]); j = json.load(open(sys.argv[2])); prompt = [int(x) for x in sys.argv[3].split(",")]
rep, last_n, freq, pres = float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), float(sys.argv[7])
gen = j["tokens"]; seq = list(prompt); n = len(prompt)
for k, g in enumerate(gen):
    x = L[n - 1 + k].astype(np.float32).copy()
    win = seq[-last_n:]
    for t in set(win):
        c = win.count(t)
        x[t] = x[t] * np.float32(rep) if x[t] <= 0 else x[t] / np.float32(rep)
        x[t] -= np.float32(c) * np.float32(freq) + np.float32(c > 0) * np.float32(pres)
    if int(np.argmax(x)) != g:
        print("step %d: generated %d, numpy %d" % (k, g, int(np.argmax(x)))); sys.exit()
    seq.append(g)
print("ok %d" % len(gen))
PY
)
        [ "${v%% *}" = ok ] && ok "--repeat-penalty $rp --repeat-last-n $ln --frequency-penalty $fp --presence-penalty $pp: ${v#ok } ids equal numpy's" \
            || bad "--repeat-penalty $cfg: $v"
    done
fi
run "${P[@]}" --repeat-penalty 1.3 >"$TMP/rp"
cmp -s "$TMP/plain" "$TMP/rp" && bad "--repeat-penalty 1.3 changed nothing" || ok "--repeat-penalty 1.3 changes the greedy text"
run "${P[@]}" --repeat-penalty 1.3 --repeat-last-n 0 >"$TMP/rp"
same "--repeat-last-n 0 turns the penalty off" "$TMP/plain" "$TMP/rp"

run "${P[@]}" --temp 1 --top-p 1 --min-p 1 --seed 3 >"$TMP/mp"
same "--min-p 1 at --temp 1 is greedy" "$TMP/plain" "$TMP/mp"

# chat flags on a model with a template
if [ -f "$SMOL" ]; then
    vp() { "$BIN" -m "$SMOL" -t 1 -n 1 --verbose-prompt "$@" 2>&1 >/dev/null | grep -E '^ +[0-9]+ ->'; }
    vp -sys "Be brief." -p "Hi" >"$TMP/a"; vp --chat --system "Be brief." -p "Hi" >"$TMP/b"
    same "-sys is --chat --system" "$TMP/a" "$TMP/b"
    printf 'Be brief.\n' >"$TMP/sys.txt"
    vp -sysf "$TMP/sys.txt" -p "Hi" >"$TMP/a"
    same "-sysf FILE is -sys with its text (the trailing newline dropped)" "$TMP/a" "$TMP/b"
    vp --chat -p "Hi" >"$TMP/b"
    for f in -st -cnv --single-turn; do vp $f -p "Hi" >"$TMP/a"; same "$f is --chat" "$TMP/a" "$TMP/b"; done
    vp -p "Hi" >"$TMP/a"
    cmp -s "$TMP/a" "$TMP/b" && bad "--chat and the raw prompt give the same ids (no template?)" || ok "the chat template is applied (ids differ from the raw prompt's)"
    # a GGUF's rope.freq_base (SmolLM2: 100000) is what --rope-freq-base overrides
    gl() { "$BIN" -m "$SMOL" -t 1 --prompt-ids 1,504,3458,314,253,655 -n 1 --logits-out "$1" "${@:2}" >/dev/null 2>&1; }
    gl "$TMP/g0.npy"; gl "$TMP/g1.npy" --rope-freq-base 100000; gl "$TMP/g2.npy" --rope-freq-base 50000
    same "SmolLM2 GGUF --rope-freq-base 100000 (its own): the same logits" "$TMP/g0.npy" "$TMP/g1.npy"
    cmp -s "$TMP/g0.npy" "$TMP/g2.npy" && bad "SmolLM2 --rope-freq-base 50000 changed nothing" || ok "SmolLM2 GGUF --rope-freq-base 50000 changes the logits"
    # --chat-template-file: a Llama-2 file is --chat-template llama2; a ChatML file without SmolLM2's
    # default system prompt renders none (the model's own template has one)
    printf '%s' "{% for m in messages %}{{'<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n'}}{% endfor %}{% if add_generation_prompt %}{{'<|im_start|>assistant\n'}}{% endif %}" >"$TMP/chatml.jinja"
    printf '%s' "{{ bos_token }}[INST] {{ messages[0]['content'] }} [/INST]" >"$TMP/l2.jinja"
    vp --chat-template-file "$TMP/l2.jinja" -p "Hi" >"$TMP/a"; vp --chat-template llama2 -p "Hi" >"$TMP/b"
    same "--chat-template-file (Llama-2 text) is --chat-template llama2" "$TMP/a" "$TMP/b"
    vp --chat-template-file "$TMP/chatml.jinja" -p "Hi" >"$TMP/a"; vp --chat -p "Hi" >"$TMP/c"
    if cmp -s "$TMP/a" "$TMP/c"; then bad "--chat-template-file (ChatML): the model's default system prompt still rendered"
    else ok "--chat-template-file (ChatML, no default system): $(wc -l <"$TMP/a") ids, not the model's $(wc -l <"$TMP/c")"; fi
    # -sp: the same ids; the text ends with the end-of-turn token's text; mid-text specials too
    sp() { "$BIN" -m "$SMOL" -t 1 --chat -p "Say hi." -n 40 --json "$@" 2>/dev/null; }
    v=$(python3 -c '
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print("ok" if a["tokens"] == b["tokens"] and a["stop"] == "eos" and b["text"] == a["text"] + "<|im_end|>" else "plain %r, -sp %r" % (a["text"][-30:], b["text"][-30:]))' "$(sp)" "$(sp -sp)")
    [ "$v" = ok ] && ok "-sp: the same ids, the text ends with <|im_end|>" || bad "-sp: $v"
    "$BIN" -m "$SMOL" -t 1 --prompt-ids 1,504,3458 -n 3 --force-ids 2,1,2 -sp >"$TMP/a" 2>/dev/null
    [ "$(cat "$TMP/a")" = "<|im_end|><|im_start|><|im_end|>" ] && ok "-sp renders forced specials: $(cat "$TMP/a")" || bad "-sp forced specials: '$(cat "$TMP/a")'"
else
    bad "$SMOL not fetched (scripts/fetch_model.sh smollm2-135m)"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
