/* The attention of a decode step in one kernel (kernels_cuda.cuh, launch_attn_step):
 * flash-decoding over the variable per-(layer, KV head) lengths — block (h, s) attends query head
 * h over slots [s·split_len, (s+1)·split_len) of its KV head and writes a partial (max, sum,
 * weighted values) — and the LAST block of each KV head to finish (an arrival counter per KV
 * head, after a memory fence: the classic threadfence reduction) then, for that head's group:
 * combines the partials in fixed order (output, log-sum-exp), turns the step's logits into the
 * probabilities the policy asked for (copied back by host-assisted policies, or accumulated into
 * the per-slot scores: H2O / BUZZ, POLICIES.md §1.5), evicts back to capacity (local, streaming,
 * h2o: kernels/cuda/evict.cuh) and updates the length. So the whole attention of a layer, with
 * its statistics and the device policies' eviction, is one launch. */
#include "kernels/cuda/kernels_cuda.cuh"
#include "kernels/cuda/evict.cuh"

#define DC_THREADS 128
#define DC_MAX_SPLIT 1024 /* split_len limit (shared logits buffer) */
#define DC_MAX_G 32
/* policy_scissorhands.c ring_push: indicator `bit` into the ring of `hist` entries of history e */
__device__ __forceinline__ void sh_push(unsigned long long *e, unsigned hist, bool bit)
{
    unsigned *w = (unsigned *)(e + 7);
    const unsigned np = w[0], i = np % hist;
    const unsigned long long m = 1ULL << (i % 64);
    const bool old = (e[i / 64] & m) != 0;
    if (bit) e[i / 64] |= m;
    else e[i / 64] &= ~m;
    w[1] = w[1] + (unsigned)bit - (unsigned)old;
    w[0] = np + 1;
}


/* hashevict's probe codes of KV head g: the group's G queries (as given, rotated, unscaled), or
 * the new key as stored (slot L − 1 of the region's keys Kr), --hash-probe key; all threads, the
 * codes in codes[0 .. he_nq) on return (bits: shared [he_nq][64]). Returns he_nq. */
template <typename T>
__device__ __forceinline__ int he_probe_codes(const attn_step_args &a, int g, const T *Kr, int L, unsigned char *bits,
                                              unsigned long long *codes)
{
    const int tid = threadIdx.x, hd = a.head_dim, G = a.G, nb = a.he_bits;
    const int nq = a.he_probe ? 1 : G;
    for (int pi = tid; pi < nq * nb; pi += DC_THREADS) {
        const int hh = pi / nb, b = pi % nb;
        bits[hh * 64 + b] = a.he_probe ? he_bit(a.he_R, hd, b, Kr + (size_t)(L - 1) * hd)
                                       : he_bit(a.he_R, hd, b, a.q + (size_t)(g * G + hh) * hd);
    }
    __syncthreads();
    if (tid < nq) {
        unsigned long long c = 0;
        for (int b = 0; b < nb; b++)
            if (bits[tid * 64 + b]) c |= 1ULL << b;
        codes[tid] = c;
    }
    __syncthreads();
    return nq;
}

/* the evict-then-attend policies' best candidate among slots [j0, j1) of KV head g (every thread
 * gets it): key −knorm (l2norm: the largest norm), u (random) or the score (h2o evict-first:
 * eviction/policy_h2o.c h2o_select_victim over the history up to t − 1, score / (t − pos) with
 * mean), hashevict's distance (with mean: the slot's running mean including this step's
 * distance, (acc + d) / (age + 1), as *out_w); protected: pos < n_sink and pos ≥ t − n_recent.
 * sv/sw/sp/sj: shared [DC_THREADS]. */
__device__ __forceinline__ int ete_candidate(const attn_step_args &a, int g, int j0, int j1, unsigned long long *out_v,
                             unsigned *out_w, unsigned long long *sv, unsigned *sw, int *sp, int *sj,
                             const unsigned long long *he_codes, int he_nq)
{
    const size_t o = a.off[g];
    const int t = a.step[1], tid = threadIdx.x;
    const bool rat = a.evict == EV_HASH && a.mean;
    unsigned long long bv = 0;
    unsigned bw = 0;
    int bp = 0, bj = -1;
    for (int j = j0 + tid; j < j1; j += DC_THREADS) {
        const int p = a.pos[o + j];
        if (p < a.n_sink || (long long)p >= (long long)t - a.n_recent) continue;
        unsigned w;
        const unsigned long long v = ete_key(a.evict, rat, a.mean, a.seed, a.layer, g, t, p,
                                             a.evict == EV_L2NORM ? a.knorm : a.score, o + j, a.sstate, o + j,
                                             a.sh_hist, he_codes, he_nq, &w);
        if (ete_better(rat, v, w, p, j, bv, bw, bp, bj)) bv = v, bw = w, bp = p, bj = j;
    }
    ete_block_best<DC_THREADS>(rat, bv, bw, bp, bj, sv, sw, sp, sj);
    const int r = sj[0];
    *out_v = sv[0];
    *out_w = sw[0];
    __syncthreads();
    return r;
}


/* the group's last block: combine, probabilities / scores, eviction, length */
template <typename TV>
__device__ void attn_step_finish(const attn_step_args &a, int g, int L, unsigned char *he_bits_sm,
                                 unsigned long long *he_codes_sm)
{
    __shared__ float s_lse[DC_MAX_G];
    __shared__ float sv[DC_THREADS];
    __shared__ int sp[DC_THREADS], sj[DC_THREADS];
    __shared__ int s_layer_last;
    __shared__ unsigned char s_hb[64]; /* EV_HASH: the new key's code bits */
    const int tid = threadIdx.x, G = a.G, hd = a.head_dim, n_split = a.n_split;
    int ns = (L + a.split_len - 1) / a.split_len;
    if (ns > n_split) ns = n_split;
    const int C0 = a.cap ? a.cap[g] : L;
    const bool ete = EV_IS_ETE(a.evict) && L > C0;
    /* evict-then-attend: the victim = the best of the pieces' candidates (the group's first head
     * holds them; every head of the group found the same); the others are put back below */
    int vs = -1, vj = -1;
    if (ete) {
        const bool rat = a.evict == EV_HASH && a.mean;
        const ev_cand *ec = (const ev_cand *)a.ev_part + (size_t)g * G * n_split;
        unsigned long long bv = 0;
        unsigned bw = 0;
        int bp = 0;
        for (int s = 0; s < ns; s++) {
            int j = __ldcg(&ec[s].j);
            if (j < 0) continue;
            unsigned long long v = __ldcg(&ec[s].v);
            unsigned w = __ldcg(&ec[s].w);
            int p = a.pos[a.off[g] + j];
            if (ete_better(rat, v, w, p, j, bv, bw, bp, vj)) bv = v, bw = w, bp = p, vj = j, vs = s;
        }
    }
    for (int hh = 0; hh < G; hh++) {
        const int h = g * G + hh;
        const float *ml = a.part_ml + (size_t)h * n_split * 2;
        const ev_cand *ec = ete ? (const ev_cand *)a.ev_part + (size_t)h * n_split : NULL;
        float M = -INFINITY, Ls = 0.0f;
        for (int s = 0; s < ns; s++) M = fmaxf(M, __ldcg(ml + 2 * s));
        if (ete)
            for (int s = 0; s < ns; s++)
                if (s != vs && __ldcg(&ec[s].j) >= 0) M = fmaxf(M, __ldcg(&ec[s].logit));
        for (int s = 0; s < ns; s++) Ls += expf(__ldcg(ml + 2 * s) - M) * __ldcg(ml + 2 * s + 1);
        if (ete)
            for (int s = 0; s < ns; s++)
                if (s != vs && __ldcg(&ec[s].j) >= 0) Ls += expf(__ldcg(&ec[s].logit) - M);
        const TV *Vg = (const TV *)a.vw + a.off[g] * hd;
        for (int d = tid; d < hd; d += DC_THREADS) {
            float o = 0.0f;
            for (int s = 0; s < ns; s++)
                o += expf(__ldcg(ml + 2 * s) - M) * __ldcg(a.part_acc + ((size_t)h * n_split + s) * hd + d);
            if (ete)
                for (int s = 0; s < ns; s++) {
                    int j = __ldcg(&ec[s].j);
                    if (s != vs && j >= 0) o += expf(__ldcg(&ec[s].logit) - M) * to_f32(Vg[(size_t)j * hd + d]);
                }
            a.out[(size_t)h * hd + d] = ns > 0 ? o / Ls : 0.0f; /* no live slot: a zero output */
        }
        if (tid == 0) {
            float lse = ns > 0 ? M + logf(Ls) : -INFINITY;
            a.lse[h] = lse;
            s_lse[hh] = lse;
        }
    }
    __syncthreads();
    const size_t o = a.off[g];
    if (a.slog && (a.probs_out || a.score))
        for (int j = tid; j < L; j += DC_THREADS) {
            float acc = 0.0f;
            for (int hh = 0; hh < G; hh++) {
                float *p = a.slog + (size_t)(g * G + hh) * a.slog_stride + j;
                float pr = expf(__ldcg(p) - s_lse[hh]);
                if (a.probs_out) *p = pr;
                acc += pr;
            }
            if (a.score) a.score[o + j] = a.score_set ? acc : a.score[o + j] + acc;
        }
    __syncthreads();
    const int C = C0;
    if (EV_IS_ETE(a.evict)) {
        const size_t hd_ = (size_t)hd;
        TV *Kw = (TV *)a.kw + o * hd_;
        if (a.evict == EV_L2NORM && tid == 0) a.knorm[o + L - 1] = cu_key_norm(Kw + (size_t)(L - 1) * hd_, hd);
        __syncthreads();
        int victim = -1;
        if (ete) {
            victim = vj;
            if (victim < 0) { /* no candidate (C < sink + recent + 1: the policy rules it out): the oldest */
                victim = 0;
                for (int j = 1; j < L - 1; j++)
                    if (a.pos[o + j] < a.pos[o + victim]) victim = j;
            }
        }
        if (a.evict == EV_HASH) {
            /* hashevict: the new key's code (the CPU computes it from the stored key at its next
             * hook, refresh_slots); the rest of its state empty */
            for (int b = tid; b < a.he_bits; b += DC_THREADS) s_hb[b] = he_bit(a.he_R, hd, b, Kw + (size_t)(L - 1) * hd_);
            __syncthreads();
            if (tid == 0) {
                unsigned long long c = 0;
                for (int b = 0; b < a.he_bits; b++)
                    if (s_hb[b]) c |= 1ULL << b;
                unsigned long long *e = a.sstate + (o + L - 1) * EV_HASH_WORDS;
                e[0] = c;
                e[1] = 0ULL;
                e[2] = 1ULL << 32; /* age 0, valid 1 */
            }
            __syncthreads();
            if (ete && a.mean) {
                /* --hash-accum mean: this rule evaluation's distance joins the running sum of
                 * every member (the L − 1 slots before the new one, protected ones included, as
                 * policy_hashevict.c rule_victim; the victim's state is replaced below) and
                 * its age counts it (uint32, wrapping as the CPU's) */
                const int nq = he_probe_codes<TV>(a, g, Kw, L, he_bits_sm, he_codes_sm);
                for (int j = tid; j < L - 1; j += DC_THREADS) {
                    unsigned long long *e = a.sstate + (o + j) * EV_HASH_WORDS;
                    unsigned dist = 0;
                    for (int i = 0; i < nq; i++) dist += (unsigned)__popcll(e[0] ^ he_codes_sm[i]);
                    e[1] += dist;
                    e[2] = (e[2] & 0xffffffff00000000ULL) | (unsigned long long)((unsigned)e[2] + 1u);
                }
                __syncthreads();
            }
        }
        if (a.evict == EV_SH) {
            /* scissorhands' post_attn over the n slots live after the step: the new token's
             * history starts empty (kv_write), every slot pushes [Σ_h p_h(j) / G ≥ 1 / n] */
            const float thr = 1.0f / (float)(ete ? L - 1 : L);
            unsigned long long *St = a.sstate + o * EV_SH_WORDS;
            for (int j = tid; j < L; j += DC_THREADS) {
                if (j == victim) continue;
                unsigned long long *e = St + (size_t)j * EV_SH_WORDS;
                if (j == L - 1 && a.n_extra) /* (n_extra 0: launch_ete_shifted emptied it) */
                    for (int w = 0; w < EV_SH_WORDS; w++) e[w] = 0ULL;
                float acc = 0.0f;
                for (int hh = 0; hh < G; hh++)
                    acc += expf(__ldcg(a.slog + (size_t)(g * G + hh) * a.slog_stride + j) - s_lse[hh]);
                sh_push(e, (unsigned)a.sh_hist, acc / (float)G >= thr);
            }
            __syncthreads();
        }
        if (ete) {
            /* the per-slot value moves with its slot: l2norm's norm, h2o's score (the new
             * token's: 0 at the append + this step's probabilities, as kv_write + post_attn),
             * scissorhands' history */
            float *S = a.knorm ? a.knorm + o : a.score ? a.score + o : NULL;
            ev_swap_last<TV, DC_THREADS>(Kw, (TV *)a.vw + o * hd_, a.pos + o, S, L, victim, hd);
            const int nw = a.evict == EV_SH ? EV_SH_WORDS : a.evict == EV_HASH ? EV_HASH_WORDS : 0;
            if (tid < nw && victim != L - 1) a.sstate[(o + victim) * nw + tid] = a.sstate[(o + L - 1) * nw + tid];
            if (tid == 0) a.len[g] = L - 1;
        } else if (tid == 0) {
            a.len[g] = L;
        }
    } else if (a.evict == EV_TOVA) {
        /* layer-wise: the layer's last group to finish evicts from every KV head */
        const int Hkv = a.n_heads / G;
        if (tid == 0) a.len[g] = L;
        __threadfence();
        __syncthreads();
        if (tid == 0) s_layer_last = atomicAdd(&a.counter[Hkv], 1) == Hkv - 1;
        __syncthreads();
        if (s_layer_last) {
            __threadfence();
            if (L > C) {
                float bv = 0.0f;
                int bp = 0, bj = -1;
                const int32_t *P = a.pos + a.off[0];
                for (int j = tid; j < L; j += DC_THREADS) {
                    float sum = 0.0f;
                    for (int h = 0; h < a.n_heads; h++) sum += __ldcg(a.slog + (size_t)h * a.slog_stride + j);
                    float v = sum / (float)a.n_heads;
                    if (ev_better(v, P[j], j, bv, bp, bj)) bv = v, bp = P[j], bj = j;
                }
                int victim = ev_block_argmin<DC_THREADS>(bv, bp, bj, sv, sp, sj);
                for (int g2 = 0; g2 < Hkv; g2++) {
                    const size_t o2 = a.off[g2];
                    ev_swap_last<TV, DC_THREADS>((TV *)a.kw + o2 * hd, (TV *)a.vw + o2 * hd, a.pos + o2, NULL, L,
                                                 victim, hd);
                    if (tid == 0) a.len[g2] = L - 1;
                }
            }
            if (tid == 0) a.counter[Hkv] = 0;
        }
    } else if (a.evict != EV_NONE && L > C) {
        const int t = a.step[1];
        const int victim = ev_victim<DC_THREADS>(a.evict, a.pos + o, a.score ? a.score + o : NULL, L, a.ring[g],
                                                 a.n_sink, t - a.n_recent + 1, a.mean, t, sv, sp, sj);
        ev_swap_last<TV, DC_THREADS>((TV *)a.kw + o * hd, (TV *)a.vw + o * hd, a.pos + o,
                                     a.score ? a.score + o : NULL, L, victim, hd);
        if (tid == 0) {
            a.len[g] = L - 1;
            a.ring[g] = ev_ring_next(a.evict, a.ring[g], C, a.n_sink);
        }
    } else if (tid == 0 && a.n_extra) {
        a.len[g] = L;
    }
    if (a.q_ring) { /* the snap family's query ring: the group's queries at row position mod rows */
        float *r = a.q_ring + ((size_t)(a.step[1] % a.q_ring_rows) * a.n_heads + (size_t)g * G) * hd;
        for (int i = tid; i < G * hd; i += DC_THREADS) r[i] = a.q[(size_t)g * G * hd + i];
    }
    if (tid == 0) a.counter[g] = 0; /* ready for the next launch (graph replays included) */
}

/* grid (n_heads, n_split), DC_THREADS threads; dynamic shared memory head_dim + split_len floats. */
template <typename TK, typename TV>
__global__ void __launch_bounds__(DC_THREADS) attn_step_kernel(attn_step_args a)
{
    extern __shared__ float sm[];
    __shared__ float red[32];
    __shared__ int s_last;
    __shared__ unsigned long long s_ev_v[DC_THREADS];
    __shared__ unsigned s_ev_w[DC_THREADS];
    __shared__ int s_ev_p[DC_THREADS], s_ev_j[DC_THREADS];
    __shared__ unsigned long long s_he_code[EV_HASH_MAX_G];
    __shared__ unsigned char s_he_bit[EV_HASH_MAX_G * 64];
    const int hd = a.head_dim, G = a.G;
    float *qs = sm;      /* [head_dim] the (rotated,) pre-scaled query */
    float *sl = sm + hd; /* [split_len] logits, then exp(logit − m) */
    const int h = blockIdx.x, s = blockIdx.y, g = h / G, tid = threadIdx.x;
    const int L = a.len[g] + a.n_extra, j0 = s * a.split_len, j1 = min(L, j0 + a.split_len), nj = j1 - j0;
    if (nj > 0) { /* uniform over the block */
        const size_t o = a.off[g];
        const TK *K = (const TK *)a.kc + o * hd;
        const TV *V = (const TV *)a.vc + o * hd;
        const float sc = a.head_scale ? a.head_scale[g] : a.scale;
        const float *qh = a.q + (size_t)h * hd;
        if (a.rope_cos) { /* --rope shifted: the query at rank L − 1 */
            const int half = hd / 2;
            const float *c = a.rope_cos + (size_t)(L - 1) * half, *sn = a.rope_sin + (size_t)(L - 1) * half;
            for (int d = tid; d < half; d += DC_THREADS) {
                float x0 = qh[d], x1 = qh[d + half];
                qs[d] = cu_sub(cu_mul(x0, c[d]), cu_mul(x1, sn[d])) * sc;
                qs[d + half] = cu_add(cu_mul(x1, c[d]), cu_mul(x0, sn[d])) * sc;
            }
        } else {
            for (int d = tid; d < hd; d += DC_THREADS) qs[d] = qh[d] * sc;
        }
        __syncthreads();
        /* logits: one warp per slot, lanes over head_dim, shuffle reduction */
        const int lane = tid & 31, warp = tid >> 5, n_warps = DC_THREADS / 32;
        for (int j = j0 + warp; j < j1; j += n_warps) {
            const TK *kr = K + (size_t)j * hd;
            float dot = 0.0f;
            for (int d = lane; d < hd; d += 32) dot += qs[d] * to_f32(kr[d]);
            dot = warp_sum(dot);
            if (lane == 0) {
                sl[j - j0] = dot;
                if (a.slog) a.slog[(size_t)h * a.slog_stride + j] = dot;
            }
        }
        __syncthreads();
        if (EV_IS_ETE(a.evict)) {
            /* evict-then-attend, region full: this piece's best candidate (the new token, slot
             * L − 1, never is one) is left out of its partial and kept aside */
            ev_cand *ec = (ev_cand *)a.ev_part + (size_t)h * a.n_split + s;
            if (L > a.cap[g]) {
                unsigned long long cv = 0;
                unsigned cw = 0;
                int he_nq = 0;
                /* hashevict's probe codes: the group's G queries (as given, rotated, unscaled),
                 * or the new key as stored (slot L − 1), --hash-probe key */
                if (a.evict == EV_HASH) he_nq = he_probe_codes<TK>(a, g, K, L, s_he_bit, s_he_code);
                const int cj = ete_candidate(a, g, j0, min(j1, L - 1), &cv, &cw, s_ev_v, s_ev_w, s_ev_p, s_ev_j,
                                             s_he_code, he_nq);
                if (tid == 0) {
                    ec->j = cj;
                    if (cj >= 0) {
                        ec->v = cv;
                        ec->w = cw;
                        ec->logit = sl[cj - j0];
                        sl[cj - j0] = -INFINITY;
                    }
                }
                __syncthreads();
            }
        }
        float mx = -INFINITY;
        for (int c = tid; c < nj; c += DC_THREADS) mx = fmaxf(mx, sl[c]);
        mx = block_max(mx, red);
        float sum = 0.0f;
        for (int c = tid; c < nj; c += DC_THREADS) {
            float p = mx == -INFINITY ? 0.0f : expf(sl[c] - mx); /* every slot left out: nothing */
            sl[c] = p;
            sum += p;
        }
        sum = block_sum(sum, red); /* its __syncthreads also publishes sl[] */
        float *acc = a.part_acc + ((size_t)h * a.n_split + s) * hd;
        for (int d = tid; d < hd; d += DC_THREADS) {
            float x = 0.0f;
            for (int c = 0; c < nj; c++) x += sl[c] * to_f32(V[(size_t)(j0 + c) * hd + d]);
            acc[d] = x;
        }
        if (tid == 0) {
            a.part_ml[((size_t)h * a.n_split + s) * 2] = mx;
            a.part_ml[((size_t)h * a.n_split + s) * 2 + 1] = sum;
        }
    }
    /* arrival: the group's last block finishes the step */
    __threadfence();
    __syncthreads();
    if (tid == 0) s_last = atomicAdd(&a.counter[g], 1) == G * a.n_split - 1;
    __syncthreads();
    if (!s_last) return;
    __threadfence();
    attn_step_finish<TV>(a, g, L, s_he_bit, s_he_code);
}

template <typename TK, typename TV> static cudaError_t step_go(const attn_step_args &a, cudaStream_t s)
{
    size_t smem = ((size_t)a.head_dim + a.split_len) * sizeof(float);
    const attn_step_args args = a; /* by value: a graph replays the launch */
    attn_step_kernel<TK, TV><<<dim3(a.n_heads, a.n_split), DC_THREADS, smem, s>>>(args);
    return cudaPeekAtLastError();
}

cudaError_t launch_attn_step(const attn_step_args *a, cudaStream_t s)
{
    if (a->head_dim < 1 || a->head_dim > 1024 || a->split_len < 1 || a->split_len > DC_MAX_SPLIT ||
        a->n_split < 1 || a->G < 1 || a->G > DC_MAX_G || a->n_heads % a->G || (a->rope_cos && a->head_dim % 2) ||
        (a->evict != EV_NONE && (!a->cap || !a->ring || !a->pos || !a->kw || !a->vw || !a->step)) ||
        ((a->probs_out || a->score) && !a->slog) || a->kv_dt != a->v_dt ||
        (a->q_ring && (a->q_ring_rows < 1 || !a->step)) ||
        (EV_IS_ETE(a->evict) && !a->ev_part) || (a->evict == EV_L2NORM && !a->knorm) ||
        (a->evict == EV_H2O_EF && !a->score) ||
        (a->evict == EV_SH && (!a->sstate || !a->slog || a->sh_hist < 1 || a->sh_hist > EV_SH_MAX_HIST)) ||
        (a->evict == EV_HASH && (!a->sstate || !a->he_R || a->he_bits < 1 || a->he_bits > 64 ||
                                 (!a->he_probe && a->G > EV_HASH_MAX_G))) ||
        (a->evict == EV_TOVA && (!a->slog || !a->probs_out)))
        return cudaErrorInvalidValue;
    const int k = a->k_dt, v = a->v_dt;
    if (k == CU_F32 && v == CU_F32) return step_go<float, float>(*a, s);
    if (k == CU_F16 && v == CU_F16) return step_go<__half, __half>(*a, s);
    if (k == CU_BF16 && v == CU_BF16) return step_go<__nv_bfloat16, __nv_bfloat16>(*a, s);
    if (k == CU_F32 && v == CU_F16) return step_go<float, __half>(*a, s);
    if (k == CU_F32 && v == CU_BF16) return step_go<float, __nv_bfloat16>(*a, s);
    return cudaErrorInvalidValue;
}
