/* Part of tests/cuda_emu/test_kernels_emu.cc: the decode step's attention kernel
 * (launch_attn_step: flash-decoding pieces, the last block's combine, probabilities, score
 * accumulation, eviction and length update) against a double-precision reference of
 * kernels/cpu/attention.c attn_decode_head + eviction/policy_h2o.c / local / streaming
 * post_attn + kv_evict_swap_last. */

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
    std::vector<int> len = c.lens, capv(Hkv, c.cap > 0 ? c.cap : cap_slots), ring(Hkv), counter(Hkv, 0);
    for (int g = 0; g < Hkv; g++) ring[g] = c.cap > 0 ? (g * 3) % std::max(1, c.cap - c.n_sink) : 0;
    const std::vector<int> ring0 = ring;
    const int rows = 128;
    std::vector<float> ct((size_t)rows * half), st((size_t)rows * half);
    for (auto &v : ct) v = frand(-1, 1);
    for (auto &v : st) v = frand(-1, 1);
    const float scale = 1.0f / sqrtf((float)hd);
    const int n_split = (cap_slots + c.split_len - 1) / c.split_len, slog_stride = cap_slots;
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
    a.slog = c.score || c.probs_out ? slog.data() : NULL, a.slog_stride = slog_stride, a.probs_out = c.probs_out;
    a.score = c.score ? score.data() : NULL;
    a.evict = c.evict, a.n_sink = c.n_sink, a.n_recent = c.n_recent, a.mean = c.mean, a.step = stepv;
    a.kw = kc.data(), a.vw = vc.data(), a.kv_dt = dt, a.pos = pos.data();
    a.rope_cos = c.rope ? ct.data() : NULL, a.rope_sin = c.rope ? st.data() : NULL;
    a.out = out.data(), a.lse = lse.data(), a.counter = counter.data();
    cudaError_t e = launch_attn_step(&a, 0);
    double eo = 0, el = 0, ep = 0, es = 0;
    bool ok_len = true, ok_rows = true, nan_free = true;
    for (int g = 0; g < Hkv; g++) {
        const int L = c.lens[g] + c.n_extra;
        std::vector<double> sc(L, 0.0);
        for (int j = 0; j < L; j++) sc[j] = score0[off[g] + j];
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
                s[j] = d * scale;
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
                if (c.probs_out) ep = std::max(ep, fabs(slog[(size_t)h * slog_stride + j] - p));
            }
        }
        /* scores, then the eviction on the reference region */
        std::vector<int32_t> P(pos0.begin() + off[g], pos0.begin() + off[g] + L);
        std::vector<int> order(L);
        for (int j = 0; j < L; j++) order[j] = j; /* slot j of the result holds reference row order[j] */
        int Lr = L;
        if (c.evict != EV_NONE && L > capv[g]) {
            int vic = ref_victim2(c.evict, P, sc, L, ring0[g], c.n_sink, t - c.n_recent + 1, c.mean, t);
            order[vic] = L - 1;
            P[vic] = P[L - 1];
            sc[vic] = sc[L - 1];
            Lr = L - 1;
        }
        ok_len &= len[g] == (c.n_extra || Lr < L ? Lr : c.lens[g]);
        for (int j = 0; j < Lr; j++) {
            ok_rows &= pos[off[g] + j] == P[j];
            if (c.score) es = std::max(es, fabs(score[off[g] + j] - sc[j]));
            ok_rows &= !memcmp(&kc[(off[g] + j) * hd], &store<T>(std::vector<float>(kf.begin() + (off[g] + order[j]) * hd,
                                                                                    kf.begin() + (off[g] + order[j] + 1) * hd))[0],
                                hd * sizeof(T));
        }
        ok_len &= counter[g] == 0;
    }
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
}
