/* The capped decode re-compression of ada_snapkv and ada_pyramidkv on the device (POLICIES.md
 * §6.2, §7.6; kernels_cuda.cuh launch_ada_recompress): eviction/policy_snapkv.c snap_post_attn →
 * snap_recompress_layer (snap_alloc.c) for a layer in which some region reached its capacity
 * after the step's append: ada_plan (every head's observation scores and pooling, the Ada-KV
 * split of the layer's H_kv·base over the heads by a global top-B, the clamps, per-head
 * top-B_g + the window), kv_compact of each head, ada_final_caps + ada_fill (the new targets and
 * capacities) and snap_relayout (the arena re-partitioned, live slots moved in the CPU's order).
 *
 * One block per layer (the split needs every head's scores): the heads' scores one after the
 * other (snap_scores.cuh, the CPU's fp32 order), the global rank by counting (score desc, head
 * asc, position asc: the CPU's heap sort order), the budgets in double as snap_ada_allocate
 * (no contraction: __dmul_rn / __dadd_rn; this file is compiled without -warn-double-usage).
 * The layer's final lengths, capacities and targets are also written to rep (the step's copy
 * back carries them to the host mirror). */
#include "kernels/cuda/kernels_cuda.cuh"
#include "kernels/cuda/evict.cuh"
#include "kernels/cuda/ada_split.h"
#include "kernels/cuda/snap_scores.cuh"

#define AR_THREADS 128

/* Moves slot src to slot dst (absolute), this thread's columns of K and V (and, thread 0, the
 * position and score). */
template <typename T>
__device__ __forceinline__ void ar_move(const ada_rc_args &a, size_t dst, size_t src)
{
    const int hd = a.head_dim;
    T *K = (T *)a.kc, *V = (T *)a.vc;
    for (int i = threadIdx.x; i < hd; i += AR_THREADS) {
        K[dst * hd + i] = K[src * hd + i];
        V[dst * hd + i] = V[src * hd + i];
    }
    if (threadIdx.x == 0) {
        a.pos[dst] = a.pos[src];
        if (a.score) a.score[dst] = a.score[src];
    }
}

template <typename T> __global__ void __launch_bounds__(AR_THREADS) ada_rc_kernel(ada_rc_args a)
{
    const int H = a.n_kv_heads, tid = threadIdx.x, hd = a.head_dim, end = a.step[1] + 1;
    __shared__ int s_L[AR_MAX_HEADS], s_np[AR_MAX_HEADS], s_b[AR_MAX_HEADS], s_cnt[AR_MAX_HEADS],
        s_cap[AR_MAX_HEADS];
    __shared__ size_t s_off[AR_MAX_HEADS], s_noff[AR_MAX_HEADS];
    __shared__ double s_frac[AR_MAX_HEADS];
    __shared__ int s_any, s_compress, s_score0, s_over;
    __shared__ float red[32];
    __shared__ float s_inv;
    if (tid == 0) {
        int any = 0, compress = 0;
        for (int g = 0; g < H; g++) {
            s_L[g] = a.len[g];
            s_off[g] = a.off[g];
            any |= s_L[g] >= a.cap[g];
            s_np[g] = sr_count_below(a.pos + s_off[g], s_L[g], end - a.w);
            compress |= s_np[g] > a.base;
        }
        s_any = any;
        s_compress = compress;
    }
    __syncthreads();
    if (s_any) {
        const sr_score_par sp = {a.q_ring, a.q_ring_rows, a.n_heads, a.G, hd, a.w, a.kernel, a.pool_avg, a.gqa_max,
                                 a.scale};
        const size_t S4 = 4 * a.stride;
        /* ada_plan: every head's scores and pooling, then the split */
        if (s_compress) {
            for (int g = 0; g < H; g++) {
                float *row = a.scratch + g * S4, *acc = row + a.stride, *A = acc + a.stride, *pooled = A + a.stride;
                sr_obs_pool<T, AR_THREADS>(sp, g, (const T *)a.kc + s_off[g] * hd, a.pos + s_off[g], s_L[g], s_np[g],
                                           end, row, acc, A, pooled, red, &s_inv);
            }
            /* snap_ada_allocate: the global top-B (B = H_kv·base), ties score desc, head asc,
             * position asc; map[g][j] = 1 for an entry in it */
            const int total = H * a.base;
            for (int g = 0; g < H; g++) {
                const float *pg = a.scratch + g * S4 + 3 * a.stride;
                for (int j = tid; j < s_np[g]; j += AR_THREADS) {
                    const float v = pg[j];
                    int rank = 0;
                    for (int h = 0; h < H && rank < total; h++) {
                        const float *ph = a.scratch + h * S4 + 3 * a.stride;
                        for (int i = 0; i < s_np[h] && rank < total; i++)
                            rank += ph[i] > v || (ph[i] == v && (h < g || (h == g && i < j)));
                    }
                    a.map[g * a.stride + j] = rank < total;
                }
            }
            __syncthreads();
            if (tid == 0) {
                for (int g = 0; g < H; g++) {
                    int c = 0;
                    for (int j = 0; j < s_np[g]; j++) c += a.map[g * a.stride + j];
                    s_cnt[g] = c;
                }
                /* reference (a.alloc_ref) or exact rounding, as snap_ada_allocate (ada_split.h) */
                ada_round_budgets(s_cnt, s_np, H, total, a.oma, a.alloc_ref ? a.a_floor : a.a_share, a.alloc_ref, s_frac, s_b);
            }
        }
        if (tid == 0) {
            /* the bound the capacities were sized for; no split: every head the uniform base */
            for (int g = 0; g < H; g++) {
                if (!s_compress) s_b[g] = a.base;
                else if (s_b[g] > a.keep_max - a.w) s_b[g] = a.keep_max - a.w;
            }
            /* Σ B_g above H_kv·base (reference rounding): the excess back from the largest
             * budget, ties to the higher head (ada_plan, eviction/snap_alloc.c) */
            if (s_compress) ada_give_back_excess(s_b, H, H * a.base);
            /* head 0 within the arena (cap0_limit of a decode plan) */
            int lim0 = a.arena - (s_L[0] - s_np[0]);
            if (lim0 < 0) lim0 = 0;
            s_score0 = 0;
            if (s_b[0] > lim0) {
                s_b[0] = lim0;
                s_score0 = !s_compress && lim0 < s_np[0];
            }
        }
        __syncthreads();
        if (s_score0) {
            float *row = a.scratch, *acc = row + a.stride, *A = acc + a.stride, *pooled = A + a.stride;
            sr_obs_pool<T, AR_THREADS>(sp, 0, (const T *)a.kc + s_off[0] * hd, a.pos + s_off[0], s_L[0], s_np[0], end,
                                       row, acc, A, pooled, red, &s_inv);
        }
        /* per head: top-B_g + the window, compacted in place (kv_compact) */
        for (int g = 0; g < H; g++) {
            int *keep = a.map + g * a.stride;
            sr_topk_keep<AR_THREADS>(a.scratch + g * S4 + 3 * a.stride, s_np[g], s_L[g], s_b[g], keep);
            ev_compact<T, AR_THREADS>((T *)a.kc + s_off[g] * hd, (T *)a.vc + s_off[g] * hd, a.pos + s_off[g],
                                      a.score ? a.score + s_off[g] : NULL, s_L[g], hd, keep, a.len + g);
            __syncthreads();
        }
        if (tid == 0) {
            /* ada_final_caps + ada_fill: targets B_g + w, capacities B_g + w + slack (≥ 1), the
             * arena's spare slots to heads 0, 1, … up to cap_max; the new offsets */
            int spare = a.arena;
            for (int g = 0; g < H; g++) {
                a.target[g] = s_b[g] + a.w;
                const int want = s_b[g] + a.w + a.slack;
                s_cap[g] = want < 1 ? 1 : want;
                spare -= s_cap[g] + 1;
            }
            s_over = spare < 0; /* the budgets overflow the arena: no re-partition */
            for (int g = 0; g < H && spare > 0; g++) {
                int add = a.cap_max - s_cap[g];
                if (add > spare) add = spare;
                if (add > 0) {
                    s_cap[g] += add;
                    spare -= add;
                }
            }
            size_t at = s_off[0];
            for (int g = 0; g < H; g++) {
                s_noff[g] = at;
                at += (size_t)s_cap[g] + 1;
                s_L[g] = a.len[g];
            }
        }
        __syncthreads();
        if (s_over) { /* reported as capacities 0 (the host refuses the step); nothing moves */
            for (int g = tid; g < H; g += AR_THREADS) {
                a.rep_len[g] = a.len[g];
                a.rep_cap[g] = 0;
                a.rep_target[g] = a.target[g];
            }
            return;
        }
        /* snap_relayout: regions moving left ascending (rows ascending), then those moving
         * right descending (rows descending); each thread its own columns, in that order */
        for (int g = 0; g < H; g++)
            if (s_noff[g] < s_off[g])
                for (int i = 0; i < s_L[g]; i++) ar_move<T>(a, s_noff[g] + i, s_off[g] + i);
        for (int g = H - 1; g >= 0; g--)
            if (s_noff[g] > s_off[g])
                for (int i = s_L[g] - 1; i >= 0; i--) ar_move<T>(a, s_noff[g] + i, s_off[g] + i);
        __syncthreads();
        if (tid == 0)
            for (int g = 0; g < H; g++) {
                a.off[g] = s_noff[g];
                a.cap[g] = s_cap[g];
            }
        __syncthreads();
    }
    /* the layer's state for the host mirror */
    for (int g = tid; g < H; g += AR_THREADS) {
        a.rep_len[g] = a.len[g];
        a.rep_cap[g] = a.cap[g];
        a.rep_target[g] = a.target[g];
    }
}

template <typename T> static cudaError_t ada_rc_go(const ada_rc_args &a, cudaStream_t s)
{
    ada_rc_kernel<T><<<1, AR_THREADS, 0, s>>>(a);
    return cudaPeekAtLastError();
}

cudaError_t launch_ada_recompress(const ada_rc_args *a, cudaStream_t s)
{
    if (a->n_kv_heads < 1 || a->n_kv_heads > AR_MAX_HEADS || a->head_dim < 1 || a->G < 1 || a->w < 1 ||
        a->kernel < 1 || a->q_ring_rows < a->w || a->base < 0 || !a->kc || !a->vc || !a->pos || !a->off || !a->len ||
        !a->cap || !a->target || !a->step || !a->q_ring || !a->scratch || !a->map || !a->rep_len || !a->rep_cap ||
        !a->rep_target)
        return cudaErrorInvalidValue;
    return CU_DISPATCH(a->kv_dt, ada_rc_go, *a, s);
}
