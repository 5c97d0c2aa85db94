/* sweep_lines.c — the lines of OUT/results.jsonl: their common head, the task metrics of a
 * generated text (a new task adds its metrics here), the KV statistics, appending a line, and
 * --rescore (the metrics of a finished folder recomputed from its outputs). */
#include "eval/sweep.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void sweep_add_kv(cJSON *j, const eval_kv_stats *kv)
{
    cJSON *k = cJSON_AddObjectToObject(j, "kv");
    cJSON_AddNumberToObject(k, "capacity", kv->capacity);
    cJSON_AddNumberToObject(k, "peak_bytes", kv->peak_bytes);
    cJSON_AddNumberToObject(k, "avg_bytes", kv->avg_bytes);
    cJSON_AddNumberToObject(k, "full_peak_bytes", kv->full_peak_bytes);
    cJSON_AddNumberToObject(k, "full_avg_bytes", kv->full_avg_bytes);
    cJSON_AddNumberToObject(k, "evictions", (double)kv->evictions);
}

/* Lowercased, stripped copy (BUZZ's commented-out scorer: strip().lower() equality). */
static char *strip_lower(const char *s)
{
    while (*s && isspace((unsigned char)*s)) s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) n--;
    char *d = malloc(n + 1);
    if (!d) return NULL;
    for (size_t i = 0; i < n; i++) d[i] = (char)tolower((unsigned char)s[i]);
    d[n] = '\0';
    return d;
}

/* The task metrics of one generated text. */
int sweep_gen_metrics(cJSON *mt, eval_task task, const eval_example *ex, const char *out, char *err,
                      size_t errlen)
{
    if (task == EVAL_TASK_LITM) {
        cJSON_AddNumberToObject(mt, "em", em_best_subspan(out, (const char *const *)ex->answers, ex->n_answers));
        char *a = strip_lower(out), *b = strip_lower(ex->answers[0]);
        if (!a || !b) {
            free(a);
            free(b);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        cJSON_AddNumberToObject(mt, "em_strict", !strcmp(a, b));
        free(a);
        free(b);
        return 0;
    }
    rouge_scores g, p;
    if (rouge_pair(ex->reference, out, ROUGE_IMPL_GOOGLE, 1, &g, err, errlen) != 0) return -1;
    cJSON_AddNumberToObject(mt, "rouge1", g.rouge1.f);
    cJSON_AddNumberToObject(mt, "rouge2", g.rouge2.f);
    cJSON_AddNumberToObject(mt, "rougeL", g.rougeL.f);
    cJSON_AddNumberToObject(mt, "rougeLsum", g.rougeLsum.f);
    /* pltrdy raises on an empty hypothesis (zero sentences); the papers' loops would crash: score 0 */
    char perr[256] = "";
    if (rouge_pair(ex->reference, out, ROUGE_IMPL_PLTRDY, 0, &p, perr, sizeof perr) != 0) memset(&p, 0, sizeof p);
    cJSON_AddNumberToObject(mt, "pltrdy_rouge1", p.rouge1.f);
    cJSON_AddNumberToObject(mt, "pltrdy_rouge2", p.rouge2.f);
    cJSON_AddNumberToObject(mt, "pltrdy_rougeL", p.rougeL.f);
    return 0;
}

cJSON *sweep_line_head(const eval_opts *o, const work_item *w, const char *policy, double budget)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "task", eval_task_name(o->task));
    cJSON_AddStringToObject(j, "id", w->id);
    cJSON_AddNumberToObject(j, "idx", w->idx);
    cJSON_AddStringToObject(j, "policy", policy);
    cJSON_AddNumberToObject(j, "budget", budget);
    cJSON_AddStringToObject(j, "rope", o->rope_shifted ? "shifted" : "absolute");
    if (!eval_task_is_ppl(o->task))
        cJSON_AddStringToObject(j, "question_position", o->question_first ? "first" : "last");
    if (eval_task_is_synthetic(o->task)) {
        cJSON_AddNumberToObject(j, "depth", w->depth);
        cJSON_AddNumberToObject(j, "length", w->length);
        cJSON_AddNumberToObject(j, "sample", w->sample);
    }
    return j;
}

void sweep_add_spans(cJSON *j, const span_set *sp)
{
    if (!sp || sp->n == 0) return;
    cJSON *o = cJSON_AddObjectToObject(j, "spans");
    for (int s = 0; s < sp->n; s++) {
        if (sp->tok[s][0] < 0) continue;
        cJSON_AddItemToObject(o, sp->name[s], cJSON_CreateIntArray(sp->tok[s], 2));
    }
}

void sweep_passkey_metrics(cJSON *mt, const char *key, const char *out)
{
    cJSON_AddNumberToObject(mt, "acc", eval_passkey_correct(out, key));
}

/* Appends j as a line; 0, or -1 after printing the error. */
int sweep_emit(eval_results *res, cJSON *j, const char *key)
{
    char err[LLM_ERR_LEN];
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!s) {
        fprintf(stderr, "llm-run eval: out of memory\n");
        return -1;
    }
    int rc = eval_results_append(res, key, s, err, sizeof err);
    free(s);
    if (rc) fprintf(stderr, "%sllm-run eval: %s\n", isatty(2) ? "\n" : "", err);
    return rc;
}

/* --rescore: the metrics of every generation line of DIR/results.jsonl recomputed from its
 * "output" and the example of the same id in --data; the file is replaced atomically. */
int sweep_rescore(const eval_opts *o, const char *dir, char *err, size_t errlen)
{
    eval_example *ex = NULL;
    int n_ex = 0, rc = -1, n_lines = 0, n_done = 0;
    char **lines = NULL;
    char path[PATH_MAX + 32], tmp[PATH_MAX + 48];
    FILE *f = NULL;
    if (eval_task_is_ppl(o->task) || eval_task_is_synthetic(o->task)) {
        snprintf(err, errlen, "--rescore: %s: its metrics need the model or the generated prompts; rerun it", eval_task_name(o->task));
        return -1;
    }
    if (eval_load_examples(o->task, o->data, &ex, &n_ex, err, errlen) != 0) return -1;
    snprintf(path, sizeof path, "%s/results.jsonl", dir);
    snprintf(tmp, sizeof tmp, "%s/.results.jsonl.rescore.tmp", dir);
    if (eval_read_lines(path, &lines, &n_lines, err, errlen) != 0) goto done;
    f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, errlen, "%.400s: cannot write: %s", tmp, strerror(errno));
        goto done;
    }
    for (int i = 0; i < n_lines; i++) {
        cJSON *j = cJSON_Parse(lines[i]);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
        const cJSON *out = cJSON_GetObjectItemCaseSensitive(j, "output");
        const cJSON *task = cJSON_GetObjectItemCaseSensitive(j, "task");
        if (cJSON_IsString(id) && cJSON_IsString(out) && cJSON_IsString(task) &&
            !strcmp(task->valuestring, eval_task_name(o->task))) {
            int k = 0;
            while (k < n_ex && strcmp(ex[k].id, id->valuestring)) k++;
            if (k == n_ex) {
                snprintf(err, errlen, "%.200s: line %d: id '%.60s' is not in %.200s", path, i + 1, id->valuestring, o->data);
                cJSON_Delete(j);
                goto done;
            }
            cJSON *mt = cJSON_CreateObject();
            if (sweep_gen_metrics(mt, o->task, &ex[k], out->valuestring, err, errlen) != 0) {
                cJSON_Delete(mt);
                cJSON_Delete(j);
                goto done;
            }
            cJSON_ReplaceItemInObjectCaseSensitive(j, "metrics", mt);
            n_done++;
        }
        char *s = j ? cJSON_PrintUnformatted(j) : NULL;
        cJSON_Delete(j);
        int bad = !s || fprintf(f, "%s\n", s) < 0;
        free(s);
        if (bad) {
            snprintf(err, errlen, "%.400s: write failed: %s", tmp, strerror(errno));
            goto done;
        }
    }
    if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0) {
        f = NULL;
        snprintf(err, errlen, "%.400s: write failed: %s", tmp, strerror(errno));
        goto done;
    }
    f = NULL;
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "%.400s: cannot replace: %s", path, strerror(errno));
        goto done;
    }
    fprintf(stderr, "llm-run eval: rescored %d of %d lines in %s\n", n_done, n_lines, path);
    rc = 0;
done:
    if (f) {
        fclose(f);
        unlink(tmp);
    }
    for (int i = 0; i < n_lines; i++) free(lines[i]);
    free(lines);
    eval_examples_free(ex, n_ex);
    return rc;
}
