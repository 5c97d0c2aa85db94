# Sourced by tests/test_bad_inputs.sh: the command line: unknown flags, missing and bad values,
# policy parameters and presets (issue 7). Uses check, P, GOOD and the shared files in $TMP.

check "unknown flag at the end" "--frobnicate" -m "$GOOD" "${P[@]}" --frobnicate
check "unknown flag with a value" "--frobnicate" -m "$GOOD" --frobnicate 3 "${P[@]}"
check "unknown short flag" "'-x'" -m "$GOOD" -x "${P[@]}"
check "flag missing its value (-n at the end)" '-n' -m "$GOOD" -p "hi" -n
check "flag missing its value (-m at the end)" '-m' -m
check "flag missing its value (--policy at the end)" '--policy' -m "$GOOD" -p hi --policy
check "-n not a number" '-n.*abc' -m "$GOOD" -p hi -n abc
check "-n 12x" '-n.*12x' -m "$GOOD" -p hi -n 12x
check "-n -2" '-n' -m "$GOOD" -p hi -n -2
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

check "-p missing its value" "'-p'|-p:" -m "$GOOD" -n 4 -p
check "--logits-out missing its value" '--logits-out' -m "$GOOD" -p hi -n 4 --logits-out
check "--policy-config missing its value" '--policy-config' -m "$GOOD" -p hi --policy-config
check "--system missing its value" '--system' -m "$GOOD" -p hi --chat --system
check "-n empty" '-n' -m "$GOOD" -p hi -n ""
check "-n 1e3" '-n.*1e3' -m "$GOOD" -p hi -n 1e3
check "-n 0x10" '-n.*0x10' -m "$GOOD" -p hi -n 0x10
check "--temp 1e999" '--temp' -m "$GOOD" "${P[@]}" --temp 1e999
check "--temp inf" '--temp' -m "$GOOD" "${P[@]}" --temp inf
check "--top-p -0.1" '--top-p' -m "$GOOD" "${P[@]}" --top-p -0.1
check "--top-k abc" '--top-k' -m "$GOOD" "${P[@]}" --top-k abc
check "--seed -2" '--seed' -m "$GOOD" "${P[@]}" --seed -2
check "--seed 4294967296" '--seed.*out of range' -m "$GOOD" "${P[@]}" --seed 4294967296
check "eval --seed -1" 'eval: --seed -1 .*unrepeatable' eval -m "$GOOD" --task tinystories --out "$TMP/ev" --seed -1
check "--threads 100000" '--threads' -m "$GOOD" "${P[@]}" --threads 100000
check "--budget inf" '--budget' -m "$GOOD" "${P[@]}" --budget inf
check "--budget 1e999" '--budget' -m "$GOOD" "${P[@]}" --budget 1e999
check "--budget-tokens abc" '--budget-tokens' -m "$GOOD" "${P[@]}" --budget-tokens abc
check "--budget-tokens 3000000000" '--budget-tokens' -m "$GOOD" "${P[@]}" --budget-tokens 3000000000
check "--prefill-chunk x" '--prefill-chunk' -m "$GOOD" "${P[@]}" --prefill-chunk x
check "policy parameter value with a newline (one line)" 'h2o-score' -m "$GOOD" "${P[@]}" --policy h2o --budget 0.5 --h2o-score $'sum\nmean'
check "policy parameter out of range (--policy streaming --sink -1)" 'sink' -m "$GOOD" "${P[@]}" --policy streaming --budget 0.5 --sink -1
check "policy parameter too long" 'sink' -m "$GOOD" "${P[@]}" --policy streaming --budget 0.5 --sink "$(printf '1%.0s' {1..200})"

printf '{"policy": "streaming", "budget": 1e999}' >"$TMP/inf-budget.json"
check "--policy-config budget 1e999" 'inf-budget\.json.*budget' -m "$GOOD" "${P[@]}" --policy-config "$TMP/inf-budget.json"
printf '{"policy": "h2o", "budget": 0.5, "h2o-score": "sum\\nmean"}' >"$TMP/nl-value.json"
check "--policy-config value with an escaped newline (one line)" 'nl-value\.json.*h2o-score' -m "$GOOD" "${P[@]}" --policy-config "$TMP/nl-value.json"
printf '{"policy": "streaming", "sink": [4]}' >"$TMP/array-value.json"
check "--policy-config value an array" 'array-value\.json.*sink' -m "$GOOD" "${P[@]}" --policy-config "$TMP/array-value.json"
printf '{"policy": "streaming"} trailing' >"$TMP/trailing.json"
check "--policy-config trailing data" 'trailing\.json' -m "$GOOD" "${P[@]}" --policy-config "$TMP/trailing.json"
: >"$TMP/empty-preset.json"
check "--policy-config empty file" 'empty-preset\.json' -m "$GOOD" "${P[@]}" --policy-config "$TMP/empty-preset.json"
head -c 2000000 /dev/zero | tr '\0' ' ' >"$TMP/huge-preset.json"
check "--policy-config over 1 MiB" 'huge-preset\.json' -m "$GOOD" "${P[@]}" --policy-config "$TMP/huge-preset.json"

# prompts longer than the context
check "--chat prompt longer than the context" 'context' -m "$GOOD" -n 4 --chat "$TMP/long.txt"
check_stdin() {   # check_stdin NAME PATTERN FILE args...: like check, prompt from stdin
    local name="$1" pat="$2" file="$3"; shift 3
    local saved_bin="$BIN"
    BIN=/bin/sh check "$name" "$pat" -c 'exec "$0" "$@" <"'"$file"'"' "$saved_bin" "$@"
    BIN="$saved_bin"
}
check_stdin "prompt from stdin longer than the context" 'context' "$TMP/long.txt" -m "$GOOD" -n 4 -

# KV memory cap and device (the CUDA merge)
check "--kv-mem-limit 0" '--kv-mem-limit' -m "$GOOD" "${P[@]}" --kv-mem-limit 0
check "--kv-mem-limit abc" '--kv-mem-limit' -m "$GOOD" "${P[@]}" --kv-mem-limit abc
check "--kv-mem-limit too small for the cache" '--kv-mem-limit' -m "$GOOD" "${P[@]}" --kv-mem-limit 0.000000001
check "--device bogus" '--device.*bogus' -m "$GOOD" "${P[@]}" --device bogus

# llama.cpp's flags (cli/options_llama.c): what llm-run cannot do is refused in one line
check "-ctk q8_0 (a quantized KV cache)" '-ctk.*q8_0' -m "$GOOD" "${P[@]}" -ctk q8_0
check "-ctk f16 -ctv bf16 (two types)" '-ctk and -ctv' -m "$GOOD" "${P[@]}" -ctk f16 -ctv bf16
check "-i (interactive)" '-i: .*not interactive' -m "$GOOD" "${P[@]}" -i
check "-if (interactive first)" '-if: .*not interactive' -m "$GOOD" "${P[@]}" -if
check "--min-p 2" '--min-p' -m "$GOOD" "${P[@]}" --min-p 2
check "--repeat-penalty 0" '--repeat-penalty' -m "$GOOD" "${P[@]}" --repeat-penalty 0
check "--repeat-last-n -2" '--repeat-last-n' -m "$GOOD" "${P[@]}" --repeat-last-n -2
check "-r empty" '-r: empty' -m "$GOOD" "${P[@]}" -r ""
check "-fa with a value it does not know (taken as a prompt file)" 'maybe' -m "$GOOD" -t 1 -n 4 -fa maybe
check "-b missing its value" '-b' -m "$GOOD" -p hi -b
check "eval --repeat-penalty" 'eval: .*penalt' eval -m "$GOOD" --task tinystories --out "$TMP/ev" --repeat-penalty 1.2
check "compare -r" 'compare: -r' compare -m "$GOOD" -p hi -r x
check "-ctk bf16 with --kv-dtype f16" '-ctk bf16 and --kv-dtype f16' -m "$GOOD" "${P[@]}" -ctk bf16 --kv-dtype f16
check "--rope-freq-base 0" '--rope-freq-base' -m "$GOOD" "${P[@]}" --rope-freq-base 0
# llama.cpp's other samplers (cli/options_sampling.c): bad values, unknown stages
check "--mirostat 3" '--mirostat' -m "$GOOD" "${P[@]}" --mirostat 3
check "--typical 1.5" '--typical' -m "$GOOD" "${P[@]}" --typical 1.5
check "--xtc-probability -0.1" '--xtc-probability' -m "$GOOD" "${P[@]}" --xtc-probability -0.1
check "--min-keep -1" '--min-keep' -m "$GOOD" "${P[@]}" --min-keep -1
check "--samplers with an unknown name" "--samplers: unknown sampler 'top_q'" -m "$GOOD" "${P[@]}" --samplers 'top_k;top_q'
check "--samplers empty" '--samplers: no sampler' -m "$GOOD" "${P[@]}" --samplers ';'
check "--samplers infill" '--samplers infill: .*no infill' -m "$GOOD" "${P[@]}" --samplers 'top_k;infill'
check "--sampling-seq with an unknown letter" "--sampling-seq: unknown sampler 'q'" -m "$GOOD" "${P[@]}" --sampling-seq kqt
check "--sampling-seq too long" '--sampling-seq: at most 15' -m "$GOOD" "${P[@]}" --sampling-seq kkkkkkkkkkkkkkkk
check "--dry-base 0.5 (below 1)" '--dry-base' -m "$GOOD" "${P[@]}" --dry-base 0.5
check "--dry-allowed-length -1" '--dry-allowed-length' -m "$GOOD" "${P[@]}" --dry-allowed-length -1
check "--dry-penalty-last-n -2" '--dry-penalty-last-n' -m "$GOOD" "${P[@]}" --dry-penalty-last-n -2
check "--dry-sequence-breaker empty" '--dry-sequence-breaker: empty' -m "$GOOD" "${P[@]}" --dry-sequence-breaker ''
check "eval --dry-multiplier" 'eval: decodes greedily .--dry-multiplier' eval -m "$GOOD" --task tinystories --out "$TMP/ev" --dry-multiplier 0.8
check "-l without a sign" '-l 5x1: expected TOKEN_ID' -m "$GOOD" "${P[@]}" -l 5x1
check "-l with a NaN bias" '-l 5.nan: expected' -m "$GOOD" "${P[@]}" -l 5+nan
check "-l outside the vocabulary" '-l 512: token id out of range' -m "$GOOD" "${P[@]}" -l 512+1
printf 'hello {{ x }}' >"$TMP/unknown.jinja"
check "--chat-template-file missing" '--chat-template-file|cannot open' -m "$GOOD" "${P[@]}" --chat-template-file "$TMP/none.jinja"
check "--chat-template-file of no known family" 'chat template not recognised' -m "$GOOD" "${P[@]}" --chat-template-file "$TMP/unknown.jinja"
check "--chat-template with --chat-template-file" 'two templates' -m "$GOOD" "${P[@]}" --chat-template chatml --chat-template-file "$TMP/unknown.jinja"
check "eval --chat-template-file" 'eval: --chat-template-file is not used' eval -m "$GOOD" --task tinystories --out "$TMP/ev" --chat-template-file "$TMP/unknown.jinja"
check "--log-file" '--log-file: .*2> FILE' -m "$GOOD" "${P[@]}" --log-file x.log
check "-gan (self-extend)" '-gan: no self-extend' -m "$GOOD" "${P[@]}" -gan 4
check "--yarn-orig-ctx" '--yarn-orig-ctx: .*not YaRN' -m "$GOOD" "${P[@]}" --yarn-orig-ctx 4096
check "-jf (a JSON schema file)" '-jf: constrained decoding' -m "$GOOD" "${P[@]}" -jf s.json
check "--in-suffix (interactive)" '--in-suffix: llm-run is not interactive' -m "$GOOD" "${P[@]}" --in-suffix x
check "--grammar-file" '--grammar-file: constrained decoding' -m "$GOOD" "${P[@]}" --grammar-file g.gbnf
check "-np 2 (parallel sequences)" '-np 2: llm-run runs one sequence' -m "$GOOD" "${P[@]}" -np 2
check "--context-shift" '--context-shift: llm-run never shifts' -m "$GOOD" "${P[@]}" --context-shift
check "-C (a CPU mask)" '-C: .*OMP_PLACES' -m "$GOOD" "${P[@]}" -C ff
check "--lora" '--lora: llm-run loads no adapters' -m "$GOOD" "${P[@]}" --lora x.gguf
check "-hf (a download)" '-hf: llm-run downloads nothing' -m "$GOOD" "${P[@]}" -hf a/b
check "-ot (tensor placement)" '-ot: the whole model runs on one device' -m "$GOOD" "${P[@]}" -ot 'ffn=CPU'
check "--override-kv" '--override-kv: GGUF metadata' -m "$GOOD" "${P[@]}" --override-kv a=int:1
check "--prompt-cache" '--prompt-cache: .*no prompt cache' -m "$GOOD" "${P[@]}" --prompt-cache f.bin
check "-mli (interactive)" '-mli: llm-run is not interactive' -m "$GOOD" "${P[@]}" -mli
check "eval -sp" 'eval: -sp is llm-run' eval -m "$GOOD" --task tinystories --out "$TMP/ev" -sp
check "--adaptive-target 2" '--adaptive-target: 2 is out of range' -m "$GOOD" "${P[@]}" --adaptive-target 2
check "--adaptive-decay 1" '--adaptive-decay: 1 is out of range' -m "$GOOD" "${P[@]}" --adaptive-decay 1
check "eval --mirostat" 'eval: decodes greedily .--mirostat' eval -m "$GOOD" --task tinystories --out "$TMP/ev" --mirostat 2
check "compare --typical" 'compare: decodes greedily .--typical' compare -m "$GOOD" -p hi --typical 0.9
check "--rope-freq-base abc" '--rope-freq-base' -m "$GOOD" "${P[@]}" --rope-freq-base abc
check "--rope-freq-scale -1" '--rope-freq-scale' -m "$GOOD" "${P[@]}" --rope-freq-scale -1
check "--rope-scale 0" '--rope-scale' -m "$GOOD" "${P[@]}" --rope-scale 0
check "--rope-scaling yarn" '--rope-scaling yarn: .*not YaRN' -m "$GOOD" "${P[@]}" --rope-scaling yarn
check "--rope-scaling bogus" '--rope-scaling: expected none, linear or yarn' -m "$GOOD" "${P[@]}" --rope-scaling bogus
check "--keep (context shift)" '--keep: .*--policy streaming --sink' -m "$GOOD" "${P[@]}" --keep 4
check "--grammar" '--grammar: constrained decoding' -m "$GOOD" "${P[@]}" --grammar 'root ::= "a"'
check "-j (a JSON schema)" '-j: constrained decoding' -m "$GOOD" "${P[@]}" -j '{}'
check "--in-prefix (interactive)" '--in-prefix: .*not interactive' -m "$GOOD" "${P[@]}" --in-prefix x
check "--prio 5" '--prio' -m "$GOOD" "${P[@]}" --prio 5
check "-sm bogus" '-sm: expected none, layer or row' -m "$GOOD" "${P[@]}" -sm bogus
check "-mg 1 (a second GPU)" '-mg 1: .*one GPU' -m "$GOOD" "${P[@]}" -mg 1
check "-dev CUDA1" "-dev: expected auto, cpu or cuda" -m "$GOOD" "${P[@]}" -dev CUDA1
check "-sysf missing file" 'cannot open' -m "$GOOD" "${P[@]}" -sysf "$TMP/no-such-system.txt"
printf 'a\0b' > "$TMP/sys_nul.txt"
check "-sysf with a NUL byte" '-sysf .*NUL byte at offset 1' -m "$GOOD" "${P[@]}" -sysf "$TMP/sys_nul.txt"
