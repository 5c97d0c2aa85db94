/* support.c — the builders of tests/support/support.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/support.h"

/* --------------------------------------------------------------------- deterministic data */

float ts_frand(uint64_t *st)
{
    *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((double)(*st >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

void ts_fill(float *x, size_t n, uint64_t *st)
{
    for (size_t i = 0; i < n; i++) x[i] = ts_frand(st);
}

float ts_hash01(int a, int b, int c, int d)
{
    uint64_t x = ((uint64_t)(unsigned)a << 48) ^ ((uint64_t)(unsigned)b << 32) ^
                 ((uint64_t)(unsigned)c << 16) ^ (uint64_t)(unsigned)d;
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    return (float)(x >> 40) / (float)(1 << 24);
}

float ts_prob_random(int layer, int h, int p, int t, void *ctx)
{
    (void)ctx;
    return ts_hash01(layer, h, p, t);
}

char *ts_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    if (b) b[n] = 0;
    fclose(f);
    return b;
}

/* ---------------------------------------------------------------- parameters and caches */

int ts_params(policy_params *pp, const policy_ops *ops, double budget, uint64_t seed,
              const char *const *set, char *err, size_t errlen)
{
    memset(pp, 0, sizeof *pp);
    pp->budget = budget;
    pp->seed = seed;
    pp->hooks_always = 1;   /* these caches exist to drive the hooks: no passthrough */
    for (int i = 0; set && set[i]; i += 2)
        if (policy_params_set(pp, ops, set[i], set[i + 1], err, errlen) != 0) return -1;
    return 0;
}

int ts_kv_try(kv_cache *kv, const policy_ops *ops, double budget, uint64_t seed, const char *const *set,
              int L, int hkv, int H, int d, int n_prompt, int max_new, char *err, size_t errlen)
{
    assert_non_null(ops);
    policy_params pp;
    if (ts_params(&pp, ops, budget, seed, set, err, errlen) != 0) return -1;
    return kv_init(kv, ops, &pp, L, hkv, H, d, n_prompt, max_new, err, errlen);
}

void ts_kv(kv_cache *kv, const policy_ops *ops, double budget, uint64_t seed, const char *const *set,
           int L, int hkv, int H, int d, int n_prompt, int max_new)
{
    char err[256];
    int rc = ts_kv_try(kv, ops, budget, seed, set, L, hkv, H, d, n_prompt, max_new, err, sizeof err);
    if (rc) fprintf(stderr, "kv_init: %s\n", err);
    assert_int_equal(rc, 0);
}

void ts_expect_init_error(const policy_ops *ops, double budget, const char *const *set, int n_prompt,
                          int max_new, const char *want)
{
    policy_params pp;
    char err[256] = "";
    if (ts_params(&pp, ops, budget, 0, set, err, sizeof err) != 0) fail_msg("parameters refused: %s", err);
    kv_cache kv;
    assert_int_equal(kv_init(&kv, ops, &pp, 1, 1, 1, 4, n_prompt, max_new, err, sizeof err), -1);
    if (!strstr(err, want)) fail_msg("error \"%s\" lacks \"%s\"", err, want);
    assert_null(strchr(err, '\n'));
}

void ts_make_kv(kv_cache *kv, const char *name, int L, int hkv, int H, int n_prompt, int max_new,
                double budget, uint64_t seed, const char *const *set)
{
    ts_kv(kv, policy_find(name), budget, seed, set, L, hkv, H, TS_D, n_prompt, max_new);
}

/* ----------------------------------------------------------------------- driving a cache */

void ts_prefill(kv_cache *kv, int layer, int n, int pos0, const float *q, const float *k, const float *v,
                const float *colsum, int stride)
{
    kv_prefill_chunk c = {.layer = layer, .n_new = n, .pos0 = pos0, .q_new = q, .k_new = k,
                          .v_new = v, .colsum = colsum, .cand_stride = stride};
    char err[256];
    int rc = kv_prefill(kv, &c, err, sizeof err);
    if (rc) fprintf(stderr, "kv_prefill: %s\n", err);
    assert_int_equal(rc, 0);
}

int ts_decode(kv_cache *kv, int layer, int g, int t, const float *q, const float *k, const float *v)
{
    int slot = kv_decode_slot(kv, layer, g, t, q, k, v);
    kv_write(kv, layer, g, slot, t, k, v);
    return slot;
}

void ts_prefill_tokens(kv_cache *kv, const ts_tokens *tk, int pos0, int n, const float *colsum)
{
    int hkv = kv->n_kv_heads, H = kv->n_heads, d = kv->head_dim;
    float *k = calloc((size_t)n * hkv * d, sizeof *k), *v = calloc((size_t)n * hkv * d, sizeof *v);
    float *q = calloc((size_t)n * H * d, sizeof *q);
    assert_non_null(k);
    assert_non_null(v);
    assert_non_null(q);
    for (int r = 0; r < n; r++) {
        for (int g = 0; g < hkv; g++)
            for (int i = 0; i < d; i++) {
                k[((size_t)r * hkv + g) * d + i] = tk->key(pos0 + r, g, i);
                v[((size_t)r * hkv + g) * d + i] = tk->val(pos0 + r, g, i);
            }
        for (int h = 0; tk->query && h < H; h++)
            for (int i = 0; i < d; i++) q[((size_t)r * H + h) * d + i] = tk->query(pos0 + r, h, i);
    }
    for (int l = 0; l < kv->n_layers; l++) ts_prefill(kv, l, n, pos0, q, k, v, colsum, TS_STRIDE);
    free(k);
    free(v);
    free(q);
}

void ts_decode_tokens(kv_cache *kv, const ts_tokens *tk, int t, ts_prob_fn f, void *ctx, int skip_layer_hook)
{
    enum { MAX_H = 16, MAX_D = 64 };
    int H = kv->n_heads, G = H / kv->n_kv_heads, d = kv->head_dim;
    assert_true(H <= MAX_H && d <= MAX_D);
    float probs[MAX_H * TS_STRIDE], q[MAX_H * MAX_D], k[MAX_D], v[MAX_D];
    memset(q, 0, sizeof q);
    for (int h = 0; tk->query && h < H; h++)
        for (int i = 0; i < d; i++) q[h * d + i] = tk->query(t, h, i);
    for (int l = 0; l < kv->n_layers; l++) {
        for (int g = 0; g < kv->n_kv_heads; g++) {
            for (int i = 0; i < d; i++) {
                k[i] = tk->key(t, g, i);
                v[i] = tk->val(t, g, i);
            }
            int slot = kv_decode_slot(kv, l, g, t, q + (size_t)g * G * d, k, v);
            assert_true(slot >= 0 && slot <= kv->cap[kv_idx(kv, l, g)]);
            kv_write(kv, l, g, slot, t, k, v);
        }
        for (int h = 0; h < H; h++) {
            int g = h / G;
            const int32_t *pos = kv_positions(kv, l, g);
            for (int j = 0; j < kv_len(kv, l, g); j++)
                probs[h * TS_STRIDE + j] = f ? f(l, h, pos[j], t, ctx) : 0.0f;
        }
        for (int g = 0; g < kv->n_kv_heads; g++)
            kv_post_attn(kv, l, g, t, probs + (size_t)g * G * TS_STRIDE, TS_STRIDE);
        if (kv->ops->post_attn_layer && !skip_layer_hook) kv->ops->post_attn_layer(kv, l, t, probs, TS_STRIDE);
    }
}

void ts_check_identity(const policy_ops *ops, const char *const *set, const ts_tokens *tk, const float *colsum)
{
    kv_cache kv;
    ts_kv(&kv, ops, 1.0, 0, set, 2, 2, 4, 4, 6, 5);
    assert_int_equal(kv.cap[0], 11);
    ts_prefill_tokens(&kv, tk, 0, 6, colsum);
    for (int t = 6; t < 11; t++) ts_decode_tokens(&kv, tk, t, ts_prob_random, NULL, 0);
    assert_int_equal(kv.evictions, 0);
    for (int l = 0; l < 2; l++)
        for (int g = 0; g < 2; g++) {
            assert_int_equal(kv_len(&kv, l, g), 11);
            for (int j = 0; j < 11; j++) assert_int_equal(kv_positions(&kv, l, g)[j], j);
        }
    ts_assert_kv_follow(&kv, tk);
    kv_free(&kv);
}

/* ------------------------------------------------------------------- inspecting a cache */

void ts_assert_protected(const kv_cache *kv, int layer, int g, int sink, int recent, int t)
{
    for (int p = 0; p < sink && p < t; p++) assert_true(ts_has_pos(kv, layer, g, p));
    for (int p = t - recent; p < t; p++)
        if (p >= 0) assert_true(ts_has_pos(kv, layer, g, p));
}

int ts_has_pos(const kv_cache *kv, int layer, int g, int pos)
{
    return ts_slot_of(kv, layer, g, pos) >= 0;
}

int ts_slot_of(const kv_cache *kv, int layer, int g, int p)
{
    const int32_t *pos = kv_positions(kv, layer, g);
    for (int j = 0; j < kv_len(kv, layer, g); j++)
        if (pos[j] == p) return j;
    return -1;
}

void ts_sort_ints(int *a, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && a[j - 1] > a[j]; j--) {
            int tmp = a[j];
            a[j] = a[j - 1];
            a[j - 1] = tmp;
        }
}

int ts_live_positions(const kv_cache *kv, int layer, int g, int *out)
{
    int n = kv_len(kv, layer, g);
    const int32_t *pos = kv_positions(kv, layer, g);
    for (int j = 0; j < n; j++) out[j] = pos[j];
    ts_sort_ints(out, n);
    return n;
}

void ts_assert_live(const kv_cache *kv, int layer, int g, const int *want, int n)
{
    int got[256];
    assert_true(kv_len(kv, layer, g) <= 256);
    int m = ts_live_positions(kv, layer, g, got);
    if (m != n) fprintf(stderr, "layer %d head %d: %d live, want %d\n", layer, g, m, n);
    assert_int_equal(m, n);
    for (int i = 0; i < n; i++) assert_int_equal(got[i], want[i]);
}

void ts_assert_kv_follow(const kv_cache *kv, const ts_tokens *tk)
{
    int d = kv->head_dim;
    for (int l = 0; l < kv->n_layers; l++)
        for (int g = 0; g < kv->n_kv_heads; g++) {
            const float *K = kv_keys(kv, l, g), *V = kv_values(kv, l, g);
            const int32_t *pos = kv_positions(kv, l, g);
            for (int j = 0; j < kv_len(kv, l, g); j++)
                for (int i = 0; i < d; i++) {
                    assert_float_equal(K[j * d + i], tk->key(pos[j], g, i), 0);
                    assert_float_equal(V[j * d + i], tk->val(pos[j], g, i), 0);
                }
        }
}
