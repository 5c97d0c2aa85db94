/* data.c — readers for the shared data sets (../shared/docs/EVAL.md, each ../shared/data folder's SOURCES.md):
 * one example per line of a jsonl (or jsonl.gz, read through zlib) or text file. */
#include "eval/eval.h"
#include "eval/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

static const char *const TASK_NAMES[EVAL_TASK_COUNT] = {"xsum", "cnndm", "litm", "wikitext",
                                                        "tinystories", "passkey", "niah"};

const char *eval_task_name(eval_task t)
{
    return t >= 0 && t < EVAL_TASK_COUNT ? TASK_NAMES[t] : "?";
}

int eval_task_from_name(const char *name)
{
    for (int i = 0; i < EVAL_TASK_COUNT; i++)
        if (!strcmp(name, TASK_NAMES[i])) return i;
    return -1;
}

int eval_task_is_ppl(eval_task t) { return t == EVAL_TASK_WIKITEXT || t == EVAL_TASK_TINYSTORIES; }
int eval_task_is_synthetic(eval_task t) { return t == EVAL_TASK_PASSKEY || t == EVAL_TASK_NIAH; }

void eval_example_free(eval_example *ex)
{
    if (!ex) return;
    free(ex->document);
    free(ex->reference);
    free(ex->question);
    for (int i = 0; i < ex->n_docs; i++) {
        free(ex->docs[i].title);
        free(ex->docs[i].text);
    }
    free(ex->docs);
    for (int i = 0; i < ex->n_answers; i++) free(ex->answers[i]);
    free(ex->answers);
    memset(ex, 0, sizeof *ex);
    ex->gold_index = -1;
}

/* A string field, or NULL (absent or not a string). */
static const char *str_field(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static char *dupn(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* H2O's HELM request: "###\nArticle: " DOC "\n\nSummarize the above article in ..." */
static char *helm_document(const char *req)
{
    static const char *pre = "###\nArticle: ";
    const char *s = req;
    if (!strncmp(s, pre, strlen(pre))) s += strlen(pre);
    const char *e = strstr(s, "\n\nSummarize the above article");
    return dupn(s, e ? (size_t)(e - s) : strlen(s));
}

/* The record's id: "id" or "idx" (string or number) when present. */
static void record_id(const cJSON *o, char *id, size_t idlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "id");
    if (!v) v = cJSON_GetObjectItemCaseSensitive(o, "idx");
    if (cJSON_IsString(v) && v->valuestring[0]) snprintf(id, idlen, "%s", v->valuestring);
    else if (cJSON_IsNumber(v)) snprintf(id, idlen, "%.0f", v->valuedouble);
    else id[0] = '\0';
}

int eval_parse_example(eval_task task, const char *line, size_t len, eval_example *out,
                       char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->gold_index = -1;
    if (task < 0 || task >= EVAL_TASK_COUNT) {
        eval_seterr(err, errlen, "unknown task %d", (int)task);
        return -1;
    }
    const char *tn = TASK_NAMES[task];
    /* perplexity tasks take raw text lines too */
    size_t k = 0;
    while (k < len && (line[k] == ' ' || line[k] == '\t')) k++;
    if (eval_task_is_ppl(task) && (k == len || line[k] != '{')) {
        if (memchr(line, '\0', len)) {
            eval_seterr(err, errlen, "%s: NUL byte in a text line", tn);
            return -1;
        }
        out->document = dupn(line, len);
        if (!out->document) goto oom;
        return 0;
    }
    cJSON *o = cJSON_ParseWithLength(line, len);
    if (!o) {
        eval_seterr(err, errlen, "%s: not valid JSON", tn);
        return -1;
    }
    if (!cJSON_IsObject(o)) {
        eval_seterr(err, errlen, "%s: expected a JSON object", tn);
        cJSON_Delete(o);
        return -1;
    }
    record_id(o, out->id, sizeof out->id);
    const char *missing = NULL;
    switch (task) {
    case EVAL_TASK_XSUM:
    case EVAL_TASK_CNNDM: {
        const char *doc = str_field(o, "document"), *art = str_field(o, "article");
        const char *ref = str_field(o, "summary");
        if (!ref) ref = str_field(o, "summary_gt");
        if (!ref) ref = str_field(o, "highlights");
        if (!doc && !art) { missing = "\"document\" or \"article\""; break; }
        if (!ref) { missing = "\"summary\", \"summary_gt\" or \"highlights\""; break; }
        out->document = doc ? strdup(doc) : helm_document(art);
        out->reference = strdup(ref);
        if (!out->document || !out->reference) goto oom_json;
        break;
    }
    case EVAL_TASK_LITM: {
        const char *q = str_field(o, "question");
        const cJSON *ans = cJSON_GetObjectItemCaseSensitive(o, "answers");
        const cJSON *ctxs = cJSON_GetObjectItemCaseSensitive(o, "ctxs");
        if (!q) { missing = "\"question\" (a string)"; break; }
        if (!cJSON_IsArray(ans) || cJSON_GetArraySize(ans) == 0) { missing = "\"answers\" (a non-empty list)"; break; }
        if (!cJSON_IsArray(ctxs)) { missing = "\"ctxs\" (a list)"; break; }
        out->question = strdup(q);
        if (!out->question) goto oom_json;
        int na = cJSON_GetArraySize(ans), nd = cJSON_GetArraySize(ctxs);
        out->answers = calloc((size_t)na, sizeof *out->answers);
        out->docs = calloc(nd ? (size_t)nd : 1, sizeof *out->docs);
        if (!out->answers || !out->docs) goto oom_json;
        const cJSON *it;
        cJSON_ArrayForEach(it, ans) {
            if (!cJSON_IsString(it)) {
                eval_seterr(err, errlen, "litm: \"answers\" is not a list of strings");
                goto fail_json;
            }
            if (!(out->answers[out->n_answers++] = strdup(it->valuestring))) goto oom_json;
        }
        cJSON_ArrayForEach(it, ctxs) {
            const char *t = str_field(it, "title"), *x = str_field(it, "text");
            if (!cJSON_IsObject(it) || !t || !x) {
                eval_seterr(err, errlen, "litm: ctxs[%d] needs string \"title\" and \"text\"",
                            out->n_docs);
                goto fail_json;
            }
            eval_doc *d = &out->docs[out->n_docs++];
            d->title = strdup(t);
            d->text = strdup(x);
            if (!d->title || !d->text) goto oom_json;
            if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "isgold")) && out->gold_index < 0)
                out->gold_index = out->n_docs - 1;
        }
        break;
    }
    case EVAL_TASK_PASSKEY:
    case EVAL_TASK_NIAH:
        missing = "nothing: passkey and niah examples are generated (no data file records)";
        break;
    default: { /* wikitext, tinystories as {"text": ...} */
        const char *t = str_field(o, "text");
        if (!t) { missing = "\"text\" (a string)"; break; }
        if (!(out->document = strdup(t))) goto oom_json;
        break;
    }
    }
    if (missing) {
        eval_seterr(err, errlen, "%s: missing %s", tn, missing);
        goto fail_json;
    }
    cJSON_Delete(o);
    return 0;
oom_json:
    eval_seterr(err, errlen, "out of memory");
fail_json:
    cJSON_Delete(o);
    eval_example_free(out);
    return -1;
oom:
    eval_seterr(err, errlen, "out of memory");
    eval_example_free(out);
    return -1;
}

void eval_examples_free(eval_example *ex, int n)
{
    for (int i = 0; i < n; i++) eval_example_free(&ex[i]);
    free(ex);
}

int eval_load_examples(eval_task task, const char *path, eval_example **exs, int *n,
                       char *err, size_t errlen)
{
    *exs = NULL;
    *n = 0;
    struct stat pre;
    if (stat(path, &pre) == 0 && !S_ISREG(pre.st_mode)) {   /* a FIFO would block gzopen */
        eval_seterr(err, errlen, "%s: not a regular file", path);
        return -1;
    }
    gzFile f = gzopen(path, "rb");
    if (!f) {
        eval_seterr(err, errlen, "%s: cannot open: %s", path, errno ? strerror(errno) : "zlib error");
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    int ncap = 64, rc = -1;
    eval_example *v = malloc((size_t)ncap * sizeof *v);
    long line_no = 0;
    if (!buf || !v) goto oom;
    for (;;) {
        /* read one line of any length */
        len = 0;
        int eof = 1;
        for (;;) {
            if (cap - len < 2) {
                char *nb = realloc(buf, cap *= 2);
                if (!nb) goto oom;
                buf = nb;
            }
            if (!gzgets(f, buf + len, (int)(cap - len > (1u << 30) ? (1u << 30) : cap - len))) break;
            eof = 0;
            len += strlen(buf + len);
            if (len > 0 && buf[len - 1] == '\n') break;
        }
        int zerr;
        const char *zmsg = gzerror(f, &zerr);
        if (zerr != Z_OK && zerr != Z_BUF_ERROR) {
            eval_seterr(err, errlen, "%s: read error after line %ld: %s", path, line_no, zmsg);
            goto done;
        }
        if (eof && len == 0) break;
        line_no++;
        if (len > 0 && buf[len - 1] == '\n') len--;
        if (len > 0 && buf[len - 1] == '\r') len--;
        /* blank lines carry nothing (WikiText's empty rows contribute no tokens either) */
        size_t k = 0;
        while (k < len && (buf[k] == ' ' || buf[k] == '\t')) k++;
        if (k == len) continue;
        if (*n == ncap) {
            eval_example *nv = realloc(v, (size_t)(ncap *= 2) * sizeof *v);
            if (!nv) goto oom;
            v = nv;
        }
        char lerr[400];
        if (eval_parse_example(task, buf, len, &v[*n], lerr, sizeof lerr) != 0) {
            eval_seterr(err, errlen, "%s: line %ld: %s", path, line_no, lerr);
            goto done;
        }
        if (!v[*n].id[0]) snprintf(v[*n].id, sizeof v[*n].id, "line%ld", line_no);
        (*n)++;
        if (eof) break;
    }
    if (*n == 0) {
        eval_seterr(err, errlen, "%s: no examples (empty file)", path);
        goto done;
    }
    rc = 0;
    goto done;
oom:
    eval_seterr(err, errlen, "%s: out of memory", path);
done:
    gzclose(f);
    free(buf);
    if (rc != 0) {
        eval_examples_free(v, *n);
        *n = 0;
        v = NULL;
    }
    *exs = v;
    return rc;
}
