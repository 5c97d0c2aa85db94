/* Part of tests/cuda_emu/test_kernels_emu.cc: weights of every storage type on the device.
 *  - dequantization (kernels/cuda/quant.cuh through launch_dequant_rows and launch_embed) equals
 *    the floats of the gguf Python package (= kernels/cpu/quant.c dequantize_row, bit for bit:
 *    tests/test_quant.c) on the fixtures of tests/fixtures/quant: random blocks with edge values
 *    (zero, negative, subnormal, largest f16 scales; all-0/all-1 quant bits; extreme 6-bit and
 *    int8 sub-scales) and real blocks of SmolLM2 and Qwen2.5 read from the model cache (their
 *    offsets and hashes of gguf's floats: real_blocks.txt); to f16 as the f16 rounding of them;
 *  - the decode GEMV (launch_gemv) on those matrices against a double-precision dot product of
 *    the reference floats: plain store + bias, residual add with RMSNorm prologue, SwiGLU of two
 *    matrices of different types, the fused q/k/v epilogue (biases, RoPE, rounding, append);
 *  - plain F32/F16/BF16 rows, also of a length that is not a multiple of 8;
 *  - the hi/lo activation split of the prefill GEMMs. */

#include "tests/support/real_blocks.h"

struct qfix {
    std::string type;
    int n = 0, be = 0, bb = 0;
    std::vector<uint8_t> blocks;
    std::vector<float> floats;
};

static bool read_qfix(const std::string &path, qfix &f)
{
    FILE *fp = fopen(path.c_str(), "rb");
    if (!fp) return false;
    char magic[8], info[120], type[9] = {0};
    uint32_t h[4];
    bool ok = fread(magic, 8, 1, fp) == 1 && !memcmp(magic, "LLMQFX1", 8) && fread(info, 120, 1, fp) == 1 &&
              fread(type, 8, 1, fp) == 1 && fread(h, 4, 4, fp) == 4 && h[0] == 0;
    if (ok) {
        f.type = type, f.n = (int)h[1], f.be = (int)h[2], f.bb = (int)h[3];
        f.blocks.resize((size_t)f.n * f.bb);
        f.floats.resize((size_t)f.n * f.be);
        ok = fread(f.blocks.data(), f.bb, f.n, fp) == (size_t)f.n && fread(f.floats.data(), 4 * f.be, f.n, fp) == (size_t)f.n;
    }
    fclose(fp);
    return ok;
}

static int qtype_of(const std::string &t)
{
    const char *names[] = {"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K", "Q6_K"};
    for (int i = 0; i < CU_DT_COUNT; i++)
        if (t == names[i]) return i;
    return -1;
}

/* y = W x in double from the reference floats wf [rows][cols] */
static std::vector<double> ref_gemv(const std::vector<float> &wf, int rows, int cols, const std::vector<float> &x,
                                    std::vector<double> *absdot = nullptr)
{
    std::vector<double> y(rows, 0.0);
    if (absdot) absdot->assign(rows, 0.0);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) {
            y[r] += (double)wf[(size_t)r * cols + c] * x[c];
            if (absdot) (*absdot)[r] += fabs((double)wf[(size_t)r * cols + c] * x[c]);
        }
    return y;
}

/* the checks on one matrix of fixture blocks: f.floats gguf's floats, or (real blocks, read from
 * the model cache) empty and hash [f.n] the FNV-1a 64 of each block's floats: the device's
 * dequantization, once it hashes to gguf's, is the reference of the rest */
static void test_blocks(const std::string &file, qfix &f, const uint64_t *hash)
{
    const int dt = qtype_of(f.type), k = f.be == 32 ? 8 : 3, cols = f.be * k, rows = f.n / k;
    const std::vector<uint8_t> &W = f.blocks;
    /* dequantization, f32 bit for bit and f16 as its rounding */
    std::vector<float> d32((size_t)rows * cols, NAN);
    std::vector<__half> d16((size_t)rows * cols);
    cudaError_t e = launch_dequant_rows(W.data(), dt, cols, 0, rows, d32.data(), CU_F32, 0);
    cudaError_t e2 = launch_dequant_rows(W.data(), dt, cols, 1, rows - 1, d16.data(), CU_F16, 0);
    bool same = e == cudaSuccess && e2 == cudaSuccess, same16 = same;
    if (hash) {
        for (int b = 0; b < rows * k; b++) same &= rb_fnv1a64(&d32[(size_t)b * f.be], (size_t)f.be * 4) == hash[b];
        f.floats = d32;
    }
    for (size_t i = 0; i < d32.size(); i++) same &= !memcmp(&d32[i], &f.floats[i], 4);
    for (size_t i = 0; i < (size_t)(rows - 1) * cols; i++)
        same16 &= __half2float(d16[i]) == __half2float(__float2half_rn(f.floats[(size_t)cols + i])) ||
                  (std::isnan(__half2float(d16[i])) && std::isnan(f.floats[(size_t)cols + i]));
    check(same, (file + ": device dequantization = gguf's floats bit for bit").c_str(), 0);
    check(same16, (file + ": dequantized to f16 = their f16 rounding").c_str(), 0);
    /* the embedding lookup of rows 2, 0, rows-1 */
    std::vector<int> tok = {2 % rows, 0, rows - 1};
    std::vector<float> emb(3 * (size_t)cols, NAN);
    bool eok = launch_embed(W.data(), dt, tok.data(), 3, cols, emb.data(), 0) == cudaSuccess;
    for (int i = 0; i < 3; i++) eok &= !memcmp(&emb[(size_t)i * cols], &f.floats[(size_t)tok[i] * cols], (size_t)cols * 4);
    check(eok, (file + ": embedding rows bit for bit").c_str(), 0);
    /* GEMV: store + bias */
    std::vector<float> x(cols), bias(rows), y(rows, NAN), nw(cols);
    for (auto &v : x) v = frand(-1, 1);
    for (auto &v : bias) v = frand(-1, 1);
    for (auto &v : nw) v = frand(0.5, 1.5);
    std::vector<double> ad;
    std::vector<double> ref = ref_gemv(f.floats, rows, cols, x, &ad);
    gv_args a;
    memset(&a, 0, sizeof a);
    a.m[0] = cu_mat{W.data(), dt, rows, cols};
    a.nm = 1, a.epi = GV_STORE, a.x = x.data(), a.y[0] = y.data(), a.bias = bias.data();
    e = launch_gemv(&a, 3, 0);
    double err = 0;
    for (int r = 0; r < rows; r++) err = std::max(err, fabs(y[r] - (ref[r] + bias[r])) / std::max(1e-30, ad[r] + fabs(bias[r])));
    check(e == cudaSuccess && err < 1e-6, (file + ": GEMV + bias vs double (relative to sum |w x|)").c_str(), err);
    /* residual add with the RMSNorm prologue: y += W · (nw * x / rms(x)) */
    double ss = 0;
    for (float v : x) ss += (double)v * v;
    const double inv = 1.0 / sqrt(ss / cols + 1e-5);
    std::vector<float> xn(cols);
    for (int c2 = 0; c2 < cols; c2++) xn[c2] = (float)(nw[c2] * (x[c2] * inv));
    ref = ref_gemv(f.floats, rows, cols, xn, &ad);
    std::vector<float> y0(rows);
    for (auto &v : y0) v = frand(-1, 1);
    y = y0;
    memset(&a, 0, sizeof a);
    a.m[0] = cu_mat{W.data(), dt, rows, cols};
    a.nm = 1, a.epi = GV_ADD, a.x = x.data(), a.norm_w = nw.data(), a.eps = 1e-5f, a.y[0] = y.data();
    e = launch_gemv(&a, 0, 0);
    err = 0;
    for (int r = 0; r < rows; r++) err = std::max(err, fabs(y[r] - y0[r] - ref[r]) / std::max(1e-30, ad[r] + fabs(y0[r])));
    check(e == cudaSuccess && err < 2e-6, (file + ": RMSNorm + GEMV + residual").c_str(), err);
    /* SwiGLU: gate = this matrix, up = an F16 matrix of the same shape */
    std::vector<float> uf((size_t)rows * cols);
    for (auto &v : uf) v = frand(-0.2f, 0.2f);
    std::vector<__half> uh = store<__half>(uf);
    uf = load(uh);
    std::vector<double> adu, refu = ref_gemv(uf, rows, cols, x, &adu);
    ref = ref_gemv(f.floats, rows, cols, x, &ad);
    memset(&a, 0, sizeof a);
    a.m[0] = cu_mat{W.data(), dt, rows, cols};
    a.m[1] = cu_mat{uh.data(), CU_F16, rows, cols};
    a.nm = 2, a.epi = GV_SWIGLU, a.x = x.data(), a.y[0] = y.data();
    e = launch_gemv(&a, 2, 0);
    err = 0;
    for (int r = 0; r < rows; r++) {
        double g = ref[r], u = refu[r], want = g / (1 + exp(-g)) * u;
        double scale_r = (ad[r] + 1) * (adu[r] + 1e-3);
        err = std::max(err, fabs(y[r] - want) / scale_r);
    }
    check(e == cudaSuccess && err < 1e-5, (file + ": SwiGLU of two matrices (this type and F16)").c_str(), err);
}

template <typename T> static void test_plain_gemv(int dt, const char *tname, int rows, int cols)
{
    std::vector<float> wf((size_t)rows * cols), x(cols), y(rows, NAN);
    for (auto &v : wf) v = frand(-1, 1);
    for (auto &v : x) v = frand(-1, 1);
    std::vector<T> w = store<T>(wf);
    wf = load(w);
    std::vector<double> ad, ref = ref_gemv(wf, rows, cols, x, &ad);
    gv_args a;
    memset(&a, 0, sizeof a);
    a.m[0] = cu_mat{w.data(), dt, rows, cols};
    a.nm = 1, a.epi = GV_STORE, a.x = x.data(), a.y[0] = y.data();
    cudaError_t e = launch_gemv(&a, 2, 0);
    double err = 0;
    for (int r = 0; r < rows; r++) err = std::max(err, fabs(y[r] - ref[r]) / ad[r]);
    char what[128];
    snprintf(what, sizeof what, "GEMV %s %d x %d vs double", tname, rows, cols);
    check(e == cudaSuccess && err < 1e-6, what, err);
}

/* the fused attention input: q/k/v of GQA heads, biases, RoPE at step[1], k/v rounded to F16 and
 * appended at slot len[g] of each KV head with its position and a zero score */
static void test_qkv()
{
    const int dim = 64, hd = 16, half = hd / 2, H = 4, Hkv = 2, qdim = H * hd, kvdim = Hkv * hd, t = 5;
    std::vector<float> wq((size_t)qdim * dim), wk((size_t)kvdim * dim), wv((size_t)kvdim * dim), x(dim);
    std::vector<float> bq(qdim), bk(kvdim), bv(kvdim), ct(8 * half), st(8 * half), nw(dim);
    for (auto *v : {&wq, &wk, &wv, &x, &bq, &bk, &bv, &ct, &st}) for (auto &u : *v) u = frand(-1, 1);
    for (auto &u : nw) u = frand(0.5, 1.5);
    std::vector<__nv_bfloat16> hq = store<__nv_bfloat16>(wq), hk = store<__nv_bfloat16>(wk), hv = store<__nv_bfloat16>(wv);
    wq = load(hq), wk = load(hk), wv = load(hv);
    const int cap = 6;
    std::vector<size_t> off = {0, (size_t)cap + 1};
    std::vector<int> len = {3, 0}, step = {0, t};
    std::vector<__half> kc(2 * (cap + 1) * hd, __float2half_rn(0)), vc = kc;
    std::vector<int32_t> pos(2 * (cap + 1), -1);
    std::vector<float> score(2 * (cap + 1), 7.0f), q(qdim, NAN), k(kvdim, NAN), v(kvdim, NAN);
    gv_args a;
    memset(&a, 0, sizeof a);
    a.m[0] = cu_mat{hq.data(), CU_BF16, qdim, dim}, a.m[1] = cu_mat{hk.data(), CU_BF16, kvdim, dim};
    a.m[2] = cu_mat{hv.data(), CU_BF16, kvdim, dim};
    a.nm = 3, a.epi = GV_QKV, a.x = x.data(), a.norm_w = nw.data(), a.eps = 1e-6f;
    a.y[0] = q.data(), a.y[1] = k.data(), a.y[2] = v.data();
    a.qkv.bias[0] = bq.data(), a.qkv.bias[1] = bk.data(), a.qkv.bias[2] = bv.data();
    a.qkv.cos_t = ct.data(), a.qkv.sin_t = st.data(), a.qkv.step = step.data(), a.qkv.head_dim = hd;
    a.qkv.kv_dt = CU_F16, a.qkv.kc = kc.data(), a.qkv.vc = vc.data(), a.qkv.pos = pos.data();
    a.qkv.score = score.data(), a.qkv.off = off.data(), a.qkv.len = len.data();
    cudaError_t e = launch_gemv(&a, 0, 0);
    double ss = 0;
    for (float u : x) ss += (double)u * u;
    const double inv = 1.0 / sqrt(ss / dim + 1e-6);
    std::vector<float> xn(dim);
    for (int i = 0; i < dim; i++) xn[i] = (float)(nw[i] * (x[i] * inv));
    double err = 0;
    bool cache_ok = true;
    auto rot = [&](std::vector<double> &y, int nh) {
        for (int h = 0; h < nh; h++)
            for (int d = 0; d < half; d++) {
                double a0 = y[h * hd + d], b0 = y[h * hd + d + half], c = ct[t * half + d], s = st[t * half + d];
                y[h * hd + d] = a0 * c - b0 * s;
                y[h * hd + d + half] = b0 * c + a0 * s;
            }
    };
    std::vector<double> rq = ref_gemv(wq, qdim, dim, xn), rk = ref_gemv(wk, kvdim, dim, xn), rv = ref_gemv(wv, kvdim, dim, xn);
    for (int i = 0; i < qdim; i++) rq[i] += bq[i];
    for (int i = 0; i < kvdim; i++) rk[i] += bk[i], rv[i] += bv[i];
    rot(rq, H);
    rot(rk, Hkv);
    double ekv = 0;
    for (int i = 0; i < qdim; i++) err = std::max(err, fabs(q[i] - rq[i]));
    for (int i = 0; i < kvdim; i++) { /* rounded to f16: within half a unit (2^-11 relative) */
        ekv = std::max(ekv, fabs(k[i] - rk[i]) / std::max(1e-3, fabs(rk[i])));
        ekv = std::max(ekv, fabs(v[i] - rv[i]) / std::max(1e-3, fabs(rv[i])));
        cache_ok &= k[i] == __half2float(__float2half_rn(k[i])) && v[i] == __half2float(__float2half_rn(v[i]));
    }
    for (int g = 0; g < Hkv; g++) {
        size_t slot = off[g] + len[g];
        for (int d = 0; d < hd; d++) {
            cache_ok &= __half2float(kc[slot * hd + d]) == k[g * hd + d];
            cache_ok &= __half2float(vc[slot * hd + d]) == v[g * hd + d];
        }
        cache_ok &= pos[slot] == t && score[slot] == 0.0f && len[g] == (g == 0 ? 3 : 0);
    }
    check(e == cudaSuccess && err < 1e-5, "GEMV q/k/v BF16: RMSNorm, biases, RoPE at the step's position", err);
    check(ekv < 5e-4, "GEMV q/k/v: k and v rounded to the f16 cache", ekv);
    check(cache_ok, "GEMV q/k/v: k, v appended at slot len[g] with position and zero score (len left for the attention)", 0);
}

static void test_split()
{
    std::vector<float> x(999);
    for (size_t i = 0; i < x.size(); i++) x[i] = frand(-1, 1) * powf(10.0f, (float)(i % 7) - 3.0f);
    std::vector<__half> h(x.size()), l(x.size());
    std::vector<__nv_bfloat16> bh(x.size()), bl(x.size());
    bool ok = launch_split_hilo(x.data(), x.size(), CU_F16, h.data(), l.data(), 0) == cudaSuccess &&
              launch_split_hilo(x.data(), x.size(), CU_BF16, bh.data(), bl.data(), 0) == cudaSuccess;
    double e16 = 0, eb = 0;
    for (size_t i = 0; i < x.size(); i++) {
        double s = (double)__half2float(h[i]) + __half2float(l[i]), sb = (double)__bfloat162float(bh[i]) + __bfloat162float(bl[i]);
        /* f16: 22 significant bits, and f16's subnormal spacing 2^-24 as an absolute floor;
         * bf16: 16 bits (its range is f32's) */
        e16 = std::max(e16, fabs(s - x[i]) / (ldexp(fabs(x[i]), -21) + ldexp(1.0, -24)));
        eb = std::max(eb, fabs(sb - x[i]) / ldexp(fabs(x[i]), -15));
    }
    check(ok && e16 <= 1 && eb <= 1, "hi + lo split: |hi + lo - x| <= 2^-21 |x| + 2^-24 (f16), 2^-15 |x| (bf16)", std::max(e16, eb));
}

static void test_fixture(const std::string &dir, const std::string &file)
{
    qfix f;
    if (!read_qfix(dir + "/" + file, f)) check(false, ("read " + dir + "/" + file).c_str(), 0);
    else test_blocks(file, f, nullptr);
}

/* real blocks of SmolLM2 and Qwen2.5 (tests/support/real_blocks.h): read from the model cache */
static void test_real_blocks(const std::string &dir)
{
    rb_set *sets;
    char err[1200];
    int ns = rb_read((dir + "/real_blocks.txt").c_str(), &sets, err, sizeof err);
    check(ns >= 6, ns < 0 ? err : "real_blocks.txt: the 6 sets of the two models", ns);
    for (int i = 0; i < ns; i++) {
        qfix f;
        f.type = sets[i].type, f.n = sets[i].n;
        const int dt = qtype_of(f.type);
        f.be = cu_blk_elems(dt), f.bb = cu_blk_bytes(dt);
        f.blocks.resize((size_t)f.n * f.bb);
        if (rb_load(&sets[i], (size_t)f.bb, f.blocks.data(), err, sizeof err)) check(false, err, 0);
        else test_blocks(std::string(sets[i].name) + " (real, by hash)", f, sets[i].hash);
    }
    rb_free(sets, ns > 0 ? ns : 0);
}

static void test_quant(const char *dir)
{
    const char *files[] = {"deq_Q8_0_random.qfx", "deq_Q4_0_random.qfx", "deq_Q4_1_random.qfx", "deq_Q5_0_random.qfx",
                           "deq_Q5_1_random.qfx", "deq_Q4_K_random.qfx", "deq_Q5_K_random.qfx", "deq_Q6_K_random.qfx"};
    for (const char *f : files) test_fixture(dir, f);
    test_real_blocks(dir);
    test_plain_gemv<float>(CU_F32, "F32", 13, 64);
    test_plain_gemv<__half>(CU_F16, "F16", 9, 256);
    test_plain_gemv<__nv_bfloat16>(CU_BF16, "BF16", 17, 96);
    test_plain_gemv<float>(CU_F32, "F32 (cols not a multiple of 8)", 11, 172);
    test_plain_gemv<__half>(CU_F16, "F16 (cols not a multiple of 8)", 5, 46);
    test_qkv();
    test_split();
}
