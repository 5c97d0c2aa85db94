/* policy_common.h — helpers the policy files of eviction/ share (internal to the directory;
 * eviction/eviction.h stays its interface):
 *   - the counter RNG of POLICIES.md §1.6 (random, hashevict, subgen_stream) and the greedy
 *     k-center of the subgen policies (§8.2, §8.3);
 *   - the sink + recent protected sets of the evict-then-attend policies (hashevict §9,
 *     scissorhands §10.1, l2norm §10.2, random §10.4): their flags, the capacity they imply,
 *     the protection test, the ranked prefill selection and the oldest-slot fallback;
 *   - keep-list and scratch utilities every prefill selection uses. */
#ifndef LLM_EVICTION_POLICY_COMMON_H
#define LLM_EVICTION_POLICY_COMMON_H

#include "eviction/eviction.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* --------------------------------------------------------------- counter RNG (§1.6) */

/* splitmix64 finaliser. */
uint64_t evict_splitmix64(uint64_t x);

/* U(seed; stream, layer, g, pos, idx) in [0, 1): the counter fields chained through
 * splitmix64, xored with the seed, mixed once more; 53-bit mantissa. */
double evict_rng_u01(uint64_t seed, uint64_t stream, int layer, int g, int64_t pos, int64_t idx);

/* ------------------------------------------- sink + recent protection (§9.3, §10.1-§10.4) */

#define EVICT_SINK_DEFAULT 4
#define EVICT_RECENT_DEFAULT 10

/* The rows of a policy_param_def table for --PREFIX-sink and --PREFIX-recent (generic aliases
 * sink and window). PREFIX: a string literal ("l2", "rnd", ...). */
#define EVICT_PROTECT_PARAM_DEFS(prefix)                                                           \
    {prefix "-sink", "sink", PARAM_INT, "4", NULL, "first positions never evicted"},                 \
    {prefix "-recent", "window", PARAM_INT, "10", NULL, "most recent positions never evicted"}

/* Reads --PREFIX-sink and --PREFIX-recent (defaults EVICT_SINK_DEFAULT, EVICT_RECENT_DEFAULT,
 * 0 .. 2^20) into *sink, *recent and gives every (layer, KV head) the protected capacity
 * (kv_set_protected_capacity: the budget's, raised to C_min = sink + recent + 1, §1.2).
 * Returns the capacity, or -1 with err set (a bad flag). */
int evict_protect_init(kv_cache *kv, const policy_params *p, const char *prefix, int n_prompt, int max_new,
                       int *sink, int *recent, char *err, size_t errlen);

/* 1 when position pos is protected for the token at position t: pos < sink (an attention sink)
 * or pos ≥ t − recent (the recent window). */
static inline int evict_protected(int32_t pos, int sink, int recent, int t)
{
    return pos < sink || (int64_t)pos >= (int64_t)t - recent;
}

/* [DECISION] the victim when no slot is a candidate (unreachable with C ≥ sink + recent + 1):
 * the slot of the oldest position among pos[0..n), n ≥ 1. */
int evict_oldest_slot(const int32_t *pos, int n);

/* A prefill candidate ranked by key: lower keys are kept first, ties by smaller position. */
typedef struct {
    double key;
    int32_t pos;
    int idx; /* candidate index */
} evict_rank;

/* Completes a prefill keep-list: keep[0..n_keep) holds the protected candidates; the ranked
 * ones rank[0..n_rank) (sorted here) are added while fewer than cap are kept, and the list is
 * sorted ascending. Returns its length. */
int evict_keep_ranked(int *keep, int n_keep, evict_rank *rank, int n_rank, int cap);

/* ------------------------------------------------------------------- keep-lists, scratch */

/* Top-k selection of the heavy-hitter policies (h2o §3.4, tova §10.3): adds to sel[0..n)
 * (1 = kept) the best k of the candidates not selected yet, by score (larger first, ties: the
 * smaller position, §1.6), found with a min-heap in heap [k]; then writes the keep-list, the
 * selected candidate indices in ascending order, into keep. Returns its length. */
int evict_select_top(const float *score, const int32_t *pos, int n, int k, unsigned char *sel, int *heap,
                     int *keep);

/* keep[j] = j for j < n (every candidate fits); returns n. */
int evict_keep_all(int *keep, int n);

/* Sorts a[0..n) ascending. */
void evict_sort_ints(int *a, int n);

/* Candidates a prefill hook may see per head: the capacity + 1 (a live region) plus a whole
 * prompt chunk (at most n_prompt tokens, at least 1). */
static inline int evict_max_cand(int cap, int n_prompt)
{
    return cap + 1 + (n_prompt > 0 ? n_prompt : 1);
}

/* Grows the array p to n elements of its type; on failure p stays as it was and ok becomes 0
 * (scratch that several arrays share: grow each, then test ok once). */
#define EVICT_GROW(p, n, ok)                                                                       \
    do {                                                                                           \
        void *grown_ = realloc((p), (size_t)(n) * sizeof *(p));                                    \
        if (grown_) (p) = grown_;                                                                  \
        else (ok) = 0;                                                                             \
    } while (0)

/* --------------------------------------------- greedy k-center (subgen §8.2, subgen_stream §8.3) */

/* ‖x − y‖₂² for x, y [d], summed in double, i in order. */
double evict_dist2(const float *x, const float *y, int d);

/* Greedy k-center (Gonzalez '85, §8.2). X: n points X[i] [d] (fp32, read through pointers),
 * k ≥ 1 centers, the first is X[first]; each next one is the point farthest (ℓ2) from the
 * centers so far, ties → smaller index. centers: out (may be NULL), min(k, n) indices in
 * selection order; radius: out (may be NULL), the covering radius max_i min_c ‖X[i] − X[c]‖₂
 * after the last center (0 when k ≥ n); dist: scratch [n]. Returns the number of centers. */
int subgen_gonzalez(const float *const *X, int n, int d, int k, int first, int *centers, double *radius,
                    double *dist);

/* scissorhands (policy_scissorhands.c): gives every kept prompt token of every region that has no
 * history yet its prefill entry [colsum_j / (N − j) ≥ 1/N], as its decode hooks do lazily at the
 * first hook after a prefill (nothing else changes the scores before it) — for a device that runs
 * the decode hooks itself (eviction/kv_device.h kv_device_prepare_decode). */
void scissorhands_prompt_history_all(kv_cache *kv);

/* hashevict (policy_hashevict.c), for a device that runs its decode rule: brings every region's
 * per-slot state up to date as its hooks do lazily (the codes of slots written since, the
 * stashed prefill accumulators). (hashevict_device_proj: eviction/kv_device.h.) */
void hashevict_refresh_all(kv_cache *kv);

/* free() of every argument: a policy state's arrays, then the state itself. */
#define EVICT_FREE(...)                                                                            \
    evict_free_all((void *[]){__VA_ARGS__}, sizeof((void *[]){__VA_ARGS__}) / sizeof(void *))
void evict_free_all(void *const *ptrs, size_t n);

#endif
