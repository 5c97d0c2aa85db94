# tests/support/lib.sh — sourced by the end-to-end scripts tests/test_*.sh, from the repository
# root: the shared paths, the ok/bad counters, the preconditions and the closing line
# "N passed, M failed" that tests/run_all.sh reads.
#   . tests/support/lib.sh
#   setup_e2e "$DATA"         (or need_bin, need_files, need_jq, make_tmp one by one)
#   ok "what"; bad "what (why)"; ...; finish
SHARED="${LLM_SHARED:-../shared}"
MODEL="$SHARED/models/stories260K"
TINYSTORIES="$SHARED/data/tinystories/TinyStories-valid.excerpt_unverified.txt"
BIN=./llm-run
pass=0; fail=0
ok()  { echo "ok   $*"; pass=$((pass+1)); }
bad() { echo "FAIL $*"; fail=$((fail+1)); }
# check WHAT SHELL-TEST: ok when the test (eval'd) succeeds, else bad naming it
check() { if eval "$2"; then ok "$1"; else bad "$1 ($2)"; fi; }

# need_bin: ./llm-run is built, else one failure and exit.
need_bin() {
    if [ ! -x "$BIN" ]; then echo "FAIL: $BIN not built (make llm-run)"; echo "0 passed, 1 failed"; exit 1; fi
}
# need_files FILE...: every file exists, else a skip (the shared data is not here) and exit.
need_files() {
    local f
    for f in "$@"; do
        if [ ! -f "$f" ]; then echo "SKIP: $f not found"; echo "0 passed, 0 failed"; exit 0; fi
    done
}
# need_jq: jq (reads --json and results.jsonl) is installed, else one failure and exit.
need_jq() {
    command -v jq >/dev/null || { echo "FAIL: jq is needed to read --json"; echo "0 passed, 1 failed"; exit 1; }
}
# make_tmp: a temporary folder in $tmp, removed on exit.
make_tmp() {
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
}
# setup_e2e FILE...: need_bin, need_files for the model and FILE..., make_tmp.
setup_e2e() {
    need_bin
    need_files "$MODEL/config.json" "$@"
    make_tmp
}
# tinystories_prompt CHARS OUT: the first CHARS characters of the TinyStories excerpt as one
# line, cut at a word boundary (680 characters: ~330 tokens of stories260K), into OUT.
tinystories_prompt() {
    tr '\n' ' ' < "$TINYSTORIES" | head -c "$1" | sed 's/ [^ ]*$//' > "$2"
}
# finish: the closing line; the script's status is 0 when nothing failed.
finish() {
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
}
