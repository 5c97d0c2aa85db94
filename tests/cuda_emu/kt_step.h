/* Part of tests/cuda_emu/test_kernels_emu.cc: the decode step's attention kernel
 * (launch_attn_step: flash-decoding pieces, the last block's combine, probabilities, score
 * accumulation, eviction and length update) against a double-precision reference of
 * kernels/cpu/attention.c attn_decode_head + eviction/policy_h2o.c / local / streaming
 * post_attn + kv_evict_swap_last; l2norm / random (evict-then-attend: the victim of
 * policy_l2norm.c / policy_random.c, its counter RNG, left out of an attention split into several
 * pieces; the new key's norm bit for bit), h2o --h2o-order evict-first (the lowest score of the
 * history left out, the scores after), scissorhands (policy_scissorhands.c: the least important
 * slot left out, every slot's indicator pushed into its history, compared byte for byte),
 * hashevict (policy_hashevict.c: the farthest code from the probe codes left out, the new key's
 * code stored; --hash-accum mean: every member's sum and age advanced, the largest mean left
 * out, compared byte for byte), the score_set flag of buzz --buzz-score current, and tova (policy_tova.c post_attn_layer: every
 * head's probabilities averaged, the argmin evicted from every KV head). */

struct step_case {
    const char *name;
    int hd, split_len, G;
    std::vector<int> lens; /* live slots per KV head before the step */
    int n_extra;           /* 1: slot lens[g] holds the step's token (appended by the QKV kernel) */
    int evict, cap, n_sink, n_recent, mean;
    bool score, probs_out, rope;
};

/* the CPU policies' victim (eviction/policy_h2o.c h2o_select_victim; the device's fallback when
 * every slot is protected: the oldest non-sink, else the last slot) */
static int ref_victim2(int mode, const std::vector<int32_t> &P, const std::vector<double> &S, int L, int ring,
                       int n_sink, int recent_from, int mean, int t)
{
    if (mode == EV_LOCAL) return ring;
    if (mode == EV_STREAMING) return n_sink + ring;
    int best = -1;
    double bv = 0;
    for (int j = 0; j < L; j++) {
        if (P[j] < n_sink || P[j] >= recent_from) continue;
        double v = mean ? (float)S[j] / (float)(t - P[j] + 1) : (float)S[j];
        if (best < 0 || v < bv || (v == bv && P[j] < P[best])) best = j, bv = v;
    }
    if (best >= 0) return best;
    for (int j = 0; j < L; j++)
        if (P[j] >= n_sink && (best < 0 || P[j] < P[best])) best = j;
    return best >= 0 ? best : L - 1;
}

/* eviction/policy_common.c evict_splitmix64 / evict_rng_u01 (the CPU's random policy) */
static uint64_t ref_splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}
static double ref_rng_u01(uint64_t seed, uint64_t stream, int layer, int g, int64_t pos, int64_t idx)
{
    uint64_t h = ref_splitmix64(stream);
    h = ref_splitmix64(h ^ (uint64_t)(uint32_t)layer);
    h = ref_splitmix64(h ^ (uint64_t)(uint32_t)g);
    h = ref_splitmix64(h ^ (uint64_t)pos);
    h = ref_splitmix64(h ^ (uint64_t)idx);
    return (double)(ref_splitmix64(seed ^ h) >> 11) * 0x1.0p-53;
}

/* eviction/policy_l2norm.c l2norm_victim / policy_random.c random_victim / policy_h2o.c
 * h2o_select_victim (evict-first: recent_from t − recent, mean over the queries up to t − 1) over
 * slots j < n (the new token, slot n, is never a candidate); -1 when every slot is protected.
 * norm: the key norms (l2norm) or the scores (h2o). */
static int ref_ete_victim(int mode, const int32_t *P, const float *norm, int n, int sink, int recent, int t, int layer,
                          int g, uint64_t seed, int mean = 0)
{
    int best = -1;
    double bv = 0;
    for (int j = 0; j < n; j++) {
        if (P[j] < sink || (int64_t)P[j] >= (int64_t)t - recent) continue;
        double v = mode == EV_L2NORM ? -(double)norm[j]
                 : mode == EV_H2O_EF ? (double)(mean ? norm[j] / (float)(t - 1 - P[j] + 1) : norm[j])
                                     : ref_rng_u01(seed, 0x524e44444543ULL, layer, g, t, P[j]);
        if (best < 0 || v < bv || (v == bv && P[j] < P[best])) best = j, bv = v;
    }
    return best;
}

/* 1: the scores are replaced by the step's probabilities (score_set, buzz --buzz-score current) */
static int g_score_set = 0;
/* EV_SH: --sh-hist of the case */
static int g_sh_hist = 400;
/* EV_HASH: --hash-bits and --hash-probe key (1) of the case */
static int g_he_bits = 16, g_he_probe = 0;

/* eviction/policy_hashevict.c hashevict_code: bit b = [Σ_i R[b][i] x[i] ≥ 0], fp32 in order */
static uint64_t ref_he_code(const float *R, int bits, int d, const float *x)
{
    uint64_t code = 0;
    for (int b = 0; b < bits; b++) {
        float s = 0.0f;
        for (int i = 0; i < d; i++) s += R[(size_t)b * d + i] * x[i];
        if (s >= 0.0f) code |= 1ULL << b;
    }
    return code;
}

/* eviction/policy_scissorhands.c's sh_slot (the device's EV_SH_WORDS words) and its ring_push /
 * less_important, as the reference of EV_SH */
struct ref_sh {
    uint64_t ring[7];
    uint32_t n_push, ones;
};
static void ref_sh_push(ref_sh *e, int hist, int bit)
{
    uint32_t i = e->n_push % (uint32_t)hist;
    uint64_t m = 1ULL << (i % 64);
    int old = (e->ring[i / 64] & m) != 0;
    if (bit) e->ring[i / 64] |= m;
    else e->ring[i / 64] &= ~m;
    e->ones += (uint32_t)bit - (uint32_t)old;
    e->n_push++;
}
static int ref_sh_less(const ref_sh *a, const ref_sh *b, int hist)
{
    uint64_t ra = std::min<uint64_t>(a->n_push, hist), rb = std::min<uint64_t>(b->n_push, hist);
    return (uint64_t)a->ones * std::max<uint64_t>(rb, 1) < (uint64_t)b->ones * std::max<uint64_t>(ra, 1);
}

template <typename T> static void test_step(int dt, const step_case &c)
{
    const int Hkv = (int)c.lens.size(), G = c.G, H = Hkv * G, hd = c.hd, half = hd / 2;
    int maxL = 0;
    for (int L : c.lens) maxL = std::max(maxL, L + c.n_extra);
    const int cap_slots = std::max(maxL, c.cap + 1);
    std::vector<size_t> off(Hkv);
    for (int g = 0; g < Hkv; g++) off[g] = (size_t)g * cap_slots + 1; /* not aligned to the region size */
    const size_t slots = (size_t)Hkv * cap_slots + 1;
    std::vector<float> kf(slots * hd), vf(slots * hd), q((size_t)H * hd);
    for (auto &x : kf) x = frand(-1, 1);
    for (auto &x : vf) x = frand(-1, 1);
    for (auto &x : q) x = frand(-2, 2);
    std::vector<T> kc = store<T>(kf), vc = store<T>(vf);
    kf = load(kc);
    vf = load(vc);
    std::vector<int32_t> pos(slots, -1);
    std::vector<float> score(slots, 0.0f);
    const int t = 2000;
    for (int g = 0; g < Hkv; g++) /* distinct positions in shuffled slot order, the new token last */
        for (int j = 0; j < c.lens[g] + c.n_extra; j++) {
            pos[off[g] + j] = j < c.lens[g] ? (int)((j * 37 + g * 11) % 997) : t;
            score[off[g] + j] = j < c.lens[g] ? (float)(rng() % 4) * 0.5f : 0.0f; /* ties happen */
        }
    for (int g = 0; g < Hkv; g++) { /* positions unique within a region */
        std::vector<int> seen(997, 0);
        for (int j = 0; j < c.lens[g]; j++) {
            int32_t &p = pos[off[g] + j];
            while (seen[p]) p = (p + 1) % 997;
            seen[p] = 1;
        }
    }
    const bool tova = c.evict == EV_TOVA, ete_mode = EV_IS_ETE(c.evict);
    if (tova) /* layer-wise: every KV head holds the same positions in the same slots */
        for (int g = 1; g < Hkv; g++)
            for (int j = 0; j < c.lens[g] + c.n_extra; j++) pos[off[g] + j] = pos[off[0] + j];
    std::vector<float> knorm(slots, 0.0f); /* l2norm: the live slots' norms (ties happen), 0 for the new one */
    for (int g = 0; g < Hkv; g++)
        for (int j = 0; j < c.lens[g]; j++) knorm[off[g] + j] = (float)(rng() % 4) * 0.5f + 0.25f;
    const std::vector<float> knorm0 = knorm;
    /* EV_SH: random histories (n_push 1 .. 3·hist, the live ring bits random, ones their count),
     * garbage in the new token's slot (the kernel starts it empty) */
    std::vector<ref_sh> sst(slots);
    for (size_t i = 0; i < slots; i++) {
        ref_sh &e = sst[i];
        memset(&e, 0, sizeof e);
        e.n_push = 1 + rng() % (3 * g_sh_hist);
        const int live = std::min<int>(e.n_push, g_sh_hist);
        for (int b = 0; b < live; b++)
            if (rng() % 3 == 0) e.ring[b / 64] |= 1ULL << (b % 64), e.ones++;
    }
    for (int g = 0; g < Hkv; g++)
        if (c.n_extra) sst[off[g] + c.lens[g]].ones = 77, sst[off[g] + c.lens[g]].n_push = 5;
    const std::vector<ref_sh> sst0 = sst;
    /* EV_HASH: random codes (he_slot: code, acc, age | valid << 32), a projection; with mean
     * (--hash-accum mean) small random sums and ages (age 0 included: a prompt slot never
     * evaluated), so that equal means happen */
    std::vector<uint64_t> hst((size_t)slots * 3, 0);
    for (size_t i = 0; i < slots; i++) {
        hst[i * 3] = (((uint64_t)rng() << 32) ^ rng()) & (g_he_bits == 64 ? ~0ULL : (1ULL << g_he_bits) - 1);
        const uint32_t age = c.mean ? rng() % 4 : 0;
        hst[i * 3 + 1] = c.mean ? rng() % (3 * (age + 1)) : 0;
        hst[i * 3 + 2] = 1ULL << 32 | age;
    }
    const std::vector<uint64_t> hst0 = hst;
    std::vector<float> heR((size_t)g_he_bits * hd);
    for (auto &x : heR) x = frand(-1, 1);
    const uint64_t seed = 0x5eed;
    const int layer = 3;
    std::vector<int> len = c.lens, capv(Hkv, c.cap > 0 ? c.cap : cap_slots), ring(Hkv), counter(Hkv + 1, 0);
    for (int g = 0; g < Hkv; g++) ring[g] = c.cap > 0 ? (g * 3) % std::max(1, c.cap - c.n_sink) : 0;
    const std::vector<int> ring0 = ring;
    const int rows = 128;
    std::vector<float> ct((size_t)rows * half), st((size_t)rows * half);
    for (auto &v : ct) v = frand(-1, 1);
    for (auto &v : st) v = frand(-1, 1);
    const float scale = 1.0f / sqrtf((float)hd);
    const int n_split = (cap_slots + c.split_len - 1) / c.split_len, slog_stride = cap_slots;
    std::vector<unsigned char> evp((size_t)H * n_split * sizeof(ev_cand), 0xff);
    std::vector<float> pacc((size_t)H * n_split * hd, NAN), pml((size_t)H * n_split * 2, NAN),
        slog((size_t)H * slog_stride, NAN), out((size_t)H * hd, NAN), lse(H, NAN);
    const std::vector<float> score0 = score;
    const std::vector<int32_t> pos0 = pos;
    int stepv[2] = {0, t};
    attn_step_args a;
    memset(&a, 0, sizeof a);
    a.q = q.data(), a.kc = kc.data(), a.vc = vc.data(), a.k_dt = dt, a.v_dt = dt;
    a.off = off.data(), a.len = len.data(), a.cap = capv.data(), a.ring = ring.data();
    a.n_extra = c.n_extra, a.n_heads = H, a.G = G, a.head_dim = hd, a.scale = scale;
    a.split_len = c.split_len, a.n_split = n_split, a.part_acc = pacc.data(), a.part_ml = pml.data();
    a.slog = c.score || c.probs_out || c.evict == EV_SH ? slog.data() : NULL, a.slog_stride = slog_stride, a.probs_out = c.probs_out;
    a.score = c.score ? score.data() : NULL;
    a.evict = c.evict, a.n_sink = c.n_sink, a.n_recent = c.n_recent, a.mean = c.mean, a.step = stepv;
    a.kw = kc.data(), a.vw = vc.data(), a.kv_dt = dt, a.pos = pos.data();
    a.rope_cos = c.rope ? ct.data() : NULL, a.rope_sin = c.rope ? st.data() : NULL;
    a.out = out.data(), a.lse = lse.data(), a.counter = counter.data();
    a.knorm = c.evict == EV_L2NORM || c.evict == EV_SH ? knorm.data() : NULL, a.ev_part = ete_mode ? evp.data() : NULL;
    a.sstate = c.evict == EV_SH ? (unsigned long long *)sst.data() : c.evict == EV_HASH ? (unsigned long long *)hst.data() : NULL;
    a.sh_hist = g_sh_hist;
    a.he_R = heR.data(), a.he_bits = g_he_bits, a.he_probe = g_he_probe;
    a.layer = layer, a.seed = seed, a.score_set = g_score_set;
    cudaError_t e = launch_attn_step(&a, 0);
    /* tova: the reference's layer-wise victim from every head's probabilities */
    int tova_vic = -1;
    if (tova && c.lens[0] + c.n_extra > capv[0]) {
        const int L = c.lens[0] + c.n_extra;
        std::vector<float> avg(L, 0.0f);
        for (int h = 0; h < H; h++) {
            const int g = h / G;
            std::vector<double> s(L);
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < L; j++) {
                double d = 0;
                for (int x = 0; x < hd; x++) d += (double)q[(size_t)h * hd + x] * kf[(off[g] + j) * hd + x];
                s[j] = d * scale;
                mx = std::max(mx, s[j]);
            }
            for (int j = 0; j < L; j++) sum += exp(s[j] - mx);
            for (int j = 0; j < L; j++) avg[j] += (float)(exp(s[j] - mx) / sum);
        }
        for (int j = 0; j < L; j++) {
            avg[j] /= (float)H;
            if (tova_vic < 0 || avg[j] < avg[tova_vic] || (avg[j] == avg[tova_vic] && pos0[off[0] + j] < pos0[off[0] + tova_vic]))
                tova_vic = j;
        }
    }
    double eo = 0, el = 0, ep = 0, es = 0;
    bool ok_len = true, ok_rows = true, nan_free = true, ok_sh = true;
    for (int g = 0; g < Hkv; g++) {
        const int L = c.lens[g] + c.n_extra;
        /* evict-then-attend: the victim leaves before the attention */
        const float *key0 = c.evict == EV_H2O_EF ? &score0[off[g]] : &knorm0[off[g]];
        int ete_vic = ete_mode && L > capv[g] && c.evict != EV_SH && c.evict != EV_HASH
                          ? ref_ete_victim(c.evict, &pos0[off[g]], key0, L - 1, c.n_sink, c.n_recent, t, layer, g, seed, c.mean)
                          : -1;
        if (c.evict == EV_SH && L > capv[g]) /* policy_scissorhands.c pre_attn: the least important */
            for (int j = 0; j < L - 1; j++) {
                const int32_t p = pos0[off[g] + j];
                if (p < c.n_sink || (int64_t)p >= (int64_t)t - c.n_recent) continue;
                const ref_sh *e = &sst0[off[g] + j], *b = ete_vic >= 0 ? &sst0[off[g] + ete_vic] : NULL;
                if (!b || ref_sh_less(e, b, g_sh_hist) ||
                    (!ref_sh_less(b, e, g_sh_hist) && p < pos0[off[g] + ete_vic]))
                    ete_vic = j;
            }
        /* hashevict --hash-accum mean: every member's distance of this evaluation */
        std::vector<uint32_t> he_d(L, 0);
        if (c.evict == EV_HASH && L > capv[g]) { /* policy_hashevict.c rule_victim */
            std::vector<uint64_t> pc;
            if (g_he_probe) pc.push_back(ref_he_code(heR.data(), g_he_bits, hd, &kf[(off[g] + L - 1) * hd]));
            else
                for (int hh = 0; hh < G; hh++) pc.push_back(ref_he_code(heR.data(), g_he_bits, hd, &q[(size_t)(g * G + hh) * hd]));
            uint32_t bd = 0, bage = 0;
            uint64_t bacc = 0;
            for (int j = 0; j < L - 1; j++) {
                const int32_t p = pos0[off[g] + j];
                uint32_t dd = 0;
                for (uint64_t x : pc) dd += (uint32_t)__builtin_popcountll(hst0[(off[g] + j) * 3] ^ x);
                he_d[j] = dd;
                const uint64_t acc = hst0[(off[g] + j) * 3 + 1] + dd; /* the mean: this distance joins first */
                const uint32_t age = (uint32_t)hst0[(off[g] + j) * 3 + 2] + 1;
                if (p < c.n_sink || (int64_t)p >= (int64_t)t - c.n_recent) continue;
                if (!c.mean) {
                    if (ete_vic < 0 || dd > bd || (dd == bd && p < pos0[off[g] + ete_vic])) ete_vic = j, bd = dd;
                } else {
                    const uint64_t lhs = acc * (ete_vic < 0 ? 1 : bage), rhs = bacc * age;
                    if (ete_vic < 0 || lhs > rhs || (lhs == rhs && p < pos0[off[g] + ete_vic]))
                        ete_vic = j, bacc = acc, bage = age;
                }
            }
        }
        std::vector<double> psum(L, 0.0); /* Σ_h p_h(j) over the group */
        std::vector<double> sc(L, 0.0);
        for (int j = 0; j < L; j++) sc[j] = g_score_set ? 0.0 : score0[off[g] + j];
        for (int hh = 0; hh < G; hh++) {
            const int h = g * G + hh;
            std::vector<double> qq(hd), s(L);
            for (int x = 0; x < hd; x++) qq[x] = q[(size_t)h * hd + x];
            if (c.rope && L > 0)
                for (int d = 0; d < half; d++) {
                    double cc = ct[(size_t)(L - 1) * half + d], sn = st[(size_t)(L - 1) * half + d];
                    double x0 = q[(size_t)h * hd + d], x1 = q[(size_t)h * hd + d + half];
                    qq[d] = x0 * cc - x1 * sn;
                    qq[d + half] = x1 * cc + x0 * sn;
                }
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < L; j++) {
                double d = 0;
                for (int x = 0; x < hd; x++) d += qq[x] * kf[(off[g] + j) * hd + x];
                s[j] = j == ete_vic ? -INFINITY : d * scale;
                mx = std::max(mx, s[j]);
            }
            for (int j = 0; j < L; j++) sum += exp(s[j] - mx);
            const double lref = L ? mx + log(sum) : -INFINITY;
            if (L) el = std::max(el, fabs(lse[h] - lref));
            else if (!(std::isinf(lse[h]) && lse[h] < 0)) el = 1;
            for (int x = 0; x < hd; x++) {
                double o = 0;
                for (int j = 0; j < L; j++) o += exp(s[j] - lref) * vf[(off[g] + j) * hd + x];
                nan_free &= !std::isnan(out[(size_t)h * hd + x]);
                eo = std::max(eo, fabs(out[(size_t)h * hd + x] - o));
            }
            for (int j = 0; j < L; j++) {
                double p = exp(s[j] - lref);
                sc[j] += p;
                psum[j] += p;
                if (c.probs_out) ep = std::max(ep, fabs(slog[(size_t)h * slog_stride + j] - p));
            }
        }
        /* scores, then the eviction on the reference region */
        std::vector<int32_t> P(pos0.begin() + off[g], pos0.begin() + off[g] + L);
        std::vector<int> order(L);
        for (int j = 0; j < L; j++) order[j] = j; /* slot j of the result holds reference row order[j] */
        int Lr = L;
        std::vector<float> kn(knorm0.begin() + off[g], knorm0.begin() + off[g] + L);
        if (c.evict == EV_L2NORM && L > 0) { /* the new key's norm, as policy_l2norm.c */
            double q2 = 0;
            for (int x = 0; x < hd; x++) q2 += (double)kf[(off[g] + L - 1) * hd + x] * kf[(off[g] + L - 1) * hd + x];
            kn[L - 1] = (float)sqrt(q2);
        }
        /* scissorhands' post_attn: the new token's history starts empty, every live slot pushes
         * [Σ_h p_h(j) / G ≥ 1 / n], n = the live slots after the step */
        std::vector<ref_sh> sh(sst0.begin() + off[g], sst0.begin() + off[g] + L);
        if (c.evict == EV_SH) {
            const int n_after = ete_vic >= 0 ? L - 1 : L;
            for (int j = 0; j < L; j++) {
                if (j == ete_vic) continue;
                if (j == L - 1) memset(&sh[j], 0, sizeof sh[j]);
                ref_sh_push(&sh[j], g_sh_hist, (float)psum[j] / (float)G >= 1.0f / (float)n_after);
            }
        }
        /* hashevict: the new key's code as stored, its state otherwise empty */
        std::vector<uint64_t> hs(hst0.begin() + off[g] * 3, hst0.begin() + (off[g] + L) * 3);
        if (c.evict == EV_HASH && c.mean && L > capv[g]) /* the members' sums and ages advance */
            for (int j = 0; j < L - 1; j++) {
                hs[j * 3 + 1] += he_d[j];
                hs[j * 3 + 2] = (hs[j * 3 + 2] & ~0xffffffffULL) | (uint32_t)((uint32_t)hs[j * 3 + 2] + 1);
            }
        if (c.evict == EV_HASH && L > 0) {
            hs[(L - 1) * 3] = ref_he_code(heR.data(), g_he_bits, hd, &kf[(off[g] + L - 1) * hd]);
            hs[(L - 1) * 3 + 1] = 0;
            hs[(L - 1) * 3 + 2] = 1ULL << 32;
        }
        if (c.evict != EV_NONE && L > capv[g] && (!ete_mode || ete_vic >= 0) && (!tova || tova_vic >= 0)) {
            int vic = ete_mode ? ete_vic : tova ? tova_vic
                    : ref_victim2(c.evict, P, sc, L, ring0[g], c.n_sink, t - c.n_recent + 1, c.mean, t);
            kn[vic] = kn[L - 1];
            sh[vic] = sh[L - 1];
            for (int w = 0; w < 3; w++) hs[vic * 3 + w] = hs[(L - 1) * 3 + w];
            order[vic] = L - 1;
            P[vic] = P[L - 1];
            sc[vic] = sc[L - 1];
            Lr = L - 1;
        }
        ok_len &= len[g] == (c.n_extra || Lr < L ? Lr : c.lens[g]);
        for (int j = 0; j < Lr; j++) {
            ok_rows &= pos[off[g] + j] == P[j];
            if (c.score) es = std::max(es, fabs(score[off[g] + j] - sc[j]));
            if (c.evict == EV_L2NORM || c.evict == EV_SH) ok_rows &= knorm[off[g] + j] == kn[j];
            if (c.evict == EV_SH) ok_sh &= !memcmp(&sst[off[g] + j], &sh[j], sizeof sh[j]);
            if (c.evict == EV_HASH) ok_sh &= !memcmp(&hst[(off[g] + j) * 3], &hs[j * 3], 3 * sizeof(uint64_t));
            ok_rows &= !memcmp(&kc[(off[g] + j) * hd], &store<T>(std::vector<float>(kf.begin() + (off[g] + order[j]) * hd,
                                                                                    kf.begin() + (off[g] + order[j] + 1) * hd))[0],
                                hd * sizeof(T));
        }
        ok_len &= counter[g] == 0;
    }
    ok_len &= counter[Hkv] == 0;
    char what[256], l[64];
    snprintf(l, sizeof l, "%d", c.lens[0]);
    for (size_t i = 1; i < c.lens.size(); i++) snprintf(l + strlen(l), sizeof l - strlen(l), ",%d", c.lens[i]);
    snprintf(what, sizeof what, "step %s: hd %d split %d G %d lens %s+%d", c.name, hd, c.split_len, G, l, c.n_extra);
    std::string w = what;
    check(e == cudaSuccess, (w + ": launch").c_str(), 0);
    check(eo < 1e-5 && nan_free, (w + ": output (no NaN)").c_str(), eo);
    check(el < 1e-5, (w + ": log-sum-exp").c_str(), el);
    if (c.probs_out) check(ep < 1e-6, (w + ": probabilities").c_str(), ep);
    if (c.score) check(es < 1e-5, (w + ": scores").c_str(), es);
    check(ok_len && ok_rows, (w + ": lengths, positions, K rows after eviction, counters reset").c_str(), 0);
    if (c.evict == EV_SH) check(ok_sh, (w + ": scissorhands histories (victim, pushes, moved)").c_str(), 0);
    if (c.evict == EV_HASH)
        check(ok_sh, (w + (c.mean ? ": hashevict codes, sums, ages (victim, advanced, the new key's, moved)"
                                   : ": hashevict codes (victim, the new key's code, moved)")).c_str(), 0);
}

static void test_steps()
{
    /* name, hd, split, G, lens, n_extra, evict, cap, sink, recent, mean, score, probs_out, rope */
    test_step<float>(CU_F32, {"F32 several splits", 40, 8, 2, {1, 8, 9, 37}, 0, EV_NONE, 0, 0, 0, 0, false, true, false});
    test_step<__half>(CU_F16, {"F16 probs", 72, 16, 2, {33, 5}, 0, EV_NONE, 0, 0, 0, 0, false, true, false});
    test_step<float>(CU_F32, {"F32 long", 128, 256, 1, {300, 7}, 0, EV_NONE, 0, 0, 0, 0, false, false, false});
    test_step<__nv_bfloat16>(CU_BF16, {"BF16 GQA 4", 24, 8, 4, {17, 3}, 1, EV_NONE, 0, 0, 0, 0, true, false, false});
    test_step<float>(CU_F32, {"F32 a length-0 head", 16, 8, 2, {0, 5, 0}, 0, EV_NONE, 0, 0, 0, 0, false, true, false});
    test_step<float>(CU_F32, {"F32 rank-rotated query", 32, 8, 2, {12, 20}, 1, EV_NONE, 0, 0, 0, 0, false, false, true});
    test_step<float>(CU_F32, {"h2o evicts", 16, 8, 2, {24, 24, 24}, 1, EV_H2O, 24, 2, 6, 0, true, false, false});
    test_step<__half>(CU_F16, {"h2o mean F16", 16, 16, 1, {40, 40}, 1, EV_H2O, 40, 0, 20, 1, true, false, false});
    test_step<float>(CU_F32, {"h2o every slot protected", 8, 8, 2, {10, 10}, 1, EV_H2O, 10, 4, 200, 0, true, false, false});
    test_step<float>(CU_F32, {"local evicts", 8, 4, 2, {9, 9}, 1, EV_LOCAL, 9, 0, 0, 0, false, false, false});
    test_step<__half>(CU_F16, {"streaming evicts", 8, 4, 1, {9, 9, 9}, 1, EV_STREAMING, 9, 3, 0, 0, false, false, false});
    test_step<float>(CU_F32, {"under capacity: no eviction", 8, 4, 2, {5, 2}, 1, EV_H2O, 9, 1, 2, 0, true, false, false});
    /* evict-then-attend (l2norm, random): the victim left out of the attention across several
     * pieces (the others' candidates put back), swap-last, the new key's norm */
    test_step<float>(CU_F32, {"l2norm evicts, many pieces", 16, 4, 2, {24, 24, 24}, 1, EV_L2NORM, 24, 2, 3, 0, false, false, false});
    test_step<__half>(CU_F16, {"l2norm F16 one piece", 32, 64, 1, {20, 20}, 1, EV_L2NORM, 20, 4, 10, 0, false, false, false});
    test_step<float>(CU_F32, {"l2norm under capacity: norm only", 16, 4, 2, {7, 3}, 1, EV_L2NORM, 12, 1, 2, 0, false, false, false});
    test_step<float>(CU_F32, {"random evicts, many pieces", 16, 4, 2, {30, 30}, 1, EV_RANDOM, 30, 4, 10, 0, false, false, false});
    test_step<__nv_bfloat16>(CU_BF16, {"random BF16 GQA 4", 24, 8, 4, {17, 17}, 1, EV_RANDOM, 17, 0, 2, 0, false, false, false});
    test_step<float>(CU_F32, {"random with the rank-rotated query", 32, 8, 2, {12, 12}, 1, EV_RANDOM, 12, 1, 1, 0, false, false, true});
    /* buzz --buzz-score current: the scores replaced by the step's probabilities */
    g_score_set = 1;
    test_step<float>(CU_F32, {"score-set (buzz current) GQA 2", 16, 4, 2, {13, 9}, 1, EV_NONE, 0, 0, 0, 0, true, false, false});
    test_step<__half>(CU_F16, {"score-set (buzz current) F16", 32, 8, 1, {20}, 1, EV_NONE, 0, 0, 0, 0, true, false, false});
    g_score_set = 0;
    /* scissorhands: the least important slot left out, every slot's indicator pushed */
    test_step<float>(CU_F32, {"scissorhands, many pieces", 16, 4, 2, {24, 24, 24}, 1, EV_SH, 24, 2, 3, 0, false, false, false});
    g_sh_hist = 5; /* short rings: importance ties, ring wrap-around */
    test_step<__half>(CU_F16, {"scissorhands hist 5 F16 GQA 4", 16, 8, 4, {30, 30}, 1, EV_SH, 30, 4, 10, 0, false, false, false});
    test_step<float>(CU_F32, {"scissorhands under capacity", 8, 4, 2, {5, 2}, 1, EV_SH, 9, 1, 2, 0, false, false, false});
    g_sh_hist = 400;
    /* hashevict: the farthest code from the probes left out, the new key's code stored */
    test_step<float>(CU_F32, {"hashevict query probes, many pieces", 16, 4, 2, {24, 24, 24}, 1, EV_HASH, 24, 2, 3, 0, false, false, false});
    g_he_bits = 64, g_he_probe = 1;
    test_step<__half>(CU_F16, {"hashevict 64 bits key probe F16", 32, 8, 4, {30, 30}, 1, EV_HASH, 30, 4, 10, 0, false, false, false});
    g_he_bits = 3, g_he_probe = 0; /* 3 bits: distance ties */
    test_step<float>(CU_F32, {"hashevict 3 bits GQA 4", 16, 8, 4, {20, 20}, 1, EV_HASH, 20, 1, 2, 0, false, false, false});
    test_step<float>(CU_F32, {"hashevict under capacity", 8, 4, 2, {5, 2}, 1, EV_HASH, 9, 1, 2, 0, false, false, false});
    /* --hash-accum mean: every member's sum and age advanced, the largest mean (exact integer
     * comparison, equal means → smaller position) left out; 3 bits: many equal means */
    test_step<float>(CU_F32, {"hashevict mean 3 bits GQA 4", 16, 8, 4, {20, 20}, 1, EV_HASH, 20, 1, 2, 1, false, false, false});
    test_step<float>(CU_F32, {"hashevict mean under capacity", 8, 4, 2, {5, 2}, 1, EV_HASH, 9, 1, 2, 1, false, false, false});
    g_he_bits = 1; /* 1 bit, one probe: distances 0 / 1, the largest mean shared by many slots */
    test_step<float>(CU_F32, {"hashevict mean 1 bit, equal means", 8, 4, 1, {24, 24, 24}, 1, EV_HASH, 24, 1, 2, 1, false, false, false});
    g_he_bits = 16;
    test_step<float>(CU_F32, {"hashevict mean, many pieces", 16, 4, 2, {24, 24, 24}, 1, EV_HASH, 24, 2, 3, 1, false, false, false});
    g_he_bits = 64, g_he_probe = 1;
    test_step<__half>(CU_F16, {"hashevict mean 64 bits key probe F16", 32, 8, 4, {30, 30}, 1, EV_HASH, 30, 4, 10, 1, false, false, false});
    g_he_bits = 16, g_he_probe = 0;
    /* h2o --h2o-order evict-first: the lowest score of the history left out, scores after */
    test_step<float>(CU_F32, {"h2o evict-first, many pieces", 16, 4, 2, {24, 24, 24}, 1, EV_H2O_EF, 24, 2, 6, 0, true, false, false});
    test_step<__half>(CU_F16, {"h2o evict-first mean F16", 16, 8, 1, {40, 40}, 1, EV_H2O_EF, 40, 0, 20, 1, true, false, false});
    test_step<float>(CU_F32, {"h2o evict-first under capacity", 8, 4, 2, {5, 2}, 1, EV_H2O_EF, 9, 1, 2, 0, true, false, false});
    /* tova: the layer's head-averaged probabilities, the argmin evicted from every KV head */
    test_step<float>(CU_F32, {"tova evicts layer-wise", 16, 4, 2, {20, 20, 20}, 1, EV_TOVA, 20, 0, 0, 0, false, true, false});
    test_step<__half>(CU_F16, {"tova F16 MHA", 16, 8, 1, {9, 9, 9, 9}, 1, EV_TOVA, 9, 0, 0, 0, false, true, false});
}
