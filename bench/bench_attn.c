/* bench/bench_attn.c — the decode attention kernels of one KV group from the caches: the scores
 * head by head (the family's dots_*, what attention.c runs without a grouped kernel) against
 * the family's dots_group where it has one, and the kernels.h phases (attn_decode_scores /
 * _softmax / _values, whatever the family picks).
 *
 *     build/bench/bench_attn [--kv f16|bf16|f32] [--G 3,7] [--n 64,256,1024] [--hd 64] [--time S]
 *     build/bench/bench_attn --prefill 512,2000 [--live N]   (attn_prefill_head: see bench_prefill)
 *
 * GFMA/s = G·n·head_dim multiply-adds per phase ÷ its time (best of 5 timed batches). The K/V
 * rows (n·head_dim elements each) stay in the L1/L2 between calls: the kernels' compute rate,
 * not the memory's; in a model the rows come from the L3 or DRAM (bench/cpu.md gives those
 * figures, from steps alternating in one process). LLM_SIMD picks the family (kernels.h). */
#include "kernels/cpu/simd.h"
#include "kernels/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int parse_list(const char *s, int *v, int max)
{
    int n = 0;
    while (*s && n < max) {
        v[n++] = atoi(s);
        const char *c = strchr(s, ',');
        if (!c) break;
        s = c + 1;
    }
    return n;
}

enum { PH_HEADS, PH_GROUP, PH_SCORES, PH_SOFTMAX, PH_VALUES, N_PH };

/* seconds per call of phase ph (best of 5 batches of about t_s / 5 each) */
static double time_phase(int ph, const cpu_simd_ops *s, int G, int n, int hd, dtype_t dt, const float *q, const void *K,
                         const void *V, float *probs, int stride, float *out, double t_s)
{
    double best = 1e30;
    long reps = 1;
    for (int b = 0; b < 6; b++) {
        double t0 = now_s();
        for (long r = 0; r < reps; r++) {
            if (ph == PH_HEADS)
                for (int g = 0; g < G; g++) {
                    float *sg = probs + (size_t)g * stride;
                    const float *qg = q + (size_t)g * hd;
                    if (dt == DT_F16) s->dots_f16(sg, qg, K, n, hd, 0.125f);
                    else if (dt == DT_BF16) s->dots_bf16(sg, qg, K, n, hd, 0.125f);
                    else s->dots_f32(sg, qg, K, n, hd, 0.125f);
                }
            else if (ph == PH_GROUP) s->dots_group(probs, stride, q, G, K, (int)dt, n, hd, 0.125f);
            else if (ph == PH_SCORES) attn_decode_scores(q, G, K, dt, 0, n, hd, 0.125f, probs, stride);
            else if (ph == PH_SOFTMAX)
                for (int g = 0; g < G; g++) attn_decode_softmax(probs + (size_t)g * stride, n);
            else
                for (int d0 = 0, ds = attn_decode_dsplit(hd); d0 < hd; d0 += ds)
                    attn_decode_values(probs, stride, G, V, dt, n, hd, d0, d0 + ds, out);
        }
        double dt_s = now_s() - t0;
        if (b == 0) {   /* calibration batch */
            reps = (long)(t_s / 5 / (dt_s > 1e-7 ? dt_s : 1e-7));
            if (reps < 1) reps = 1;
            continue;
        }
        if (dt_s / reps < best) best = dt_s / reps;
    }
    return best;
}

/* The causal prefill of one query head (attn_prefill_head, as engine_prefill calls it per head):
 * n_new queries over n_live cached keys (dtype dt) plus the chunk's own (f32, rows interleaved
 * with two other heads' as in the engine); colsum: the statistics' second pass too. Prints ms
 * per head (best of 3) and GFMA/s of the causal work (scores and values: 2 · n_new · (n_live +
 * (n_new + 1) / 2) · head_dim multiply-adds). */
static void bench_prefill(const cpu_simd_ops *s, int n_new, int n_live, int hd, dtype_t dt, int colsum)
{
    const int stride = 3 * hd;
    const size_t es = dt == DT_F32 ? 4 : 2, nl = (size_t)(n_live > 0 ? n_live : 1) * hd;
    float *q = malloc(sizeof(float) * n_new * stride), *kn = malloc(sizeof(float) * n_new * stride),
          *vn = malloc(sizeof(float) * n_new * stride), *out = malloc(sizeof(float) * n_new * stride),
          *cs = malloc(sizeof(float) * (n_live + n_new)), *scratch = malloc(sizeof(float) * attn_prefill_scratch_floats(hd));
    uint8_t *K = malloc(nl * es), *V = malloc(nl * es);
    if (!q || !kn || !vn || !out || !cs || !scratch || !K || !V) {
        fprintf(stderr, "bench_attn: out of memory\n");
        exit(1);
    }
    unsigned x = 777;
    for (size_t i = 0; i < (size_t)n_new * stride; i++) {
        x = x * 1103515245u + 12345u;
        q[i] = ((x >> 9) & 0xffff) / 65536.0f - 0.5f;
        kn[i] = q[(i * 7) % (i + 1)] * 0.5f;
        vn[i] = ((x >> 3) & 0xff) / 256.0f - 0.5f;
    }
    for (size_t i = 0; i < nl; i++) {
        float k = (float)((i * 13) % 97) / 97.0f - 0.5f, v = (float)((i * 29) % 89) / 89.0f - 0.5f;
        if (dt == DT_F32) ((float *)K)[i] = k, ((float *)V)[i] = v;
        else {
            ((uint16_t *)K)[i] = dt == DT_F16 ? f32_to_f16(k) : f32_to_bf16(k);
            ((uint16_t *)V)[i] = dt == DT_F16 ? f32_to_f16(v) : f32_to_bf16(v);
        }
    }
    double best = 1e30;
    for (int r = 0; r < 4; r++) {   /* the first a warm-up */
        if (colsum) memset(cs, 0, sizeof(float) * (n_live + n_new));
        double t0 = now_s();
        attn_prefill_head(q, stride, K, dt, V, dt, n_live, kn, stride, vn, stride, n_new, hd, 0.125f, out, stride,
                          colsum ? cs : NULL, scratch);
        double t = now_s() - t0;
        if (r && t < best) best = t;
    }
    const double fma = 2.0 * n_new * (n_live + (n_new + 1) / 2.0) * hd / 1e9;
    printf("| %d | %d | %s | %s | %.2f | %.1f |\n", n_new, n_live, dtype_name(dt), colsum ? "yes" : "no", best * 1e3,
           fma / best);
    free(q), free(kn), free(vn), free(out), free(cs), free(scratch), free(K), free(V);
}

int main(int argc, char **argv)
{
    int pre[16], npre = 0, live = 0;
    int Gs[16] = {3, 7}, nG = 2, ns[16] = {64, 256, 1024}, nn = 3, hd = 64;
    double t_s = 0.5;
    dtype_t dt = DT_F16;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--kv") && i + 1 < argc) {
            const char *v = argv[++i];
            dt = !strcmp(v, "f16") ? DT_F16 : !strcmp(v, "bf16") ? DT_BF16 : !strcmp(v, "f32") ? DT_F32 : DT_COUNT;
            if (dt == DT_COUNT) {
                fprintf(stderr, "bench_attn: --kv takes f16, bf16 or f32, not '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(argv[i], "--G") && i + 1 < argc) nG = parse_list(argv[++i], Gs, 16);
        else if (!strcmp(argv[i], "--n") && i + 1 < argc) nn = parse_list(argv[++i], ns, 16);
        else if (!strcmp(argv[i], "--hd") && i + 1 < argc) hd = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--time") && i + 1 < argc) t_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--prefill") && i + 1 < argc) npre = parse_list(argv[++i], pre, 16);
        else if (!strcmp(argv[i], "--live") && i + 1 < argc) live = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_attn [--kv f16|bf16|f32] [--G 3,7] [--n 64,256,1024] [--hd 64] [--time S]\n"
                            "       bench_attn --prefill 512,2000 [--live N] [--kv f16|bf16|f32] [--hd 64]\n");
            return 2;
        }
    }
    if (hd < 1 || hd > 512 || nG < 1 || nn < 1) {
        fprintf(stderr, "bench_attn: bad --hd, --G or --n\n");
        return 2;
    }
    const cpu_simd_ops *s = cpu_simd();
    if (npre) {
        printf("causal prefill attention of one head (attn_prefill_head), family %s, head_dim %d; best of 3\n", s->name, hd);
        printf("| queries | live keys | live KV | colsum | ms | GFMA/s |\n|---|---|---|---|---|---|\n");
        for (int i = 0; i < npre; i++)
            for (int c = 0; c < 2; c++)
                if (pre[i] > 0 && pre[i] <= 1 << 16 && live >= 0) bench_prefill(s, pre[i], live, hd, dt, c);
        return 0;
    }
    printf("decode attention kernels, family %s, KV %s, head_dim %d; GFMA/s from the caches (best of 5)\n", s->name,
           dtype_name(dt), hd);
    printf("| G | keys | scores head by head | dots_group | attn_decode_scores | softmax µs | values | µs per KV group |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (int a = 0; a < nG; a++)
        for (int b = 0; b < nn; b++) {
            const int G = Gs[a], n = ns[b], stride = n + 8;
            if (G < 1 || G > 64 || n < 1 || n > 1 << 20) continue;
            const size_t es = dt == DT_F32 ? 4 : 2, ne = (size_t)n * hd;
            uint8_t *K = malloc(ne * es), *V = malloc(ne * es);
            float *q = malloc(sizeof(float) * G * hd), *probs = malloc(sizeof(float) * G * stride),
                  *out = malloc(sizeof(float) * G * hd);
            if (!K || !V || !q || !probs || !out) {
                fprintf(stderr, "bench_attn: out of memory\n");
                return 1;
            }
            unsigned x = 12345;
            for (size_t i = 0; i < ne; i++) {
                float kv[2];
                for (int t = 0; t < 2; t++) {
                    x = x * 1103515245u + 12345u;
                    kv[t] = ((x >> 9) & 0xffff) / 65536.0f - 0.5f;
                }
                if (dt == DT_F32) {
                    ((float *)K)[i] = kv[0];
                    ((float *)V)[i] = kv[1];
                } else {
                    ((uint16_t *)K)[i] = dt == DT_F16 ? f32_to_f16(kv[0]) : f32_to_bf16(kv[0]);
                    ((uint16_t *)V)[i] = dt == DT_F16 ? f32_to_f16(kv[1]) : f32_to_bf16(kv[1]);
                }
            }
            for (int i = 0; i < G * hd; i++) q[i] = (float)((i * 37) % 101) / 101.0f - 0.5f;
            double t[N_PH];
            for (int ph = 0; ph < N_PH; ph++)
                t[ph] = ph == PH_GROUP && !s->dots_group ? 0 : time_phase(ph, s, G, n, hd, dt, q, K, V, probs, stride, out, t_s);
            const double fma = (double)G * n * hd / 1e9;
            char grp[32] = "n/a";
            if (s->dots_group) snprintf(grp, sizeof grp, "%.1f", fma / t[PH_GROUP]);
            printf("| %d | %d | %.1f | %s | %.1f | %.3f | %.1f | %.2f |\n", G, n, fma / t[PH_HEADS], grp, fma / t[PH_SCORES],
                   t[PH_SOFTMAX] * 1e6, fma / t[PH_VALUES], (t[PH_SCORES] + t[PH_SOFTMAX] + t[PH_VALUES]) * 1e6);
            free(K);
            free(V);
            free(q);
            free(probs);
            free(out);
        }
    return 0;
}
