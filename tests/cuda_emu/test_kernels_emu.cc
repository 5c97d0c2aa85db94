/* The CUDA kernels of kernels/cuda run on the CPU (tests/cuda_emu/emu.h: one fiber per CUDA
 * thread, real barriers and warp exchanges, blocks and threads in a seeded random order) against
 * straightforward double-precision references written from the CPU backend's definitions
 * (kernels/cpu/attention.c, ops.c, quant.c, eviction/policy_h2o.c, local, streaming,
 * model/sampler.c). Small odd shapes: partial tiles, GQA, head_dim not a multiple of the
 * per-thread stride, several decode splits, F32/F16/BF16 caches, every weight storage type.
 * Parts: kt_step.h (the decode step's attention + statistics + eviction), kt_quant.h
 * (dequantization against the gguf package's floats, the fused GEMVs, the prefill helpers).
 * Prints one line per check and "N passed, M failed". Built and run by tests/test_cuda_emu.sh
 * (argument: the quant fixture folder). */
#include "tests/cuda_emu/emu.h"

#include "elementwise.inc"
#include "attn_prefill.inc"
#include "attn_decode.inc"
#include "select.inc"
#include "sample.inc"
#include "gemv.inc"
#include "dequant.inc"

#include <cstdio>
#include <cstdlib>
#include <random>

static int n_pass, n_fail;
static void check(bool ok, const char *what, double err)
{
    printf("%s %s (max err %.3g)\n", ok ? "ok  " : "FAIL", what, err);
    (ok ? n_pass : n_fail)++;
}

static std::mt19937 rng(1234);
static float frand(float a, float b) { return std::uniform_real_distribution<float>(a, b)(rng); }

/* storage of floats in T, and back */
template <typename T> static std::vector<T> store(const std::vector<float> &x)
{
    std::vector<T> y(x.size());
    for (size_t i = 0; i < x.size(); i++) y[i] = from_f32<T>(x[i]);
    return y;
}
template <typename T> static std::vector<float> load(const std::vector<T> &x)
{
    std::vector<float> y(x.size());
    for (size_t i = 0; i < x.size(); i++) y[i] = to_f32(x[i]);
    return y;
}

static double relerr(double a, double b) { return fabs(a - b) / std::max(1e-6, fabs(b)); }

/* ---------------------------------------------------------------- prefill + column sums */
template <typename T> static void test_prefill(int dt, const char *tname, int hd, int n, std::vector<int> lens)
{
    const int Hkv = (int)lens.size(), G = 2, H = Hkv * G, qdim = H * hd, kvdim = Hkv * hd;
    std::vector<size_t> off(Hkv);
    size_t slots = 0;
    int cap = 0;
    for (int g = 0; g < Hkv; g++) cap = std::max(cap, lens[g]);
    for (int g = 0; g < Hkv; g++) {
        off[g] = slots;
        slots += cap + 1;
    }
    std::vector<float> kf(slots * hd), vf(slots * hd), q((size_t)n * qdim), kn((size_t)n * kvdim),
        vn((size_t)n * kvdim);
    for (auto &x : kf) x = frand(-1, 1);
    for (auto &x : vf) x = frand(-1, 1);
    for (auto &x : q) x = frand(-1.5, 1.5);
    for (auto &x : kn) x = frand(-1, 1);
    for (auto &x : vn) x = frand(-1, 1);
    std::vector<T> kc = store<T>(kf), vc = store<T>(vf);
    kf = load(kc);
    vf = load(vc);
    kn = load(store<T>(kn)); /* the chunk's K/V hold values of the cache type (the engine rounds them) */
    vn = load(store<T>(vn));
    const float scale = 1.0f / sqrtf((float)hd);
    const int lse_stride = n + 3, cand_stride = cap + n + 2;
    std::vector<float> out((size_t)n * qdim, NAN), lse((size_t)H * lse_stride, NAN),
        colsum((size_t)Hkv * cand_stride, NAN);
    int n_cand_max = 0;
    for (int g = 0; g < Hkv; g++) n_cand_max = std::max(n_cand_max, lens[g] + n);
    cudaError_t e = launch_attn_prefill(q.data(), qdim, kc.data(), dt, vc.data(), dt, off.data(), lens.data(),
                                        kn.data(), vn.data(), kvdim, n, H, G, hd, scale, out.data(), qdim,
                                        lse.data(), lse_stride, 0);
    cudaError_t e2 = launch_attn_colsum(q.data(), qdim, kc.data(), dt, off.data(), lens.data(), kn.data(),
                                        kvdim, n, Hkv, G, hd, scale, lse.data(), lse_stride, n_cand_max,
                                        colsum.data(), cand_stride, 0);
    /* reference: softmax over the live slots + chunk tokens 0..i, in double */
    double eo = 0, el = 0, ec = 0;
    for (int g = 0; g < Hkv; g++) {
        int L = lens[g], nc = L + n;
        std::vector<double> cs(nc, 0.0);
        for (int hh = 0; hh < G; hh++) {
            int h = g * G + hh;
            for (int i = 0; i < n; i++) {
                int nk = L + i + 1;
                std::vector<double> s(nk);
                double mx = -INFINITY;
                for (int j = 0; j < nk; j++) {
                    double d = 0;
                    for (int x = 0; x < hd; x++) {
                        double kk = j < L ? kf[(off[g] + j) * hd + x] : kn[(size_t)(j - L) * kvdim + g * hd + x];
                        d += (double)q[(size_t)i * qdim + h * hd + x] * kk;
                    }
                    s[j] = d * scale;
                    mx = std::max(mx, s[j]);
                }
                double sum = 0;
                for (int j = 0; j < nk; j++) sum += exp(s[j] - mx);
                double lref = mx + log(sum);
                el = std::max(el, fabs(lse[(size_t)h * lse_stride + i] - lref));
                for (int x = 0; x < hd; x++) {
                    double o = 0;
                    for (int j = 0; j < nk; j++) {
                        double vv = j < L ? vf[(off[g] + j) * hd + x] : vn[(size_t)(j - L) * kvdim + g * hd + x];
                        o += exp(s[j] - lref) * vv;
                    }
                    eo = std::max(eo, fabs(out[(size_t)i * qdim + h * hd + x] - o));
                }
                for (int j = 0; j < nk; j++) cs[j] += exp(s[j] - lref);
            }
        }
        for (int j = 0; j < nc; j++) ec = std::max(ec, relerr(colsum[(size_t)g * cand_stride + j], cs[j]));
    }
    char what[200];
    snprintf(what, sizeof what, "prefill %s hd %d n %d lens %d,%d: launch", tname, hd, n, lens[0], lens[1]);
    check(e == cudaSuccess && e2 == cudaSuccess, what, 0);
    snprintf(what, sizeof what, "prefill %s hd %d n %d lens %d,%d: output", tname, hd, n, lens[0], lens[1]);
    check(eo < 1e-5, what, eo);
    snprintf(what, sizeof what, "prefill %s hd %d n %d lens %d,%d: row log-sum-exp", tname, hd, n, lens[0], lens[1]);
    check(el < 1e-5, what, el);
    snprintf(what, sizeof what, "prefill %s hd %d n %d lens %d,%d: column sums", tname, hd, n, lens[0], lens[1]);
    check(ec < 1e-4, what, ec);
}

#include "tests/cuda_emu/kt_step.h"

/* ---------------------------------------------------------------- KV write + eviction */
struct region {
    std::vector<float> k, v, score;
    std::vector<int32_t> pos;
    int len;
};

/* the CPU policies' post_attn (attend-first) on one region: victim, then swap-last */
static int ref_victim(int mode, const region &r, int cap, int ring, int n_sink, int recent_from, int mean, int t)
{
    if (r.len <= cap) return -1;
    if (mode == EV_LOCAL) return ring;
    if (mode == EV_STREAMING) return n_sink + ring;
    int best = -1;
    float bv = 0;
    for (int j = 0; j < r.len; j++) { /* eviction/policy_h2o.c h2o_select_victim */
        if (r.pos[j] < n_sink || r.pos[j] >= recent_from) continue;
        float v = mean ? r.score[j] / (float)(t - r.pos[j] + 1) : r.score[j];
        if (best < 0 || v < bv || (v == bv && r.pos[j] < r.pos[best])) {
            best = j;
            bv = v;
        }
    }
    return best;
}

static void test_evict(int mode, const char *name, int cap, int n_sink, int n_recent, int mean, int steps, int hd)
{
    const int Hkv = 3;
    std::vector<size_t> off(Hkv);
    for (int g = 0; g < Hkv; g++) off[g] = (size_t)g * (cap + 1);
    size_t slots = (size_t)Hkv * (cap + 1);
    std::vector<float> kc(slots * hd, 0), vc(slots * hd, 0), score(slots, 0);
    std::vector<int32_t> pos(slots, -1);
    std::vector<int> len(Hkv, 0), capv(Hkv, cap), ring(Hkv, 0);
    std::vector<region> ref(Hkv);
    std::vector<int> rring(Hkv, 0);
    for (auto &r : ref) {
        r.k.assign((size_t)(cap + 1) * hd, 0);
        r.v.assign((size_t)(cap + 1) * hd, 0);
        r.score.assign(cap + 1, 0);
        r.pos.assign(cap + 1, -1);
        r.len = 0;
    }
    bool ok = true;
    int n_evict = 0;
    for (int t = 0; t < steps && ok; t++) {
        std::vector<float> k((size_t)Hkv * hd), v((size_t)Hkv * hd);
        for (auto &x : k) x = frand(-1, 1);
        for (auto &x : v) x = frand(-1, 1);
        launch_kv_write(kc.data(), vc.data(), CU_F32, pos.data(), score.data(), off.data(), len.data(), NULL,
                        k.data(), v.data(), Hkv, hd, t, 0);
        /* step probabilities: few distinct values, so ties happen (ties → the older token) */
        for (int g = 0; g < Hkv; g++) {
            region &r = ref[g];
            int s = r.len++;
            memcpy(&r.k[(size_t)s * hd], &k[(size_t)g * hd], hd * sizeof(float));
            memcpy(&r.v[(size_t)s * hd], &v[(size_t)g * hd], hd * sizeof(float));
            r.pos[s] = t;
            r.score[s] = 0;
            for (int j = 0; j < r.len; j++) {
                float a = (float)(rng() % 3) * 0.25f;
                r.score[j] += a;
                score[off[g] + j] += a;
            }
        }
        int recent_from = t - n_recent + 1;
        cudaError_t e = launch_evict(mode, kc.data(), vc.data(), CU_F32, pos.data(), score.data(), off.data(),
                                     len.data(), capv.data(), ring.data(), Hkv, hd, n_sink, recent_from, mean,
                                     t, 0);
        ok &= e == cudaSuccess;
        for (int g = 0; g < Hkv; g++) {
            region &r = ref[g];
            int vic = ref_victim(mode, r, cap, rring[g], n_sink, recent_from, mean, t);
            if (r.len > cap && vic < 0) ok = false; /* every slot protected: cannot happen */
            if (vic >= 0) {
                int last = r.len - 1;
                if (vic != last) {
                    memcpy(&r.k[(size_t)vic * hd], &r.k[(size_t)last * hd], hd * sizeof(float));
                    memcpy(&r.v[(size_t)vic * hd], &r.v[(size_t)last * hd], hd * sizeof(float));
                    r.pos[vic] = r.pos[last];
                    r.score[vic] = r.score[last];
                }
                r.len = last;
                n_evict++;
                if (mode == EV_LOCAL) rring[g] = (rring[g] + 1) % cap;
                if (mode == EV_STREAMING) rring[g] = (rring[g] + 1) % (cap - n_sink);
            }
            ok &= len[g] == r.len;
            for (int j = 0; j < r.len && ok; j++) {
                ok &= pos[off[g] + j] == r.pos[j] && score[off[g] + j] == r.score[j];
                ok &= !memcmp(&kc[(off[g] + j) * hd], &r.k[(size_t)j * hd], hd * sizeof(float));
                ok &= !memcmp(&vc[(off[g] + j) * hd], &r.v[(size_t)j * hd], hd * sizeof(float));
            }
            if (!ok) printf("     %s: step %d head %d differs (len %d vs %d)\n", name, t, g, len[g], r.len);
        }
    }
    char what[200];
    snprintf(what, sizeof what, "kv_write + evict %s cap %d sink %d recent %d mean %d: %d steps, %d evictions",
             name, cap, n_sink, n_recent, mean, steps, n_evict);
    check(ok && n_evict > 0, what, 0);
}

/* ---------------------------------------------------------------- gather, argmax, elementwise */
static void test_gather()
{
    const int hd = 24, n_live = 7, kvs = 3 * hd, col = hd;
    std::vector<float> kf(10 * hd), vf(10 * hd), kn(4 * kvs), vn(4 * kvs);
    for (auto &x : kf) x = frand(-1, 1);
    for (auto &x : vf) x = frand(-1, 1);
    for (auto &x : kn) x = frand(-1, 1);
    for (auto &x : vn) x = frand(-1, 1);
    std::vector<__half> kc = store<__half>(kf), vc = store<__half>(vf), kd(6 * hd), vd(6 * hd);
    std::vector<int> src = {0, 2, 6, 7, 9, 10};
    cudaError_t e = launch_kv_gather(kd.data(), vd.data(), kc.data(), vc.data(), CU_F16, 1, src.data(), 6, n_live,
                                     kn.data(), vn.data(), kvs, col, hd, 0);
    bool ok = e == cudaSuccess;
    for (int i = 0; i < 6; i++)
        for (int d = 0; d < hd; d++) {
            int j = src[i];
            float wk = j < n_live ? __half2float(kc[(1 + j) * hd + d]) : __half2float(__float2half_rn(kn[(j - n_live) * kvs + col + d]));
            float wv = j < n_live ? __half2float(vc[(1 + j) * hd + d]) : __half2float(__float2half_rn(vn[(j - n_live) * kvs + col + d]));
            ok &= __half2float(kd[i * hd + d]) == wk && __half2float(vd[i * hd + d]) == wv;
        }
    check(ok, "kv_gather F16: live slots and chunk rows, stable order", 0);
}

static void test_argmax()
{
    bool ok = true;
    for (int trial = 0; trial < 6; trial++) {
        int n = trial < 3 ? 3001 : 37;
        std::vector<float> x(n);
        for (auto &v : x) v = (float)(rng() % 50);
        if (trial == 1) x[0] = NAN;
        if (trial == 2) for (int i = 0; i < n; i += 3) x[i] = NAN;
        int want = -1;
        for (int i = 0; i < n; i++) /* first maximum, NaNs never win */
            if (!std::isnan(x[i]) && (want < 0 || x[i] > x[want])) want = i;
        int got = -7;
        ok &= launch_argmax(x.data(), n, &got, 0) == cudaSuccess && got == want;
    }
    check(ok, "argmax: first maximum on ties, NaNs skipped", 0);
}

static void test_elementwise()
{
    const int n = 3, dim = 72, H = 3, hd = 24, half = hd / 2;
    std::vector<float> x((size_t)n * dim), w(dim), out((size_t)n * dim);
    for (auto &v : x) v = frand(-2, 2);
    for (auto &v : w) v = frand(0.5, 1.5);
    launch_rmsnorm(x.data(), w.data(), out.data(), n, dim, 1e-5f, 0);
    double e = 0;
    for (int r = 0; r < n; r++) {
        double ss = 0;
        for (int d = 0; d < dim; d++) ss += (double)x[r * dim + d] * x[r * dim + d];
        double inv = 1.0 / sqrt(ss / dim + 1e-5);
        for (int d = 0; d < dim; d++) e = std::max(e, fabs(out[r * dim + d] - w[d] * x[r * dim + d] * inv));
    }
    check(e < 1e-5, "rmsnorm", e);
    /* RoPE: rotate_half pairs (d, d + hd/2), table rows row0 + i */
    const int rows = 9, row0 = 4;
    std::vector<float> ct((size_t)rows * half), st((size_t)rows * half), y((size_t)n * H * hd);
    for (auto &v : ct) v = frand(-1, 1);
    for (auto &v : st) v = frand(-1, 1);
    for (auto &v : y) v = frand(-1, 1);
    std::vector<float> y0 = y;
    launch_rope(y.data(), n, H, hd, ct.data(), st.data(), row0, 0);
    e = 0;
    for (int i = 0; i < n; i++)
        for (int h = 0; h < H; h++)
            for (int d = 0; d < half; d++) {
                size_t b = ((size_t)i * H + h) * hd;
                float c = ct[(row0 + i) * half + d], s = st[(row0 + i) * half + d];
                float a = y0[b + d], bb = y0[b + d + half];
                e = std::max(e, (double)fabs(y[b + d] - (a * c - bb * s)));
                e = std::max(e, (double)fabs(y[b + d + half] - (bb * c + a * s)));
            }
    check(e < 1e-6, "rope", e);
    /* embed (BF16 table), swiglu, add, cast */
    std::vector<float> tf(5 * dim);
    for (auto &v : tf) v = frand(-1, 1);
    std::vector<__nv_bfloat16> tb = store<__nv_bfloat16>(tf);
    std::vector<int> tok = {4, 0, 4};
    launch_embed(tb.data(), CU_BF16, tok.data(), 3, dim, out.data(), 0);
    bool ok = true;
    for (int i = 0; i < 3; i++)
        for (int d = 0; d < dim; d++) ok &= out[i * dim + d] == __bfloat162float(tb[tok[i] * dim + d]);
    check(ok, "embed BF16", 0);
    std::vector<float> g = x, u = out;
    launch_swiglu(g.data(), u.data(), g.size(), 0);
    e = 0;
    for (size_t i = 0; i < g.size(); i++) e = std::max(e, (double)fabs(g[i] - x[i] / (1.0f + expf(-x[i])) * u[i]));
    check(e < 1e-6, "swiglu", e);
    std::vector<__half> hh(x.size());
    launch_cast(x.data(), hh.data(), CU_F16, x.size(), 0);
    ok = true;
    for (size_t i = 0; i < x.size(); i++) ok &= __half2float(hh[i]) == __half2float(__float2half_rn(x[i]));
    check(ok, "cast F16", 0);
}

#include "tests/cuda_emu/kt_quant.h"


/* select.cu launch_ete_shifted (--rope shifted, evict-then-attend): for several steps, the new
 * token appended at slot len (as launch_gemv's GV_QKV), then the kernel; against the policies'
 * victim rule (ref_ete_victim, the oldest when every slot is protected), swap-last of K, V,
 * position and score, the length, the new key's norm (l2norm, the CPU's double sum rounded) and
 * the live keys rotated by their rank in position order. Regions in shuffled position order. */
static void test_ete_shifted(int mode, const char *name, int cap, int n_sink, int n_recent, int mean, int steps,
                             int sh_hist = 5, int he_bits = 16, int he_probe = 0)
{
    const int Hkv = 2, hd = 8, half = hd / 2, S = cap + 1, rows = cap + 2, G = 2;
    /* hashevict (EV_HASH): codes, sums, ages per slot; the projections; the step's queries */
    std::vector<unsigned long long> hst((size_t)Hkv * S * EV_HASH_WORDS, 0);
    std::vector<float> R((size_t)he_bits * hd), q((size_t)Hkv * G * hd);
    for (auto &v : R) v = frand(-1, 1);
    std::vector<ref_sh> sst((size_t)Hkv * S); /* scissorhands' histories (EV_SH) */
    static_assert(sizeof(ref_sh) == EV_SH_WORDS * 8, "ref_sh is the device layout");
    std::vector<float> kc((size_t)Hkv * S * hd), vc(kc.size()), kr(kc.size()), score((size_t)Hkv * S, 0.0f);
    std::vector<int32_t> pos((size_t)Hkv * S, -1);
    std::vector<size_t> off(Hkv);
    std::vector<int> len(Hkv), cp(Hkv, cap), step(2);
    std::vector<float> ct((size_t)rows * half), st((size_t)rows * half);
    for (auto &v : ct) v = frand(-1, 1);
    for (auto &v : st) v = frand(-1, 1);
    for (int g = 0; g < Hkv; g++) { /* a prompt of cap − 1 tokens, shuffled slots */
        off[g] = (size_t)g * S;
        len[g] = cap - 1;
        std::vector<int> p(cap - 1);
        for (int j = 0; j < cap - 1; j++) p[j] = j;
        std::shuffle(p.begin(), p.end(), rng);
        for (int j = 0; j < cap - 1; j++) {
            pos[off[g] + j] = p[j];
            score[off[g] + j] = frand(0, 3);
            unsigned long long *he = &hst[(off[g] + j) * EV_HASH_WORDS];
            he[0] = ref_he_code(R.data(), he_bits, hd, &kc[(off[g] + j) * hd]);
            he[1] = mean ? rng() % 40 : 0;
            he[2] = (1ULL << 32) | (mean ? 1 + rng() % 5 : 0);
            ref_sh &e = sst[off[g] + j];
            memset(&e, 0, sizeof e);
            e.n_push = 1 + rng() % (3 * sh_hist);
            for (int b = 0; b < std::min<int>(e.n_push, sh_hist); b++)
                if (rng() % 3 == 0) e.ring[b / 64] |= 1ULL << (b % 64), e.ones++;
            for (int d = 0; d < hd; d++) kc[(off[g] + j) * hd + d] = frand(-1, 1), vc[(off[g] + j) * hd + d] = frand(-1, 1);
        }
    }
    int t = cap - 1;
    double worst = 0;
    bool ok = true;
    const uint64_t seed = 77;
    for (int it = 0; it < steps && ok; it++, t++) {
        const std::vector<int> L0 = len;
        for (int g = 0; g < Hkv; g++) { /* the append */
            size_t o = off[g] + len[g];
            pos[o] = t;
            score[o] = 0.0f;
            memset(&sst[o], 0xa5, sizeof sst[o]); /* whatever the slot held: the kernel empties it */
            for (int w = 0; w < EV_HASH_WORDS; w++) hst[o * EV_HASH_WORDS + w] = 0xa5a5a5a5a5a5a5a5ULL;
            for (int d = 0; d < hd; d++) kc[o * hd + d] = frand(-1, 1), vc[o * hd + d] = frand(-1, 1);
        }
        const std::vector<float> K0 = kc, V0 = vc, S0 = score;
        const std::vector<int32_t> P0 = pos;
        const std::vector<ref_sh> H0 = sst;
        for (auto &v : q) v = frand(-1, 1);
        std::vector<unsigned long long> E = hst; /* the expected hashevict state */
        step[0] = 0, step[1] = t;
        ete_shift_args a;
        memset(&a, 0, sizeof a);
        a.kc = kc.data(), a.vc = vc.data(), a.kv_dt = CU_F32, a.head_dim = hd, a.n_kv_heads = Hkv;
        a.kr = kr.data(), a.pos = pos.data(), a.score = mode == EV_RANDOM ? NULL : score.data();
        a.off = off.data(), a.len = len.data(), a.cap = cp.data(), a.step = step.data();
        a.evict = mode, a.n_sink = n_sink, a.n_recent = n_recent, a.mean = mean, a.layer = 3, a.seed = seed;
        a.cos_t = ct.data(), a.sin_t = st.data();
        a.sstate = mode == EV_SH ? (unsigned long long *)sst.data() : mode == EV_HASH ? hst.data() : NULL;
        a.sh_hist = sh_hist;
        a.q = q.data(), a.G = G, a.he_R = R.data(), a.he_bits = he_bits, a.he_probe = he_probe;
        ok &= launch_ete_shifted(&a, 0) == cudaSuccess;
        for (int g = 0; g < Hkv && ok; g++) {
            const size_t o = off[g];
            const int L = L0[g] + 1;
            std::vector<float> S1(S0.begin() + o, S0.begin() + o + S);
            if (mode == EV_L2NORM) {
                double ss = 0;
                for (int d = 0; d < hd; d++) ss += (double)K0[(o + L - 1) * hd + d] * K0[(o + L - 1) * hd + d];
                S1[L - 1] = (float)sqrt(ss);
            }
            int n = L, victim = -1;
            unsigned long long *Eg = &E[o * EV_HASH_WORDS];
            std::vector<unsigned> dist(L, 0);
            if (mode == EV_HASH) {
                const unsigned long long cnew = ref_he_code(R.data(), he_bits, hd, &K0[(o + L - 1) * hd]);
                std::vector<unsigned long long> probes;
                if (he_probe) probes.push_back(cnew);
                else
                    for (int hh = 0; hh < G; hh++) probes.push_back(ref_he_code(R.data(), he_bits, hd, &q[(size_t)(g * G + hh) * hd]));
                for (int j = 0; j < L - 1; j++)
                    for (auto c : probes) dist[j] += (unsigned)__builtin_popcountll(Eg[j * EV_HASH_WORDS] ^ c);
                Eg[(L - 1) * EV_HASH_WORDS] = cnew, Eg[(L - 1) * EV_HASH_WORDS + 1] = 0, Eg[(L - 1) * EV_HASH_WORDS + 2] = 1ULL << 32;
            }
            if (L > cap) {
                if (mode == EV_HASH) { /* the largest distance, or (acc + d) / (age + 1) exactly */
                    uint64_t bv = 0, bw = 0;
                    for (int j = 0; j < L - 1; j++) {
                        if (P0[o + j] < n_sink || P0[o + j] >= t - n_recent) continue;
                        uint64_t v = mean ? Eg[j * EV_HASH_WORDS + 1] + dist[j] : dist[j];
                        uint64_t w = mean ? (uint32_t)Eg[j * EV_HASH_WORDS + 2] + 1u : 1;
                        if (victim < 0 || v * bw > bv * w || (v * bw == bv * w && P0[o + j] < P0[o + victim]))
                            victim = j, bv = v, bw = w;
                    }
                } else if (mode == EV_SH) { /* the least important history (exact), ties → smaller position */
                    for (int j = 0; j < L - 1; j++) {
                        if (P0[o + j] < n_sink || P0[o + j] >= t - n_recent) continue;
                        if (victim < 0 || ref_sh_less(&H0[o + j], &H0[o + victim], sh_hist) ||
                            (!ref_sh_less(&H0[o + victim], &H0[o + j], sh_hist) && P0[o + j] < P0[o + victim]))
                            victim = j;
                    }
                } else {
                    victim = ref_ete_victim(mode, &P0[o], S1.data(), L - 1, n_sink, n_recent, t, 3, g, seed, mean);
                }
                if (victim < 0) {
                    victim = 0;
                    for (int j = 1; j < L - 1; j++)
                        if (P0[o + j] < P0[o + victim]) victim = j;
                }
                n = L - 1;
                if (mode == EV_HASH && mean)
                    for (int j = 0; j < L - 1; j++) {
                        Eg[j * EV_HASH_WORDS + 1] += dist[j];
                        Eg[j * EV_HASH_WORDS + 2] = (Eg[j * EV_HASH_WORDS + 2] & 0xffffffff00000000ULL) |
                                                    (uint32_t)(Eg[j * EV_HASH_WORDS + 2] + 1);
                    }
            }
            ok &= len[g] == n;
            for (int j = 0; j < n && ok; j++) {
                const int src = j == victim ? L - 1 : j;
                ok &= pos[o + j] == P0[o + src];
                if (mode != EV_RANDOM) ok &= score[o + j] == S1[src];
                if (mode == EV_SH) { /* the new token's history empty, the others moved with their slots */
                    ref_sh want = H0[o + src];
                    if (src == L - 1) memset(&want, 0, sizeof want);
                    ok &= !memcmp(&sst[o + j], &want, sizeof want);
                }
                if (mode == EV_HASH)
                    for (int w = 0; w < EV_HASH_WORDS; w++) ok &= hst[(o + j) * EV_HASH_WORDS + w] == Eg[src * EV_HASH_WORDS + w];
                int rank = 0;
                for (int i = 0; i < n; i++) rank += pos[o + i] < pos[o + j];
                for (int d = 0; d < hd; d++) {
                    ok &= kc[(o + j) * hd + d] == K0[(o + src) * hd + d] && vc[(o + j) * hd + d] == V0[(o + src) * hd + d];
                    if (d < half) {
                        float x0 = K0[(o + src) * hd + d], x1 = K0[(o + src) * hd + d + half];
                        float c = ct[(size_t)rank * half + d], sn = st[(size_t)rank * half + d];
                        worst = std::max(worst, (double)fabs(kr[(o + j) * hd + d] - (x0 * c - x1 * sn)));
                        worst = std::max(worst, (double)fabs(kr[(o + j) * hd + d + half] - (x1 * c + x0 * sn)));
                    }
                }
            }
        }
    }
    char what[160];
    snprintf(what, sizeof what, "ete_shifted %s: cap %d sink %d recent %d mean %d, %d steps: victim, swap-last, len, rank rotation",
             name, cap, n_sink, n_recent, mean, steps);
    check(ok && worst < 1e-6, what, worst);
}

int main(int argc, char **argv)
{
    test_prefill<float>(CU_F32, "F32", 40, 21, {5, 19});
    test_prefill<__half>(CU_F16, "F16", 20, 17, {0, 33});
    test_prefill<__nv_bfloat16>(CU_BF16, "BF16", 64, 5, {16, 1});
    /* the tensor-core kernel (16-bit caches, head_dim a multiple of 16): several query blocks,
     * an empty cache, a cache longer than the chunk, head_dim 32..128 */
    check(attn_prefill_uses_tc(CU_F16, CU_F16, 64) && attn_prefill_uses_tc(CU_BF16, CU_BF16, 128) &&
              !attn_prefill_uses_tc(CU_F16, CU_F16, 20) && !attn_prefill_uses_tc(CU_F32, CU_F32, 64) &&
              !attn_prefill_uses_tc(CU_F32, CU_F16, 64) && !attn_prefill_uses_tc(CU_F16, CU_F16, 256),
          "prefill: tensor cores for 16-bit caches with head_dim 16k <= 128 only", 0);
    test_prefill<__half>(CU_F16, "F16 (tensor cores)", 64, 70, {0, 37});
    test_prefill<__half>(CU_F16, "F16 (tensor cores)", 32, 17, {5, 100});
    test_prefill<__nv_bfloat16>(CU_BF16, "BF16 (tensor cores)", 128, 40, {50, 3});
    test_steps();
    test_evict(EV_LOCAL, "local", 6, 0, 0, 0, 20, 8);
    test_evict(EV_STREAMING, "streaming", 7, 3, 0, 0, 25, 8);
    test_evict(EV_H2O, "h2o", 8, 2, 3, 0, 30, 8);
    test_evict(EV_H2O, "h2o", 260, 4, 130, 1, 275, 4); /* more slots than threads */
    test_ete_shifted(EV_L2NORM, "l2norm", 9, 2, 3, 0, 8);
    test_ete_shifted(EV_RANDOM, "random", 9, 1, 2, 0, 8);
    test_ete_shifted(EV_H2O_EF, "h2o evict-first", 9, 2, 2, 1, 8);
    test_ete_shifted(EV_H2O_EF, "h2o evict-first", 140, 3, 5, 0, 4); /* more slots than threads */
    test_ete_shifted(EV_L2NORM, "l2norm (every slot protected: the oldest)", 6, 4, 10, 0, 5);
    test_ete_shifted(EV_SH, "scissorhands", 12, 2, 2, 0, 8, 5);
    test_ete_shifted(EV_SH, "scissorhands", 9, 1, 3, 0, 6, 400);
    test_ete_shifted(EV_HASH, "hashevict", 10, 2, 2, 0, 8, 5, 16, 0);
    test_ete_shifted(EV_HASH, "hashevict (probe key, 3 bits)", 10, 1, 2, 0, 8, 5, 3, 1);
    test_ete_shifted(EV_HASH, "hashevict (mean)", 10, 2, 2, 1, 8, 5, 16, 0);
    test_ete_shifted(EV_HASH, "hashevict (mean, probe key, 2 bits)", 9, 1, 1, 1, 8, 5, 2, 1);
    test_gather();
    test_argmax();
    test_elementwise();
    test_quant(argc > 1 ? argv[1] : "tests/fixtures/quant");
    printf("%d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
