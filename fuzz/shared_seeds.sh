# fuzz/shared_seeds.sh — sourced by fuzz/run.sh and tests/test_fuzz_corpus.sh.
# shared_seeds NAME: the files of ../shared (LLM_SHARED) that seed fuzz target NAME besides its
# committed corpus, read in place (the project keeps no copies of ../shared): every shared
# model's config.json for `config`, every tokenizer.model for `spmodel`. Prints one path a line.
shared_seeds() {
    local s=${LLM_SHARED:-../shared} f
    case $1 in
    config) for f in "$s"/models/*/config.json; do [ -f "$f" ] && echo "$f"; done ;;
    spmodel) for f in "$s"/models/*/tokenizer.model; do [ -f "$f" ] && echo "$f"; done ;;
    esac
    return 0
}
