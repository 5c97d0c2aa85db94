/* sweep_items.c — the work items of a sweep: generation prompts rendered, tokenized and fitted
 * to the model's context (documents cut by word count, or the example skipped: --fit), and the
 * perplexity windows of a token stream. */
#include "eval/sweep.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int count_words(const char *s)
{
    int n = 0;
    while (s && *s) {
        while (*s && isspace((unsigned char)*s)) s++;
        if (!*s) break;
        n++;
        while (*s && !isspace((unsigned char)*s)) s++;
    }
    return n;
}

int sweep_encode(eval_model *m, const eval_opts *o, const eval_prompt_style *ps, const char *text,
                 span_set *sp, int **ids, int *n, char *err, size_t errlen)
{
    int content[2] = {0, 0};
    if (o->chat == 1) {
        eval_prompt_in in = {.text = text, .text_len = strlen(text), .chat = 1, .content_is_data = 1,
                             .system = o->system, .chat_template = o->chat_template};
        if (eval_encode_ex(m, &in, ids, n, content, err, errlen) != 0) return -1;
    } else {
        int bos = ps ? ps->bos : eval_model_add_bos(m);
        if (eval_tokenize(m, text, bos, ids, n, err, errlen) != 0) return -1;
        content[0] = bos ? 1 : 0;
        content[1] = *n;
    }
    if (!sp || sp->n == 0) return 0;
    int k = content[1] - content[0];
    int *starts = malloc(sizeof *starts * (size_t)(k + 1));
    if (!starts || eval_token_offsets(m, *ids, content[0], content[1], starts) != 0) {
        free(starts);
        for (int s = 0; s < sp->n; s++) sp->tok[s][0] = sp->tok[s][1] = -1;
        return 0;   /* spans are for plots: none rather than a failed run */
    }
    for (int s = 0; s < sp->n; s++) {
        int a = sp->ch[s][0], b = sp->ch[s][1], t0 = k, t1 = 0;
        for (int i = 0; i < k; i++) {
            if (starts[i + 1] > a && i < t0) t0 = i;      /* first token ending after a */
            if (starts[i] < b) t1 = i + 1;                /* last token starting before b */
        }
        if (t1 < t0) t1 = t0;
        sp->tok[s][0] = content[0] + t0;
        sp->tok[s][1] = content[0] + t1;
    }
    free(starts);
    return 0;
}

/* Renders and encodes ex with every document cut to the largest word count whose prompt fits
 * limit tokens (binary search; the cut is recorded). */
int sweep_fit_prompt(eval_model *m, const eval_opts *o, const eval_prompt_style *ps, const eval_example *ex,
                     int variant, int limit, work_item *w, char *err, size_t errlen)
{
    eval_task task = o->task;
    int trunc, pv = variant ? EVAL_PROMPT_CLOSEDBOOK : o->question_first ? EVAL_PROMPT_FIRST : EVAL_PROMPT_LAST;
    eval_example empty;
    if (variant && task != EVAL_TASK_LITM) {   /* summaries: the same prompt with an empty article */
        empty = *ex;
        empty.document = "";
        ex = &empty;
        pv = o->question_first ? EVAL_PROMPT_FIRST : EVAL_PROMPT_LAST;
    }
    span_set *sp = &w->spans;
    char *text = eval_prompt_render_ex(ps, task, ex, -1, pv, &trunc, sp);
    if (!text) {
        snprintf(err, errlen, "prompt style %s: no %stemplate for task %s", ps->name,
                 pv == EVAL_PROMPT_FIRST ? "templates_first (--question-position first) " :
                 pv == EVAL_PROMPT_CLOSEDBOOK ? "templates_closedbook (--baseline) " : "", eval_task_name(task));
        return -1;
    }
    int *ids, n;
    int rc = sweep_encode(m, o, ps, text, sp, &ids, &n, err, errlen);
    free(text);
    if (rc) return -1;
    if (n <= limit) {
        w->tokens = ids;
        w->n_tokens = n;
        return 0;
    }
    free(ids);
    if (o->fit_skip) {
        w->skip = 1;
        snprintf(w->skip_reason, sizeof w->skip_reason, "prompt of %d tokens exceeds %d (context - max_new + 1)", n, limit);
        return 0;
    }
    int hi = count_words(ex->document);
    for (int k = 0; k < ex->n_docs; k++) {
        int c = count_words(ex->docs[k].text);
        if (c > hi) hi = c;
    }
    int lo = 0, best = -1;
    int *best_ids = NULL, best_n = 0;
    span_set best_sp = {0};
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        text = eval_prompt_render_ex(ps, task, ex, mid, pv, &trunc, sp);
        if (!text) {
            snprintf(err, errlen, "out of memory");
            free(best_ids);
            return -1;
        }
        rc = sweep_encode(m, o, ps, text, sp, &ids, &n, err, errlen);
        free(text);
        if (rc) {
            free(best_ids);
            return -1;
        }
        if (n <= limit) {
            free(best_ids);
            best_ids = ids;
            best_n = n;
            best = mid;
            best_sp = *sp;
            lo = mid + 1;
        } else {
            free(ids);
            hi = mid - 1;
        }
    }
    if (best < 0) {
        w->skip = 1;
        snprintf(w->skip_reason, sizeof w->skip_reason, "prompt exceeds %d tokens even without its documents", limit);
        return 0;
    }
    w->tokens = best_ids;
    w->n_tokens = best_n;
    w->truncated = 1;
    w->words_kept = best;
    *sp = best_sp;
    return 0;
}

int sweep_passkey_items(const eval_opts *o, work_item **items, int *n_items, char *err, size_t errlen)
{
    int n = o->n_depths * o->n_lengths * o->samples;
    work_item *v = calloc((size_t)(n ? n : 1), sizeof *v);
    if (!v) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int k = 0;
    /* the order: length, depth, sample (so --limit and shards take whole cells first) */
    for (int li = 0; li < o->n_lengths; li++)
        for (int di = 0; di < o->n_depths; di++)
            for (int s = 0; s < o->samples; s++) {
                work_item *w = &v[k];
                snprintf(w->id, sizeof w->id, "d%g_L%d_s%d", o->depths[di], o->lengths[li], s);
                w->idx = k++;
                w->depth = o->depths[di];
                w->length = o->lengths[li];
                w->sample = s;
            }
    *items = v;
    *n_items = n;
    return 0;
}

int sweep_passkey_fit(eval_model *m, const eval_opts *o, const char *text, int no_needle, int limit,
                      work_item *w, char *err, size_t errlen)
{
    /* the seed of a prompt: the sweep's --seed, the cell and the sample (not the position in the
     * grid, so adding depths or lengths keeps every prompt) */
    uint64_t seed = o->seed * 0x100000001B3ull ^ ((uint64_t)w->length << 32) ^
                    ((uint64_t)(w->depth * 1e6) << 8) ^ (uint64_t)w->sample;
    eval_passkey_spec spec = {.niah = o->task == EVAL_TASK_NIAH, .depth = w->depth,
                              .question_first = o->question_first, .no_needle = no_needle,
                              .seed = seed, .text = text};
    int cap = w->length < limit ? w->length : limit;
    /* units: at most ~ the token budget (a unit is at least one token) */
    int lo = 0, hi = cap, best = -1;
    int *best_ids = NULL, best_n = 0;
    span_set best_sp = {0};
    char best_key[8] = "";
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        eval_passkey_prompt pk;
        if (eval_passkey_render(&spec, mid, &pk) != 0) {
            snprintf(err, errlen, "out of memory");
            free(best_ids);
            return -1;
        }
        span_set sp = {0};
        sp.n = no_needle ? 1 : 2;
        snprintf(sp.name[0], sizeof sp.name[0], "question");
        memcpy(sp.ch[0], pk.question, sizeof pk.question);
        snprintf(sp.name[1], sizeof sp.name[1], "needle");
        memcpy(sp.ch[1], pk.needle, sizeof pk.needle);
        int *ids, n;
        int rc = sweep_encode(m, o, NULL, pk.content, &sp, &ids, &n, err, errlen);
        eval_passkey_free(&pk);
        if (rc) {
            free(best_ids);
            return -1;
        }
        if (n <= cap) {
            free(best_ids);
            best_ids = ids;
            best_n = n;
            best = mid;
            best_sp = sp;
            memcpy(best_key, pk.key, sizeof best_key);
            lo = mid + 1;
        } else {
            free(ids);
            hi = mid - 1;
        }
    }
    if (best < 0) {
        w->skip = 1;
        snprintf(w->skip_reason, sizeof w->skip_reason, "the question alone exceeds %d tokens", cap);
        return 0;
    }
    w->tokens = best_ids;
    w->n_tokens = best_n;
    w->words_kept = best;
    w->spans = best_sp;
    memcpy(w->key, best_key, sizeof w->key);
    return 0;
}

/* Perplexity windows: every row tokenized with BOS (empty rows contribute nothing), the rows
 * concatenated into one stream (BUZZ never resets the cache between rows), cut into windows of
 * `window` tokens; a last window shorter than 16 tokens is dropped. */
int sweep_ppl_windows(eval_model *m, const eval_example *ex, int n_ex, int window, int limit,
                      work_item **items, int *n_items, char *err, size_t errlen)
{
    size_t cap = 4096, n = 0;
    int *stream = malloc(cap * sizeof *stream);
    if (!stream) goto oom;
    size_t need = limit > 0 ? (size_t)limit * window : (size_t)-1;
    for (int i = 0; i < n_ex && n < need; i++) {
        if (!ex[i].document || !ex[i].document[0]) continue;
        int *ids, k;
        if (eval_tokenize(m, ex[i].document, 1, &ids, &k, err, errlen) != 0) {
            free(stream);
            return -1;
        }
        if (n + (size_t)k > cap) {
            while (n + (size_t)k > cap) cap *= 2;
            int *ns = realloc(stream, cap * sizeof *ns);
            if (!ns) {
                free(ids);
                goto oom;
            }
            stream = ns;
        }
        memcpy(stream + n, ids, (size_t)k * sizeof *ids);
        n += (size_t)k;
        free(ids);
    }
    int nw = 0;
    work_item *v = calloc(n / (size_t)window + 2, sizeof *v);
    if (!v) goto oom;
    for (size_t off = 0; off < n && (limit <= 0 || nw < limit); off += (size_t)window) {
        size_t len = n - off < (size_t)window ? n - off : (size_t)window;
        if (len < 16) break;
        work_item *w = &v[nw];
        snprintf(w->id, sizeof w->id, "w%d", nw);
        w->idx = nw;
        w->n_tokens = (int)len;
        w->tokens = malloc(len * sizeof *w->tokens);
        if (!w->tokens) {
            for (int j = 0; j < nw; j++) free(v[j].tokens);
            free(v);
            goto oom;
        }
        memcpy(w->tokens, stream + off, len * sizeof *w->tokens);
        nw++;
    }
    free(stream);
    *items = v;
    *n_items = nw;
    return 0;
oom:
    free(stream);
    snprintf(err, errlen, "out of memory");
    return -1;
}
