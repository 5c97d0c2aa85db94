/* attn_ref.c — the float64 reference of causal attention the kernel tests compare with
 * (tests/support/support.h, "attention reference"). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "tests/support/support.h"

void ts_attn_prefill_ref(const float *q, int qs, const float *Kl, const float *Vl, int n_live, const float *Kn,
                         int ks, const float *Vn, int vs, int n_new, int hd, float scale, double *out, double *colsum)
{
    double *p = malloc((size_t)(n_live + n_new) * sizeof *p);
    assert_non_null(p);
    for (int i = 0; i < n_new; i++) {
        int n = n_live + i + 1;
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < n; j++) {
            const float *k = j < n_live ? Kl + (size_t)j * hd : Kn + (size_t)(j - n_live) * ks;
            double s = 0;
            for (int d = 0; d < hd; d++) s += (double)q[(size_t)i * qs + d] * k[d];
            p[j] = s * scale;
            if (p[j] > mx) mx = p[j];
        }
        for (int j = 0; j < n; j++) sum += (p[j] = exp(p[j] - mx));
        for (int d = 0; d < hd; d++) out[(size_t)i * hd + d] = 0;
        for (int j = 0; j < n; j++) {
            p[j] /= sum;
            colsum[j] += p[j];
            const float *v = j < n_live ? Vl + (size_t)j * hd : Vn + (size_t)(j - n_live) * vs;
            for (int d = 0; d < hd; d++) out[(size_t)i * hd + d] += p[j] * v[d];
        }
    }
    free(p);
}
