/* real_blocks.h — real ggml blocks of the GGUF models, by reference (C and C++; header only, so
 * that tests/test_quant.c and the emulator's tests/cuda_emu/kt_quant.h share one reader).
 *
 * tests/fixtures/quant/real_blocks.txt (written by scripts/make_quant_fixtures.py) names blocks of
 * SmolLM2-135M Q4_1 and Qwen2.5-Coder-0.5B by their byte offset in the GGUF file and gives, per
 * block, the FNV-1a 64 hash of the gguf Python package's dequantization (the block's f32 values as
 * little-endian bytes). The weights themselves are never committed: rb_load reads the blocks from
 * the model cache ($LLM_RUN_MODELS, default ~/.cache/llm-run; scripts/fetch_model.sh fills it), and
 * a test hashes its own dequantization of each block against the fixture's.
 * File layout: '#' comment lines; per set "set NAME MODEL_FILE MODEL_BYTES TYPE N_BLOCKS TENSOR",
 * then N_BLOCKS lines "OFFSET HASH" (decimal, 16 hex digits). */
#ifndef LLM_RUN_TESTS_REAL_BLOCKS_H
#define LLM_RUN_TESTS_REAL_BLOCKS_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char name[64], model[128], type[16], tensor[128];
    unsigned long long model_bytes;
    int n;              /* blocks */
    uint64_t *offset;   /* [n] byte offsets in the model file */
    uint64_t *hash;     /* [n] FNV-1a 64 of gguf's f32 output for the block */
} rb_set;

/* FNV-1a 64 of n bytes (the hash the fixture script computes) */
static inline uint64_t rb_fnv1a64(const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}

/* Reads every set of the fixture file into *sets (malloc'd; rb_free). Returns the number of sets,
 * or -1 with a one-line reason in err (missing file, a malformed line). */
static inline int rb_read(const char *path, rb_set **sets, char *err, size_t errn)
{
    FILE *fp = fopen(path, "r");
    *sets = NULL;
    if (!fp) return snprintf(err, errn, "%s: cannot open (scripts/make_quant_fixtures.py writes it)", path), -1;
    char line[512];
    int ns = 0, filled = 0, lineno = 0;
    rb_set *s = NULL;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        if (line[0] == '#' || line[0] == '\n') continue;
        if (!strncmp(line, "set ", 4)) {
            if (s && filled != s[ns - 1].n) break;
            rb_set *t = (rb_set *)realloc(s, (size_t)(ns + 1) * sizeof *s);
            if (!t) break;
            s = t;
            rb_set *c = &s[ns++];
            memset(c, 0, sizeof *c);
            if (sscanf(line, "set %63s %127s %llu %15s %d %127s", c->name, c->model, &c->model_bytes, c->type, &c->n,
                       c->tensor) != 6 || c->n <= 0 || c->n > 1 << 20)
                break;
            c->offset = (uint64_t *)calloc((size_t)c->n, 8);
            c->hash = (uint64_t *)calloc((size_t)c->n, 8);
            if (!c->offset || !c->hash) break;
            filled = 0;
            continue;
        }
        unsigned long long o, h;
        if (!s || filled >= s[ns - 1].n || sscanf(line, "%llu %llx", &o, &h) != 2) break;
        s[ns - 1].offset[filled] = o, s[ns - 1].hash[filled] = h, filled++;
    }
    int bad = !feof(fp) || !s || filled != s[ns - 1].n;
    fclose(fp);
    if (bad) {
        snprintf(err, errn, "%s: malformed at line %d", path, lineno);
        for (int i = 0; i < ns; i++) free(s[i].offset), free(s[i].hash);
        free(s);
        *sets = NULL;
        return -1;
    }
    *sets = s;
    return ns;
}

static inline void rb_free(rb_set *sets, int n)
{
    for (int i = 0; i < n; i++) free(sets[i].offset), free(sets[i].hash);
    free(sets);
}

/* The set's blocks read from its model file in the cache into out [n * block_bytes]. Returns 0, or
 * -1 with a one-line reason in err (model missing: fetch it; a different size: not the file the
 * fixture was made from; a short read). */
static inline int rb_load(const rb_set *s, size_t block_bytes, uint8_t *out, char *err, size_t errn)
{
    const char *dir = getenv("LLM_RUN_MODELS"), *home = getenv("HOME");
    char path[1024];
    if (dir && *dir) snprintf(path, sizeof path, "%s/%s", dir, s->model);
    else snprintf(path, sizeof path, "%s/.cache/llm-run/%s", home ? home : ".", s->model);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return snprintf(err, errn, "%s: not found (scripts/fetch_model.sh smollm2-135m / qwen2.5-0.5b fetch it)", path), -1;
    int ok = fseek(fp, 0, SEEK_END) == 0 && (unsigned long long)ftell(fp) == s->model_bytes;
    if (!ok) snprintf(err, errn, "%s: not %llu bytes: not the file the fixture was made from", path, s->model_bytes);
    for (int i = 0; ok && i < s->n; i++) {
        ok = fseek(fp, (long)s->offset[i], SEEK_SET) == 0 && fread(out + (size_t)i * block_bytes, block_bytes, 1, fp) == 1;
        if (!ok) snprintf(err, errn, "%s: cannot read block %d at offset %" PRIu64, path, i, s->offset[i]);
    }
    fclose(fp);
    return ok ? 0 : -1;
}

#endif
