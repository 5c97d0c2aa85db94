#!/usr/bin/env bash
# The include graph by directory, and the layering rule it must obey (docs/ARCHITECTURE.md):
#
#   kernels/ (0) → eviction/ (1) → model/, tokenizer/ (2) → eval/ (3) → cli/ (4) → main.c (5)
#
# A file may include headers of its own layer directory or of a lower layer; model/ and
# tokenizer/ sit side by side and include neither of each other. Sub-directories belong to their
# top directory (kernels/cpu, kernels/cuda → kernels; model/cuda → model). tests/, bench/ and fuzz/
# are outside the product and may include anything.
#
# Prints every directory edge with its count and the offending lines, and exits 1 on an upward
# edge, an edge between the two layer-2 directories, or a directory cycle; 0 otherwise.
#   scripts/deps.sh            # check the tree
#   scripts/deps.sh --quiet    # only the verdict line (and the offenders)
set -u
cd "$(dirname "$0")/.." || exit 2
quiet=0; [ "${1:-}" = "--quiet" ] && quiet=1

layer() { # top directory → layer number (empty: not part of the product)
    case "$1" in
        kernels) echo 0 ;; eviction) echo 1 ;; model|tokenizer) echo 2 ;;
        eval) echo 3 ;; cli) echo 4 ;; main.c) echo 5 ;; *) echo "" ;;
    esac
}
top() { case "$1" in */*) echo "${1%%/*}" ;; *) echo "$1" ;; esac; }

files=$(ls main.c 2>/dev/null; find kernels eviction model tokenizer eval cli -type f \
        \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' \) 2>/dev/null | sort)
bad=0
declare -A edges
while IFS= read -r f; do
    [ -n "$f" ] || continue
    from=$(top "$f"); lf=$(layer "$from")
    while IFS=: read -r ln inc; do
        [ -n "$inc" ] || continue
        to=$(top "$inc"); lt=$(layer "$to")
        [ -n "$lt" ] || continue            # a system header or a generated .inc
        [ "$to" = "$from" ] && continue
        edges["$from -> $to"]=$(( ${edges["$from -> $to"]:-0} + 1 ))
        if [ "$lt" -gt "$lf" ]; then
            echo "UPWARD  $f:$ln includes $inc ($from is layer $lf, $to is layer $lt)"; bad=1
        elif [ "$lt" -eq "$lf" ]; then
            echo "SIDEWAYS $f:$ln includes $inc ($from and $to are both layer $lf)"; bad=1
        fi
    done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" |
             sed -E 's/^([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1:\2/')
done <<< "$files"

if [ $quiet -eq 0 ]; then
    echo "include graph by directory (edges between top directories, count of #include lines):"
    for e in "${!edges[@]}"; do printf '  %-26s %4d\n' "$e" "${edges[$e]}"; done | sort
fi
# a cycle between directories needs an edge both ways (with strict layers this cannot happen
# without an upward edge, but say so explicitly)
for e in "${!edges[@]}"; do
    a=${e%% -> *}; b=${e##* -> }
    if [ -n "${edges["$b -> $a"]:-}" ] && [[ "$a" < "$b" ]]; then
        echo "CYCLE   $a <-> $b"; bad=1
    fi
done
if [ $bad -eq 0 ]; then echo "deps: ok (every include points down: kernels → eviction → model, tokenizer → eval → cli → main.c)"
else echo "deps: FAIL (see the lines above)"; fi
exit $bad
