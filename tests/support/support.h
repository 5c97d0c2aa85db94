/* tests/support/support.h — builders shared by the cmocka tests (tests/test_*.c; the Makefile
 * links the .c files of this folder into every test binary): deterministic test data, policy
 * parameters and small hand-built KV caches, driving a cache through the engine's hooks as the
 * engine does (kv_prefill, kv_decode_slot + kv_write, kv_post_attn, post_attn_layer), and
 * inspecting what a cache holds. Failures are cmocka assertions. Include after <cmocka.h>. */
#ifndef LLM_TESTS_SUPPORT_H
#define LLM_TESTS_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "eviction/eviction.h"

/* |a − b| ≤ tol (doubles), else the message (printf arguments) and the two values, and the test
 * fails (cmocka: needs <cmocka.h> and <math.h> before use). */
#define TS_CLOSE(a, b, tol, ...)                                                               \
    do {                                                                                       \
        double a_ = (a), b_ = (b), t_ = (tol);                                                 \
        if (!(fabs(a_ - b_) <= t_)) {                                                          \
            print_error(__VA_ARGS__);                                                          \
            print_error(": %.9g vs %.9g (diff %.3g > tol %.3g)\n", a_, b_, fabs(a_ - b_), t_); \
            fail();                                                                            \
        }                                                                                      \
    } while (0)

/* --------------------------------------------------------------------- quantized blocks
 * (quant_data.c, for the tests of kernels/cpu/quant*) */

/* xorshift64 step: the next 32 random bits of state *st; as a float in [-1, 1). */
uint32_t ts_xorshift(uint64_t *st);
float ts_xorshift_float(uint64_t *st);
/* n bytes (rounded up to 64) aligned to 64; asserts on failure. Free with free(). */
void *ts_aligned(size_t n);
/* rows x K weights of block dtype dt (exactly rows x dtype_row_bytes, so ASan sees reads past the
 * last block): random quant bits, f16 scales of either sign up to 0.02 (and mins / dmin for the
 * dtypes that have them). malloc'd. */
uint8_t *ts_rand_blocks(int dt, int rows, int K, uint64_t *st);
/* Σ_k |w_k·x_k| in double: the scale the f32 rounding tolerances are relative to. */
double ts_mag(const float *w, const float *x, int K);
struct cpu_quant_ops;
/* One case of the quantized-kernel cross-check (tests/test_quant.c with 8-bit activations,
 * tests/test_quant_act16.c with 16-bit): rows x K random weight blocks of dt, max(nxs) random
 * activation rows (row 0 scaled by 40) quantized by ref (a scalar table) and by q; for each nx in
 * nxs[0..n_nx): q's mm, its packed gemm (when it has one) and nx·rows separate 1x1 matvecs all
 * within 1e-5·Σ|w·x| of ref's mm, and mm within that of the matvecs. A mismatch fails the test
 * (cmocka), naming q, tag, dt, K, rows, nx and the element. Returns n_nx. */
int ts_quant_check_vs_scalar(const struct cpu_quant_ops *ref, const struct cpu_quant_ops *q, int dt, int rows, int K,
                             const int *nxs, int n_nx, const char *tag, uint64_t *st);

/* --------------------------------------------------------------------- attention reference
 * (attn_ref.c) */

/* float64 causal attention, the reference of attn_prefill_head: n_new query rows q (row stride
 * qs) attend to n_live live rows Kl/Vl [n_live][hd] then the new rows Kn/Vn (row strides ks /
 * vs) up to their own position; every softmax row materialised. out [n_new][hd]; colsum[j] +=
 * Σ_i p[i][j] over the n_live + n_new keys (the caller zeroes it). */
void ts_attn_prefill_ref(const float *q, int qs, const float *Kl, const float *Vl, int n_live, const float *Kn,
                         int ks, const float *Vn, int vs, int n_new, int hd, float scale, double *out, double *colsum);

/* --------------------------------------------------------------------- deterministic data */

/* Uniform in [-1, 1) from a 64-bit LCG state (test data only). */
float ts_frand(uint64_t *st);

/* x[0..n) = ts_frand draws. */
void ts_fill(float *x, size_t n, uint64_t *st);

/* Deterministic pseudo-random value in [0, 1) for (a, b, c, d) (splitmix64 finaliser). */
float ts_hash01(int a, int b, int c, int d);

/* Probability that query head h of `layer` puts on the token at position p at step t. */
typedef float (*ts_prob_fn)(int layer, int h, int p, int t, void *ctx);

/* ts_hash01(layer, h, p, t): unnormalised pseudo-random attention. */
float ts_prob_random(int layer, int h, int p, int t, void *ctx);

/* The whole file at path, NUL-terminated (malloc'd), or NULL. */
char *ts_slurp(const char *path);

/* ---------------------------------------------------------------- parameters and caches */

/* *pp = the parameters: budget (a fraction, or tokens when > 1), seed, and NAME, VALUE pairs
 * (set: NULL-terminated, or NULL) through policy_params_set. Returns 0, or -1 with err set. */
int ts_params(policy_params *pp, const policy_ops *ops, double budget, uint64_t seed,
              const char *const *set, char *err, size_t errlen);

/* kv_init of ops with ts_params(budget, seed, set) for L layers, hkv KV heads, H query heads of
 * head_dim d, a prompt of n_prompt tokens and max_new to generate. Returns 0, or -1 with err
 * set (a parameter or kv_init). */
int ts_kv_try(kv_cache *kv, const policy_ops *ops, double budget, uint64_t seed, const char *const *set,
              int L, int hkv, int H, int d, int n_prompt, int max_new, char *err, size_t errlen);

/* ts_kv_try that must succeed (the error goes to stderr, then the test fails). */
void ts_kv(kv_cache *kv, const policy_ops *ops, double budget, uint64_t seed, const char *const *set,
           int L, int hkv, int H, int d, int n_prompt, int max_new);

/* ts_kv of the policy called `name` with head_dim TS_D, in the argument order of the policy
 * tests (shape, then budget, seed and NAME, VALUE pairs). */
#define TS_D 4
void ts_make_kv(kv_cache *kv, const char *name, int L, int hkv, int H, int n_prompt, int max_new,
                double budget, uint64_t seed, const char *const *set);

/* The parameters set (policy_params_set accepts every NAME, VALUE of set) but kv_init of ops on
 * a cache of 1 layer, 1 head of head_dim 4 for n_prompt + max_new tokens fails with a one-line
 * error that contains `want` (the flag at fault, "--NAME", or the reason). */
void ts_expect_init_error(const policy_ops *ops, double budget, const char *const *set, int n_prompt,
                          int max_new, const char *want);

/* ----------------------------------------------------------------------- driving a cache */

/* kv_prefill of `layer` that must succeed: n tokens at pos0, q [n][H][d], k, v [n][hkv][d],
 * column sums colsum [hkv][stride] (or NULL). */
void ts_prefill(kv_cache *kv, int layer, int n, int pos0, const float *q, const float *k, const float *v,
                const float *colsum, int stride);

/* One decode write of (layer, g) at position t: the policy's slot, then kv_write. Returns the
 * slot. q: the group's queries [G][d]; k, v: [d]. */
int ts_decode(kv_cache *kv, int layer, int g, int t, const float *q, const float *k, const float *v);

/* Tokens given by formulas: the key and value a token at position p has in KV head g, and the
 * query of query head h (component i < head_dim); query NULL: zero queries. */
typedef float (*ts_formula)(int p, int head, int i);
typedef struct {
    ts_formula key, val, query;
} ts_tokens;

#define TS_STRIDE 64 /* probs / colsum row stride of the ts_tokens drivers (≥ cap + 1, candidates) */

/* Prefill of positions pos0..pos0+n−1 in every layer, tokens from tk, column sums
 * colsum [hkv][TS_STRIDE] (the same for every layer) or NULL. */
void ts_prefill_tokens(kv_cache *kv, const ts_tokens *tk, int pos0, int n, const float *colsum);

/* One decode step at position t in every layer, as the engine does it: slot from the policy,
 * write, probabilities over the live slots (f, in slot order; f NULL: zeros), kv_post_attn per
 * KV head, then the policy's post_attn_layer unless skip_layer_hook. At most 16 query heads. */
void ts_decode_tokens(kv_cache *kv, const ts_tokens *tk, int t, ts_prob_fn f, void *ctx, int skip_layer_hook);

/* Identity (POLICIES.md §15.1): ops (with set) on a cache of 2 layers, 2 KV heads, 4 query heads
 * whose capacity covers a 6-token prompt and 5 decode steps (budget 1.0) evicts nothing, keeps
 * the slots in position order and K/V with their tokens. colsum: the prefill's column sums
 * [2][TS_STRIDE], or NULL; decode attention: ts_prob_random. */
void ts_check_identity(const policy_ops *ops, const char *const *set, const ts_tokens *tk, const float *colsum);

/* ------------------------------------------------------------------- inspecting a cache */

/* §15.1 protected sets for the token about to be written at t: the positions < sink that
 * entered and t − recent .. t − 1 are all live in (layer, g). */
void ts_assert_protected(const kv_cache *kv, int layer, int g, int sink, int recent, int t);

/* 1 if position pos is live in (layer, g). */
int ts_has_pos(const kv_cache *kv, int layer, int g, int pos);

/* Slot of position p in (layer, g), or −1. */
int ts_slot_of(const kv_cache *kv, int layer, int g, int p);

/* Sorts a[0..n) ascending (insertion sort: the tests' lists are short). */
void ts_sort_ints(int *a, int n);

/* Sorted live positions of (layer, g) into out [kv_len]; returns the count. */
int ts_live_positions(const kv_cache *kv, int layer, int g, int *out);

/* The live positions of (layer, g), sorted, are want[0..n) (at most 256). */
void ts_assert_live(const kv_cache *kv, int layer, int g, const int *want, int n);

/* Every live slot still holds its own token's key and value (tk->key, tk->val of its position):
 * K/V moved with the position. */
void ts_assert_kv_follow(const kv_cache *kv, const ts_tokens *tk);

#endif
