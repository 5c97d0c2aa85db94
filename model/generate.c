/* generate.c — the one generation loop: prefill (in chunks, eviction in between), then sample,
 * hand the token to the caller, decode, until max_new, an end-of-generation id, the caller's
 * stop, or an interrupt. Used by `llm-run` (cli/run.c), `llm-run eval` (eval/generate.c) and
 * `compare`; text, streaming and files are the callers' business (callbacks). */
#include "model/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define fail model_fail


static int is_stop(const gen_params *p, int id) {
    for (int i = 0; i < p->n_stop_ids; i++)
        if (p->stop_ids[i] == id) return 1;
    return 0;
}

int generate(engine *e, sampler *smp, const int *prompt, int n_prompt, const gen_params *p,
             const gen_callbacks *cb, gen_result *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    r->n_prompt = n_prompt;
    r->stop = "length";
    r->stop_id = -1;
    if (n_prompt <= 0) return fail(err, errlen, "empty prompt");
    const int vocab = e->w->cfg.vocab_size;
    const int chunk = p->prefill_chunk > 0 && p->prefill_chunk < n_prompt ? p->prefill_chunk : n_prompt;
    const int want_rows = cb && cb->on_logits && p->want_prompt_logits;
    float *rows = NULL;
    if (want_rows && !(rows = malloc((size_t)chunk * vocab * sizeof *rows)))
        return fail(err, errlen, "out of memory");
    const size_t n_max = (size_t)(p->max_new > 0 ? p->max_new : 0) + 1;
    r->tokens = malloc(n_max * sizeof *r->tokens);
    r->step_ms = malloc(n_max * sizeof *r->step_ms);
    if (!r->tokens || !r->step_ms) {
        free(rows);
        gen_result_free(r);
        return fail(err, errlen, "out of memory");
    }
#define INTERRUPTED() (p->interrupted && *p->interrupted)
    int rc = -1;
    /* prefill, in chunks when asked (eviction between chunks keeps peak KV ≤ capacity + chunk) */
    double t0 = model_now_s();
    int done = 0;   /* prompt tokens already in the cache */
    if (p->fork && chunk == n_prompt && !want_rows && !INTERRUPTED() && engine_prefill_forkable(e, n_prompt)) {
        if (*p->fork && prefill_record_matches(*p->fork, e, prompt, n_prompt)) {
            if (engine_prefill_replay(e, *p->fork, prompt, n_prompt, err, errlen) != 0) goto done;
            r->prefill_replayed = 1;
            done = n_prompt;
        } else if (!*p->fork) {
            if (engine_prefill_record(e, prompt, n_prompt, p->fork, err, errlen) != 0) goto done;
            done = n_prompt;
        }
        if (done && cb && cb->on_prefill) cb->on_prefill(cb->ctx, n_prompt, n_prompt);
    }
    for (int off = done; off < n_prompt && !INTERRUPTED(); off += chunk) {
        int m = n_prompt - off < chunk ? n_prompt - off : chunk;
        if (engine_prefill(e, prompt + off, m, off, rows, err, errlen) != 0) goto done;
        if (want_rows && cb->on_logits(cb->ctx, rows, m, err, errlen) != 0) goto done;
        if (cb && cb->on_prefill) cb->on_prefill(cb->ctx, off + m, n_prompt);
    }
    r->prefill_s = model_now_s() - t0;

    for (int i = 0; i < n_prompt; i++) sampler_accept(smp, prompt[i]);   /* the penalties' window */

    /* decode: sample, hand over, forward, until a stop */
    double t1 = model_now_s();
    for (int pos = n_prompt; r->n_gen < p->max_new; pos++) {
        if (INTERRUPTED()) break;
        /* on the GPU a greedy step brings back only the chosen token (device argmax) */
        int next = e->dev && !e->want_logits && e->next >= 0 && !sampler_needs_logits(smp) ? e->next : sampler_sample(smp, e->logits);
        const int forced = p->force_ids && r->n_gen < p->n_force;
        if (forced) next = p->force_ids[r->n_gen];
        sampler_accept(smp, next);
        if (!forced && is_stop(p, next)) {
            r->stop = "eos";
            r->stop_id = next;
            break;
        }
        r->tokens[r->n_gen++] = next;
        if (cb && cb->on_token) {
            int s = cb->on_token(cb->ctx, next, err, errlen);
            if (s < 0) goto done;
            if (s > 0) {
                r->stop = "stop";
                break;
            }
        }
        if (r->n_gen == p->max_new) break;
        double ts = model_now_s();
        if (engine_decode(e, next, pos, err, errlen) != 0) goto done;
        r->step_ms[r->n_decode_steps++] = (float)((model_now_s() - ts) * 1e3);
        if (cb && cb->on_logits && cb->on_logits(cb->ctx, e->logits, 1, err, errlen) != 0) goto done;
    }
    r->decode_s = model_now_s() - t1;
    if (INTERRUPTED()) r->stop = "interrupted";
    rc = 0;
#undef INTERRUPTED
done:
    free(rows);
    return rc;
}

void gen_result_free(gen_result *r) {
    if (!r) return;
    free(r->tokens);
    free(r->step_ms);
    r->tokens = NULL;
    r->step_ms = NULL;
}

/* qsort order of floats, ascending. */
static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

double gen_step_ms_quantile(const gen_result *r, double q)
{
    int n = r->n_decode_steps;
    if (n <= 0 || !r->step_ms) return 0.0;
    float *v = malloc((size_t)n * sizeof *v);
    if (!v) return 0.0;
    memcpy(v, r->step_ms, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, cmp_float);
    double pos = q * (n - 1), lo = v[(int)pos], hi = v[(int)pos + 1 < n ? (int)pos + 1 : n - 1];
    double x = lo + (hi - lo) * (pos - (int)pos);
    free(v);
    return x;
}
