/* generate.c — the model of a sweep (loaded once) and greedy generation under a policy: the
 * same prefill + decode loop and KV accounting as llm-run's main.c (README "Use"). */
#include "eval/runner.h"
#include "eval/util.h"
#include "kernels/kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

eval_model *eval_model_load(const char *dir, int threads, char *err, size_t errlen)
{
    eval_model *m = calloc(1, sizeof *m);
    if (!m) {
        eval_seterr(err, errlen, "out of memory");
        return NULL;
    }
    m->threads = threads > 0 ? threads : cpu_num_cores();
    if (model_load(dir, &m->w, err, errlen) != 0 || model_make_resident(&m->w, err, errlen) != 0) goto fail;
    char path[1200];
    snprintf(path, sizeof path, "%s/tokenizer.model", dir);
    m->tok = tokenizer_load(path, err, errlen);
    if (!m->tok) goto fail;
    if (tokenizer_vocab_size(m->tok) > m->w.cfg.vocab_size) {
        eval_seterr(err, errlen, "%s: %d pieces, but config.json says vocab_size %d", path,
                    tokenizer_vocab_size(m->tok), m->w.cfg.vocab_size);
        goto fail;
    }
    m->dec = tok_decoder_new(m->tok);
    if (!m->dec) {
        eval_seterr(err, errlen, "out of memory");
        goto fail;
    }
    cpu_set_threads(m->threads);
    return m;
fail:
    eval_model_free(m);
    return NULL;
}

void eval_model_free(eval_model *m)
{
    if (!m) return;
    tok_decoder_free(m->dec);
    tokenizer_free(m->tok);
    model_free(&m->w);
    free(m);
}

int eval_model_context(const eval_model *m) { return m->w.cfg.max_position_embeddings; }
int eval_model_vocab(const eval_model *m) { return m->w.cfg.vocab_size; }
int eval_model_bos(const eval_model *m) { return m->w.cfg.bos_token_id; }

int eval_tokenize(const eval_model *m, const char *text, int bos, int **ids, int *n, char *err,
                  size_t errlen)
{
    int *raw = NULL, nr = 0;
    *ids = NULL;
    *n = 0;
    if (tokenizer_encode(m->tok, text, &raw, &nr, err, errlen) != 0) return -1;
    if (!bos) {
        *ids = raw;
        *n = nr;
        return 0;
    }
    int *v = malloc(((size_t)nr + 1) * sizeof *v);
    if (!v) {
        free(raw);
        eval_seterr(err, errlen, "out of memory");
        return -1;
    }
    v[0] = m->w.cfg.bos_token_id;
    memcpy(v + 1, raw, (size_t)nr * sizeof *v);
    free(raw);
    *ids = v;
    *n = nr + 1;
    return 0;
}

int eval_kv_init(eval_model *m, kv_cache *kv, const eval_policy_cfg *pc, int n_prompt, int max_new,
                 char *err, size_t errlen)
{
    policy_params pp;
    memset(&pp, 0, sizeof pp);
    pp.budget = pc->budget;
    pp.rope_shifted = pc->rope_shifted;
    pp.budget_ref_prompt = pc->budget_ref_prompt;
    pp.seed = pc->seed;
    const model_config *c = &m->w.cfg;
    memset(kv, 0, sizeof *kv);
    return kv_init(kv, pc->ops, &pp, c->n_layers, c->n_kv_heads, c->n_heads, c->head_dim,
                   n_prompt, max_new, err, errlen);
}

void eval_kv_report(const kv_cache *kv, int full_tokens, double full_avg_tokens, eval_kv_stats *s)
{
    size_t per_tok = kv_bytes_per_token(kv);
    int n_lh = kv->n_layers * kv->n_kv_heads;
    s->capacity = kv->cap[0];
    s->peak_bytes = kv->live_peak / n_lh * (double)per_tok;
    s->avg_bytes = (kv->live_samples ? kv->live_sum / kv->live_samples : 0) * (double)per_tok;
    s->full_peak_bytes = (double)full_tokens * per_tok;
    s->full_avg_bytes = full_avg_tokens * per_tok;
    s->evictions = (long long)kv->evictions;
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
    int rc = -1;
    int chunk = pc->prefill_chunk > 0 && pc->prefill_chunk < n_prompt ? pc->prefill_chunk : n_prompt;
    if (eval_kv_init(m, &kv, pc, n_prompt, max_new, err, errlen) != 0) return -1;
    if (engine_init(&eng, &m->w, &kv, chunk, m->threads, err, errlen) != 0) goto done;
    if (sampler_init(&smp, cfg->vocab_size, 0.0f, 1.0f, 0, pc->seed) != 0) goto oom;
    size_t cap = 1024, len = 0;
    r->text = malloc(cap);
    if (!r->text) goto oom;
    r->text[0] = '\0';

    double t0 = eval_now_s();
    for (int off = 0; off < n_prompt; off += chunk) {
        int k = n_prompt - off < chunk ? n_prompt - off : chunk;
        if (engine_prefill(&eng, tokens + off, k, off, NULL, err, errlen) != 0) goto done;
    }
    r->prefill_ms = (eval_now_s() - t0) * 1e3;

    tok_decoder_reset(m->dec, tokens[n_prompt - 1]);
    char piece[TOK_DECODER_BUF];
    int n_steps = 0;
    double t1 = eval_now_s();
    for (int pos = n_prompt; r->n_gen < max_new; pos++) {
        int next = sampler_sample(&smp, eng.logits);
        if (next == cfg->eos_token_id || next == cfg->bos_token_id) {
            r->stop = "eos";
            break;
        }
        r->n_gen++;
        int k = tok_decoder_push(m->dec, next, piece, sizeof piece);
        if (k > 0) {
            if (len + (size_t)k + 1 > cap) {
                char *nt = realloc(r->text, cap = 2 * cap + (size_t)k);
                if (!nt) goto oom;
                r->text = nt;
            }
            memcpy(r->text + len, piece, (size_t)k);
            len += (size_t)k;
            r->text[len] = '\0';
            if (stop) {
                char *hit = strstr(r->text, stop);
                if (hit) {
                    *hit = '\0';
                    len = (size_t)(hit - r->text);
                    r->stop = "stop";
                    break;
                }
            }
        }
        if (r->n_gen == max_new) break;
        if (engine_decode(&eng, next, pos, err, errlen) != 0) goto done;
        n_steps++;
    }
    if (strcmp(r->stop, "stop")) {
        int k = tok_decoder_flush(m->dec, piece, sizeof piece);
        if (k > 0 && len + (size_t)k + 1 <= cap) {
            memcpy(r->text + len, piece, (size_t)k);
            len += (size_t)k;
            r->text[len] = '\0';
        }
    }
    r->decode_ms = (eval_now_s() - t1) * 1e3;
    eval_kv_report(&kv, n_prompt + n_steps, n_prompt + n_steps / 2.0, &r->kv);
    rc = 0;
    goto done;
oom:
    eval_seterr(err, errlen, "out of memory");
done:
    if (rc != 0) {
        free(r->text);
        r->text = NULL;
    }
    sampler_free(&smp);
    engine_free(&eng);
    kv_free(&kv);
    return rc;
}
