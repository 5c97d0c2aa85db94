#!/usr/bin/env bash
# Gathers, on a normal (Debian/Ubuntu, x86-64, networked) machine, what bench/gpu_validate.sh
# needs on a GPU machine that has nvcc, PyTorch and transformers but none of our build
# dependencies and no network. Everything goes into ONE git-ignored folder (default gpu_pack/ at
# the repository root) that travels with the working tree (limit 64 MiB in all):
#
#   gpu_pack/prefix.tar.xz   the -dev packages of the build (headers, .so links) and their runtime
#                            libraries: `apt-get download` + `dpkg -x` into a prefix here, pruned
#                            (no static libraries, docs, LAPACK, sentencepiece trainer), then
#                            compressed (OpenBLAS alone is 36 MB unpacked); gpu_validate.sh
#                            unpacks it under build-gpu/prefix
#   gpu_pack/wheels/         the gguf wheel (pure Python; numpy, which it imports, is there)
#   gpu_pack/shared/models/  stories260K and the LLaMA-2 tokenizer from ../shared (tests, the
#                            7B-shaped benchmark's tokenizer)
#   gpu_pack/MANIFEST.txt    packages, versions, sizes, the newest GLIBC/GLIBCXX symbol versions
#                            the libraries need (the GPU machine's libc must be at least that)
#
#   bench/gpu_pack.sh [OUT_DIR]
#
# Errors: exits 1 with one line when a download fails, a package is unknown to apt, or the
# folder ends up larger than the 64 MiB the working tree may take, less the tracked files (42 MB
# on 2026-11-30, most of it results/) and 4 MiB for untracked ones (GPU_PACK_MAX_MIB overrides).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${1:-gpu_pack}
LLM_SHARED=${LLM_SHARED:-$ROOT/../shared}
TREE_MIB=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | awk '{print int($1 / 1048576) + 1}')
MAX_MIB=${GPU_PACK_MAX_MIB:-$((64 - 4 - TREE_MIB))}
# -dev packages of `make CUDA=1` and the cmocka tests, and what their libraries load at run time
# (libc6, libgcc-s1, libstdc++6, libgomp1 are every toolchain's own and stay out)
PKGS="libsentencepiece-dev libsentencepiece0 libcjson-dev libcjson1 libpcre2-dev libpcre2-8-0
      libutf8proc-dev libutf8proc2 zlib1g-dev zlib1g libopenblas-dev libopenblas-pthread-dev
      libopenblas0 libopenblas0-pthread libgfortran5 libquadmath0 libcmocka-dev libcmocka0"
die() { echo "gpu_pack: $*" >&2; exit 1; }
command -v apt-get >/dev/null && command -v dpkg >/dev/null || die "needs apt-get and dpkg (Debian/Ubuntu)"
[ "$(dpkg --print-architecture)" = amd64 ] || die "packs amd64 libraries; this machine is $(dpkg --print-architecture)"
case "$OUT" in /*) ;; *) OUT=$ROOT/$OUT ;; esac
case "$OUT" in "$ROOT"/*) git check-ignore -q "$OUT/MANIFEST.txt" || die "$OUT is not git-ignored (see .gitignore)" ;; esac

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/debs" "$WORK/prefix"
echo "gpu_pack: apt-get download ($(echo $PKGS | wc -w) packages)"
(cd "$WORK/debs" && apt-get download $PKGS >"$WORK/apt.log" 2>&1) || die "apt-get download: $(grep -m1 '^E:' "$WORK/apt.log")"
for d in "$WORK"/debs/*.deb; do dpkg -x "$d" "$WORK/prefix"; done
P=$WORK/prefix
# Debian's merged /lib: zlib's runtime lives in lib/, its -dev link points at /lib absolutely
if [ -d "$P/lib/x86_64-linux-gnu" ]; then
    mv "$P"/lib/x86_64-linux-gnu/* "$P/usr/lib/x86_64-linux-gnu/"
    rm -rf "$P/lib"
fi
LIB=$P/usr/lib/x86_64-linux-gnu
ln -sf "$(basename "$(ls "$LIB"/libz.so.1.* | head -1)")" "$LIB/libz.so"
# OpenBLAS goes through update-alternatives on Debian: the links the linker and loader look for
ln -sf openblas-pthread/libopenblas.so.0 "$LIB/libopenblas.so.0"
ln -sf libopenblas.so.0 "$LIB/libopenblas.so"
[ -f "$P/usr/include/x86_64-linux-gnu/cblas.h" ] || ln -sf openblas-pthread/cblas.h "$P/usr/include/x86_64-linux-gnu/cblas.h"
# prune: static libraries, docs, LAPACK, the sentencepiece trainer, the 16/32-bit PCRE2 links
find "$P" -name '*.a' -delete
rm -rf "$P/usr/share" "$LIB"/libsentencepiece_train* "$LIB"/libpcre2-16* "$LIB"/libpcre2-32* "$LIB"/libpcre2-posix* \
    "$LIB"/libcmockery* "$LIB"/openblas-pthread/liblapack* "$LIB"/openblas-pthread/libblas* "$LIB"/cmake "$LIB"/pkgconfig
for h in cblas.h sentencepiece_processor.h cjson/cJSON.h pcre2.h utf8proc.h zlib.h cmocka.h; do
    [ -n "$(find "$P/usr/include" -path "*/$h" -print -quit)" ] || die "header $h missing from the prefix"
done
for l in libopenblas.so libsentencepiece.so libcjson.so libpcre2-8.so libutf8proc.so libz.so libcmocka.so; do
    [ -e "$LIB/$l" ] || die "library link $l missing from the prefix"
done

rm -rf "$OUT"
mkdir -p "$OUT/wheels" "$OUT/shared/models"
tar -C "$P" -cJf "$OUT/prefix.tar.xz" usr
GGUF_VER=$(python3 -c 'import importlib.metadata as m; print(m.version("gguf"))' 2>/dev/null || echo "")
echo "gpu_pack: pip download gguf${GGUF_VER:+==$GGUF_VER}"
python3 -m pip download --no-deps --only-binary=:all: -d "$OUT/wheels" "gguf${GGUF_VER:+==$GGUF_VER}" >"$WORK/pip.log" 2>&1 ||
    die "pip download gguf: $(tail -1 "$WORK/pip.log")"
for m in stories260K llama2-tokenizer; do
    [ -d "$LLM_SHARED/models/$m" ] || die "no $LLM_SHARED/models/$m (scripts/setup.sh)"
    cp -r "$LLM_SHARED/models/$m" "$OUT/shared/models/"
done

glibc=$(find "$LIB" -name '*.so*' -type f -exec objdump -T {} \; 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
glibcxx=$(find "$LIB" -name '*.so*' -type f -exec objdump -T {} \; 2>/dev/null | grep -o 'GLIBCXX_[0-9.]*' | sort -uV | tail -1)
{
    echo "gpu_pack made $(date -u '+%Y-%m-%d %H:%M UTC') on $(. /etc/os-release && echo "$PRETTY_NAME") by bench/gpu_pack.sh"
    echo "newest symbol versions the libraries need: ${glibc:-?} ${glibcxx:-?}"
    echo "packages:"
    for d in "$WORK"/debs/*.deb; do echo "  $(dpkg-deb -f "$d" Package) $(dpkg-deb -f "$d" Version)"; done
    echo "prefix unpacked: $(du -sh "$P" | cut -f1); files:"
    (cd "$OUT" && find . -type f | sort | xargs du -b | awk '{printf "  %10d  %s\n", $1, $2}')
} >"$OUT/MANIFEST.txt"
size=$(du -sm "$OUT" | cut -f1)
echo "gpu_pack: $OUT: $(du -sh "$OUT" | cut -f1) (limit ${MAX_MIB} MiB beside ${TREE_MIB} MiB of tracked files; needs ${glibc:-?}, ${glibcxx:-?})"
[ "$size" -le "$MAX_MIB" ] || die "$OUT is $size MiB, over $MAX_MIB"
