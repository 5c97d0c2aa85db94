/* generate.c — the model of a sweep (loaded once) and greedy generation under a policy: the
 * same prefill + decode loop and KV accounting as llm-run's main.c (README "Use"). */
#include "eval/runner.h"
#include "eval/util.h"
#include "kernels/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The largest prefill record a sweep keeps for the next runs of a prompt (eval_policy_cfg.fork). */
#define EVAL_FORK_MAX_BYTES ((size_t)1 << 30)

int eval_kv_init(eval_model *m, kv_cache *kv, const eval_policy_cfg *pc, int n_prompt, int max_new,
                 char *err, size_t errlen)
{
    policy_params pp;
    if (pc->params) memcpy(&pp, pc->params, sizeof pp);
    else memset(&pp, 0, sizeof pp);
    pp.budget = pc->budget;
    pp.budget_tokens = 0;
    pp.rope_shifted = pc->rope_shifted;
    pp.budget_ref_prompt = pc->budget_ref_prompt;
    pp.seed = pc->seed;
    pp.kv_dtype = pc->kv_dtype >= 0 ? pc->kv_dtype : (int)model_kv_dtype_default(&m->w);
    const model_config *c = &m->w.cfg;
    memset(kv, 0, sizeof *kv);
    return kv_init(kv, pc->ops, &pp, c->n_layers, c->n_kv_heads, c->n_heads, c->head_dim,
                   n_prompt, max_new, err, errlen);
}

void eval_kv_report(const kv_cache *kv, int n_prompt, int n_decode_steps, eval_kv_stats *s)
{
    kv_stats st;
    kv_stats_get(kv, n_prompt, n_decode_steps, &st);
    s->capacity = kv->cap[0];
    s->peak_bytes = st.peak_bytes;
    s->avg_bytes = st.avg_bytes;
    s->full_peak_bytes = st.full_bytes;
    s->full_avg_bytes = st.full_avg_bytes;
    s->evictions = (long long)kv->evictions;
}

/* The text of a sweep generation, and the caller's stop string. */
typedef struct {
    tok_decoder *dec;
    const char *stop;
    eval_text out;
    int stopped;
    const eval_dump *dump;   /* --dump-kept */
    const kv_cache *kv;
    int n_prompt, n_tok, dump_failed;
} gen_text;

int eval_text_push(eval_text *t, const char *s, int n)
{
    if (n <= 0) return 0;
    if (t->len + (size_t)n + 1 > t->cap) {
        size_t nc = 2 * t->cap + (size_t)n + 64;
        char *nt = realloc(t->text, nc);
        if (!nt) return -1;
        t->text = nt;
        t->cap = nc;
    }
    memcpy(t->text + t->len, s, (size_t)n);
    t->len += (size_t)n;
    t->text[t->len] = '\0';
    return 0;
}

const char *eval_text_stop(const eval_text *t, size_t added, const char *const *stops, int n)
{
    const char *first = NULL;
    for (int i = 0; i < n && t->text; i++) {
        size_t k = strlen(stops[i]);
        if (!k) continue;
        size_t back = added + k - 1, from = back < t->len ? t->len - back : 0;
        const char *hit = strstr(t->text + from, stops[i]);
        if (hit && (!first || hit < first)) first = hit;
    }
    return first;
}

/* After the prefill: the kept positions at step 0. */
static void gen_on_prefill(void *ctx, int done, int total)
{
    gen_text *t = ctx;
    if (t->dump && done == total && eval_dump_kept(t->dump, t->kv, t->n_prompt, 0) != 0) t->dump_failed = 1;
}

static int gen_on_token(void *ctx, int id, char *err, size_t errlen)
{
    gen_text *t = ctx;
    /* token k (1-based) is sampled after k - 1 decode steps */
    int steps = t->n_tok++;
    if (t->dump && steps > 0 && steps % t->dump->every == 0 &&
        eval_dump_kept(t->dump, t->kv, t->n_prompt, steps) != 0) {
        eval_seterr(err, errlen, "--dump-kept: write failed");
        return -1;
    }
    char piece[TOK_PIECE_MAX];
    const int k = tok_decoder_push(t->dec, id, piece, sizeof piece);
    if (eval_text_push(&t->out, piece, k) != 0) {
        eval_seterr(err, errlen, "out of memory");
        return -1;
    }
    const char *hit = t->stop && k > 0 ? eval_text_stop(&t->out, (size_t)k, &t->stop, 1) : NULL;
    if (!hit) return 0;
    t->out.len = (size_t)(hit - t->out.text);
    t->out.text[t->out.len] = '\0';
    t->stopped = 1;
    return 1;
}

int eval_generate(eval_model *m, const int *tokens, int n_prompt, int max_new, const char *stop,
                  const eval_policy_cfg *pc, eval_gen_result *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->n_prompt = n_prompt;
    r->stop = "length";
    const model_config *cfg = &m->w.cfg;
    kv_cache kv;
    engine eng;
    memset(&eng, 0, sizeof eng);
    sampler smp = {0};
    gen_result g;
    memset(&g, 0, sizeof g);
    gen_text t = {.dec = m->dec, .stop = stop, .out.cap = 1024, .dump = pc->dump, .kv = &kv, .n_prompt = n_prompt};
    int rc = -1;
    int chunk = pc->prefill_chunk > 0 && pc->prefill_chunk < n_prompt ? pc->prefill_chunk : n_prompt;
    if (eval_kv_init(m, &kv, pc, n_prompt, max_new, err, errlen) != 0) return -1;
    if (engine_init(&eng, &m->w, &kv, chunk, m->threads, err, errlen) != 0) goto done;
    if (sampler_init(&smp, cfg->vocab_size, 0.0f, 1.0f, 0, pc->seed) != 0) goto oom;
    if (!(t.out.text = malloc(t.out.cap))) goto oom;
    t.out.text[0] = '\0';
    tok_decoder_reset(m->dec, tokens[n_prompt - 1]);
    gen_params gp = {.max_new = max_new, .prefill_chunk = chunk, .stop_ids = m->stop_ids, .n_stop_ids = m->n_stop};
    /* a shared prefill, unless its record would be too large to keep (a 2k-token prompt takes
     * ~240 MB on SmolLM2-135M, 4k ~450 MB on Qwen2.5-0.5B) */
    if (pc->fork && (*pc->fork || prefill_record_bytes(&eng, n_prompt) <= EVAL_FORK_MAX_BYTES)) gp.fork = pc->fork;
    gen_callbacks cb = {.ctx = &t, .on_token = gen_on_token, .on_prefill = gen_on_prefill};
    if (generate(&eng, &smp, tokens, n_prompt, &gp, &cb, &g, err, errlen) != 0) goto done;
    if (t.dump_failed) {
        eval_seterr(err, errlen, "--dump-kept: write failed");
        goto done;
    }
    if (!t.stopped) {
        char piece[TOK_PIECE_MAX];
        if (eval_text_push(&t.out, piece, tok_decoder_flush(m->dec, piece, sizeof piece)) != 0) goto oom;
    }
    if (!(r->tokens = malloc(sizeof *r->tokens * (size_t)(g.n_gen + 1)))) goto oom;
    if (g.n_gen > 0) memcpy(r->tokens, g.tokens, sizeof *r->tokens * (size_t)g.n_gen);
    r->text = t.out.text;
    t.out.text = NULL;
    r->n_gen = g.n_gen;
    r->stop = g.stop;
    r->prefill_ms = g.prefill_s * 1e3;
    r->decode_ms = g.decode_s * 1e3;
    r->prefill_forked = g.prefill_replayed;
    if (r->prefill_forked) r->prefill_computed_ms = prefill_record_seconds(*pc->fork) * 1e3;
    eval_kv_report(&kv, n_prompt, g.n_decode_steps, &r->kv);
    rc = 0;
    goto done;
oom:
    eval_seterr(err, errlen, "out of memory");
done:
    free(t.out.text);
    gen_result_free(&g);
    sampler_free(&smp);
    engine_free(&eng);
    kv_free(&kv);
    return rc;
}
