/* model/sampler_rng.c — the sampler's random draws as llama.cpp makes them, so that a --seed
 * gives llama-cli's tokens wherever the candidates agree: each of llama.cpp's random samplers
 * (dist, XTC, Mirostat 1 and 2.0, adaptive-p; src/llama-sampler.cpp) owns a std::mt19937 seeded
 * with the run's 32-bit seed, and draws through libstdc++'s std::uniform_real_distribution
 * (generate_canonical: two 32-bit outputs for a double, one for a float) or
 * std::discrete_distribution (Mirostat, adaptive-p). Checked against llama.cpp's own picks in
 * tests/fixtures/sampler/llamacpp.txt ("draw" lines, scripts/make_sampler_fixtures.sh).
 *
 * mt19937: Matsumoto & Nishimura 1998, the parameters of C++11 [rand.predef] (its 10000th
 * output from the default seed 5489 is 4123659995, checked in tests/test_sampler.c). */
#include "model/internal.h"

#include <math.h>

void sampler_mt_seed(sampler_mt *g, uint32_t seed)
{
    g->mt[0] = seed;
    for (int i = 1; i < 624; i++) g->mt[i] = 1812433253u * (g->mt[i - 1] ^ (g->mt[i - 1] >> 30)) + (uint32_t)i;
    g->i = 624;
}

uint32_t sampler_mt_next(sampler_mt *g)
{
    if (g->i >= 624) {
        for (int k = 0; k < 624; k++) {
            const uint32_t y = (g->mt[k] & 0x80000000u) | (g->mt[(k + 1) % 624] & 0x7fffffffu);
            g->mt[k] = g->mt[(k + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
        }
        g->i = 0;
    }
    uint32_t y = g->mt[g->i++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    return y ^ (y >> 18);
}

/* libstdc++'s generate_canonical<double, 53> over a 32-bit engine: (a + b·2^32) / 2^64 in double
 * arithmetic (the sum rounds to 53 bits), 1 mapped to the largest double below it. */
double sampler_mt_double(sampler_mt *g)
{
    double sum = (double)sampler_mt_next(g);
    sum += (double)sampler_mt_next(g) * 4294967296.0;
    const double r = sum / 18446744073709551616.0;
    return r >= 1.0 ? nextafter(1.0, 0.0) : r;
}

/* generate_canonical<float, 24>: one output, (float)a / 2^32, 1 mapped below 1. */
float sampler_mt_float(sampler_mt *g)
{
    const float r = (float)sampler_mt_next(g) / 4294967296.0f;
    return r >= 1.0f ? nextafterf(1.0f, 0.0f) : r;
}

int sampler_draw_dist(sampler *s)
{
    const sampler_cand *c = s->buf;
    const int n = s->n;
    if (n == 1) {   /* llama.cpp draws anyway, to keep its stream aligned */
        (void)sampler_mt_double(&s->rng);
        return 0;
    }
    sampler_cand *w = s->tmp;   /* the weights exp(logit − max), kept for the second pass */
    float mx = c[0].logit;
    if (!s->sorted)
        for (int i = 1; i < n; i++) mx = fmaxf(mx, c[i].logit);
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)(w[i].p = expf(c[i].logit - mx));
    const double target = sum * sampler_mt_double(&s->rng);
    double run = 0.0;
    for (int i = 0; i < n; i++) {
        run += (double)w[i].p;
        if (run >= target) return i;
    }
    return n - 1;
}

int sampler_draw_discrete(sampler *s)
{
    const sampler_cand *c = s->buf;
    const int n = s->n;
    if (n < 2) return 0;   /* libstdc++ keeps no table for one weight and draws nothing */
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)c[i].p;
    const double u = sampler_mt_double(&s->rng);
    /* the table: partial sums of p_i / sum, its last entry set to 1; lower_bound of u */
    double cum = 0.0;
    for (int i = 0; i < n - 1; i++) {
        cum += (double)c[i].p / sum;
        if (!(cum < u)) return i;
    }
    return n - 1;
}
