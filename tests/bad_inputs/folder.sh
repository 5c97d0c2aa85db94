# Sourced by tests/test_bad_inputs.sh: tokenizer.model missing or corrupt, the model folder and
# the prompt file (issue 7). Uses fresh, check, dir_case, P, GOOD, SRC and the shared files in $TMP.

dir_case tok_missing "missing tokenizer.model" 'tokenizer\.model' 'rm "$d/tokenizer.model"'

d="$(fresh tok_garbage)"
python3 -c 'import random,sys
r=random.Random(3); open(sys.argv[1],"wb").write(bytes(r.getrandbits(8) for _ in range(8222)))' "$d/tokenizer.model"
check "corrupt tokenizer.model (random bytes)" 'tokenizer\.model' -m "$d" "${P[@]}"

dir_case tok_trunc "corrupt tokenizer.model (truncated)" 'tokenizer\.model' 'head -c 4000 "$SRC/tokenizer.model" >"$d/tokenizer.model"'

dir_case tok_empty "empty tokenizer.model" 'tokenizer\.model' ': >"$d/tokenizer.model"'

d="$(fresh tok_dir)"
rm "$d/tokenizer.model"
mkdir "$d/tokenizer.model"
check "tokenizer.model is a directory" 'tokenizer\.model' -m "$d" "${P[@]}"

check "missing model dir" 'no-such-model-dir' -m "$TMP/no-such-model-dir" "${P[@]}"

check "model dir is a file" 'model-is-a-file' -m "$TMP/model-is-a-file" "${P[@]}"

check "missing prompt file" 'no-such-prompt\.txt' -m "$GOOD" -n 4 "$TMP/no-such-prompt.txt"

check "directory as prompt file" 'prompt-dir' -m "$GOOD" -n 4 "$TMP/prompt-dir"

check "prompt file and -p together" 'prompt\.txt|-p' -m "$GOOD" -p "hi" -n 4 "$TMP/prompt.txt"
check "two prompt files" 'prompt\.txt' -m "$GOOD" -n 4 "$TMP/prompt.txt" "$TMP/prompt.txt"

check "prompt longer than the model's context" 'context' -m "$GOOD" -n 4 "$TMP/long.txt"
check "prompt longer than the context (--budget 0.5)" 'context' -m "$GOOD" -n 4 --policy local --budget 0.5 "$TMP/long.txt"
