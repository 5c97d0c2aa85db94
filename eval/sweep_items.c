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

/* Renders and tokenizes ex with every document cut to the largest word count whose prompt fits
 * limit tokens (binary search; the cut is recorded). */
int sweep_fit_prompt(eval_model *m, const eval_prompt_style *ps, eval_task task, const eval_example *ex,
                     int limit, int fit_skip, work_item *w, char *err, size_t errlen)
{
    int trunc;
    char *text = eval_prompt_render(ps, task, ex, -1, &trunc);
    if (!text) {
        snprintf(err, errlen, "prompt style %s: no template for task %s", ps->name, eval_task_name(task));
        return -1;
    }
    int *ids, n;
    int rc = eval_tokenize(m, text, ps->bos, &ids, &n, err, errlen);
    free(text);
    if (rc) return -1;
    if (n <= limit) {
        w->tokens = ids;
        w->n_tokens = n;
        return 0;
    }
    free(ids);
    if (fit_skip) {
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
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        text = eval_prompt_render(ps, task, ex, mid, &trunc);
        if (!text) {
            snprintf(err, errlen, "out of memory");
            free(best_ids);
            return -1;
        }
        rc = eval_tokenize(m, text, ps->bos, &ids, &n, err, errlen);
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
