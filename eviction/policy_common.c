/* policy_common.c — the helpers of eviction/policy_common.h. */
#include "eviction/policy_common.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

uint64_t evict_splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

double evict_rng_u01(uint64_t seed, uint64_t stream, int layer, int g, int64_t pos, int64_t idx)
{
    uint64_t h = evict_splitmix64(stream);
    h = evict_splitmix64(h ^ (uint64_t)(uint32_t)layer);
    h = evict_splitmix64(h ^ (uint64_t)(uint32_t)g);
    h = evict_splitmix64(h ^ (uint64_t)pos);
    h = evict_splitmix64(h ^ (uint64_t)idx);
    return (double)(evict_splitmix64(seed ^ h) >> 11) * 0x1.0p-53;
}

int evict_protect_init(kv_cache *kv, const policy_params *p, const char *prefix, int n_prompt, int max_new,
                       int *sink, int *recent, char *err, size_t errlen)
{
    char sink_flag[32], recent_flag[32];
    snprintf(sink_flag, sizeof sink_flag, "%s-sink", prefix);
    snprintf(recent_flag, sizeof recent_flag, "%s-recent", prefix);
    if (policy_param_int(p, sink_flag, EVICT_SINK_DEFAULT, 0, 1 << 20, sink, err, errlen) ||
        policy_param_int(p, recent_flag, EVICT_RECENT_DEFAULT, 0, 1 << 20, recent, err, errlen))
        return -1;
    return kv_set_protected_capacity(kv, p, n_prompt, max_new, *sink, *recent);
}

int evict_oldest_slot(const int32_t *pos, int n)
{
    int oldest = 0;
    for (int j = 1; j < n; j++)
        if (pos[j] < pos[oldest]) oldest = j;
    return oldest;
}

static int cmp_rank(const void *a, const void *b)
{
    const evict_rank *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return x < y ? -1 : x > y;
}

int evict_keep_ranked(int *keep, int n_keep, evict_rank *rank, int n_rank, int cap)
{
    qsort(rank, (size_t)n_rank, sizeof *rank, cmp_rank);
    for (int i = 0; i < n_rank && n_keep < cap; i++) keep[n_keep++] = rank[i].idx;
    evict_sort_ints(keep, n_keep);
    return n_keep;
}

int evict_keep_all(int *keep, int n)
{
    for (int j = 0; j < n; j++) keep[j] = j;
    return n;
}

void evict_sort_ints(int *a, int n)
{
    qsort(a, (size_t)n, sizeof *a, cmp_int);
}

/* 1 when candidate a ranks above b: larger score, ties → smaller position (§1.6). */
static int ranks_above(const float *score, const int32_t *pos, int a, int b)
{
    return score[a] > score[b] || (score[a] == score[b] && pos[a] < pos[b]);
}

/* Restores the min-heap heap[0..m) (root = the lowest-ranked kept candidate) below node i. */
static void sift_down(int *heap, int m, int i, const float *score, const int32_t *pos)
{
    for (;;) {
        int lo = i, l = 2 * i + 1, r = l + 1;
        if (l < m && ranks_above(score, pos, heap[lo], heap[l])) lo = l;
        if (r < m && ranks_above(score, pos, heap[lo], heap[r])) lo = r;
        if (lo == i) return;
        int tmp = heap[i];
        heap[i] = heap[lo];
        heap[lo] = tmp;
        i = lo;
    }
}

int evict_select_top(const float *score, const int32_t *pos, int n, int k, unsigned char *sel, int *heap,
                     int *keep)
{
    int m = 0;
    for (int j = 0; j < n && k > 0; j++) {
        if (sel[j]) continue;
        if (m < k) {
            /* heap not full: insert and sift up */
            int i = m++;
            heap[i] = j;
            while (i > 0 && ranks_above(score, pos, heap[(i - 1) / 2], heap[i])) {
                int p = (i - 1) / 2, tmp = heap[p];
                heap[p] = heap[i];
                heap[i] = tmp;
                i = p;
            }
        } else if (ranks_above(score, pos, j, heap[0])) {
            /* better than the worst kept one: replace the root */
            heap[0] = j;
            sift_down(heap, m, 0, score, pos);
        }
    }
    for (int i = 0; i < m; i++) sel[heap[i]] = 1;
    /* the keep-list in candidate (= position) order */
    int n_keep = 0;
    for (int j = 0; j < n; j++)
        if (sel[j]) keep[n_keep++] = j;
    return n_keep;
}

void evict_free_all(void *const *ptrs, size_t n)
{
    for (size_t i = 0; i < n; i++) free(ptrs[i]);
}

/* ------------------------------------------------------------ k-center (subgen, §8.2) */

/* ‖x − y‖₂² for x, y [d], summed in double, i in order. */
double evict_dist2(const float *x, const float *y, int d)
{
    double s = 0.0;
    for (int i = 0; i < d; i++) {
        double e = (double)x[i] - y[i];
        s += e * e;
    }
    /* a non-finite key (NaN/Inf from corrupt weights run with --no-check) counts as infinitely
     * far: the farthest-point search always finds a point, never index -1 (issue 19) */
    return s >= 0.0 && s <= DBL_MAX ? s : DBL_MAX;
}

/* Greedy k-center (Gonzalez '85, §8.2). X: n points X[i] [d] (fp32, read through pointers),
 * k ≥ 1 centers, the first is X[first]; each next one is the point farthest (ℓ2) from the
 * centers so far, ties → smaller index (= older token when X is in position order).
 * centers: out (may be NULL), min(k, n) indices in selection order; radius: out (may be NULL), the covering
 * radius max_i min_c ‖X[i] − X[c]‖₂ after the last center; dist: scratch [n].
 * Returns the number of centers. Cost O(k·n·d). */
int subgen_gonzalez(const float *const *X, int n, int d, int k, int first, int *centers,
                    double *radius, double *dist)
{
    if (n <= 0 || k <= 0) {
        if (radius) *radius = 0.0;
        return 0;
    }
    if (k > n) k = n;
    /* the first center and every point's (squared) distance to it; a center has dist −1 */
    if (centers) centers[0] = first;
    for (int i = 0; i < n; i++) dist[i] = evict_dist2(X[i], X[first], d);
    dist[first] = -1.0;
    for (int c = 1; c < k; c++) {
        /* the farthest point from the current centers */
        int j = -1;
        for (int i = 0; i < n; i++)
            if (dist[i] >= 0.0 && (j < 0 || dist[i] > dist[j])) j = i;
        if (centers) centers[c] = j;
        dist[j] = -1.0;
        /* update the distances to the nearest center */
        for (int i = 0; i < n; i++)
            if (dist[i] >= 0.0) {
                double e = evict_dist2(X[i], X[j], d);
                if (e < dist[i]) dist[i] = e;
            }
    }
    if (radius) {
        double m = 0.0;
        for (int i = 0; i < n; i++)
            if (dist[i] > m) m = dist[i];
        *radius = sqrt(m);
    }
    return k;
}
