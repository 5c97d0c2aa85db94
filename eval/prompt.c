/* prompt.c — prompt protocols as data (configs/prompts/STYLE.json, EVAL.md: BUZZ, HELM/H2O, Lost in
 * the Middle) and their rendering, with documents cut to a word budget so a prompt fits a
 * model's context. */
#include "eval/eval.h"
#include "eval/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0, r;
    char *b = malloc(cap);
    while (b && (r = fread(b + len, 1, cap - len - 1, f)) > 0) {
        len += r;
        if (len + 1 == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) { free(b); b = NULL; break; }
            b = nb;
        }
    }
    fclose(f);
    if (b) b[len] = '\0';
    if (n) *n = len;
    return b;
}

void eval_prompt_free(eval_prompt_style *ps)
{
    for (int i = 0; i < EVAL_TASK_COUNT; i++) {
        free(ps->tmpl[i]);
        free(ps->tmpl_first[i]);
        free(ps->tmpl_closedbook[i]);
    }
    free(ps->doc_format);
    free(ps->doc_join);
    free(ps->stop);
    memset(ps, 0, sizeof *ps);
}

/* configs/prompts/NAME.json in the current directory, else next to the executable. */
static int find_style(const char *name, char *path, size_t plen)
{
    if (strchr(name, '/') || (strlen(name) > 5 && !strcmp(name + strlen(name) - 5, ".json"))) {
        snprintf(path, plen, "%s", name);
        return access(path, R_OK) == 0 ? 0 : -1;
    }
    snprintf(path, plen, "configs/prompts/%s.json", name);
    if (access(path, R_OK) == 0) return 0;
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (k > 0) {
        exe[k] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        snprintf(path, plen, "%s/configs/prompts/%s.json", exe, name);
        if (access(path, R_OK) == 0) return 0;
    }
    snprintf(path, plen, "configs/prompts/%s.json", name);
    return -1;
}

int eval_prompt_load(const char *name_or_path, eval_prompt_style *ps, char *err, size_t errlen)
{
    memset(ps, 0, sizeof *ps);
    char path[PATH_MAX + 64];
    if (find_style(name_or_path, path, sizeof path) != 0) {
        eval_seterr(err, errlen, "--prompt-style: %s: no such prompt style (looked for %s)", name_or_path, path);
        return -1;
    }
    char *text = slurp(path, NULL);
    if (!text) {
        eval_seterr(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    cJSON *o = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(o)) {
        eval_seterr(err, errlen, "%s: not a JSON object", path);
        cJSON_Delete(o);
        return -1;
    }
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(o, "name");
    snprintf(ps->name, sizeof ps->name, "%s", cJSON_IsString(nm) ? nm->valuestring : name_or_path);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "templates");
    if (!cJSON_IsObject(t)) {
        eval_seterr(err, errlen, "%s: missing \"templates\" (an object task -> template)", path);
        goto fail;
    }
    const cJSON *it;
    static const char *const keys[3] = {"templates", "templates_first", "templates_closedbook"};
    for (int v = 0; v < 3; v++) {
        char **dst = v == 0 ? ps->tmpl : v == 1 ? ps->tmpl_first : ps->tmpl_closedbook;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(o, keys[v])) {
            int k = eval_task_from_name(it->string);
            if (k < 0 || !cJSON_IsString(it)) {
                eval_seterr(err, errlen, "%s: %s.%s: %s", path, keys[v], it->string,
                            k < 0 ? "unknown task" : "not a string");
                goto fail;
            }
            if (!(dst[k] = strdup(it->valuestring))) goto oom;
        }
    }
    const cJSON *mx = cJSON_GetObjectItemCaseSensitive(o, "max_new_tokens");
    cJSON_ArrayForEach(it, mx) {
        int k = eval_task_from_name(it->string);
        if (k < 0 || !cJSON_IsNumber(it) || it->valuedouble < 1) {
            eval_seterr(err, errlen, "%s: max_new_tokens.%s: expected a task name and a number >= 1", path, it->string);
            goto fail;
        }
        ps->max_new[k] = (int)it->valuedouble;
    }
    const char *df = "{title}\n{text}\n", *dj = "";
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "doc_format");
    if (cJSON_IsString(v)) df = v->valuestring;
    v = cJSON_GetObjectItemCaseSensitive(o, "doc_join");
    if (cJSON_IsString(v)) dj = v->valuestring;
    ps->doc_format = strdup(df);
    ps->doc_join = strdup(dj);
    if (!ps->doc_format || !ps->doc_join) goto oom;
    v = cJSON_GetObjectItemCaseSensitive(o, "stop");
    if (cJSON_IsString(v) && v->valuestring[0] && !(ps->stop = strdup(v->valuestring))) goto oom;
    v = cJSON_GetObjectItemCaseSensitive(o, "bos");
    ps->bos = v ? cJSON_IsTrue(v) : 1;
    cJSON_Delete(o);
    return 0;
oom:
    eval_seterr(err, errlen, "%s: out of memory", path);
fail:
    cJSON_Delete(o);
    eval_prompt_free(ps);
    return -1;
}

static void sb_add_words(eval_sbuf *b, const char *text, int cap, int *truncated)
{
    if (cap < 0) {
        eval_sb_add(b, text, strlen(text));
        return;
    }
    const char *p = text;
    int words = 0;
    while (*p) {
        while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
        if (!*p) break;
        if (words == cap) {
            *truncated = 1;
            break;
        }
        while (*p && !(*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')) p++;
        words++;
    }
    /* keep the original text up to the end of the last kept word */
    size_t n = (size_t)(p - text);
    if (*truncated) while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\n' || text[n - 1] == '\t' || text[n - 1] == '\r')) n--;
    eval_sb_add(b, text, n);
}

/* Expands {name} fields of fmt; other braces are kept as they are. */
static void span_add(eval_spans *sp, const char *name, size_t a, size_t b)
{
    if (!sp || sp->n >= EVAL_MAX_SPANS) return;
    snprintf(sp->name[sp->n], sizeof sp->name[0], "%s", name);
    sp->ch[sp->n][0] = (int)a;
    sp->ch[sp->n][1] = (int)b;
    sp->tok[sp->n][0] = sp->tok[sp->n][1] = 0;
    sp->n++;
}

static void expand(eval_sbuf *b, const char *fmt, const eval_example *ex, int doc_k,
                   const eval_prompt_style *ps, int word_cap, int *truncated, eval_spans *sp)
{
    for (const char *p = fmt; *p;) {
        if (*p == '{') {
            const char *e = strchr(p, '}');
            if (e) {
                size_t n = (size_t)(e - p - 1);
                const char *f = p + 1;
#define IS(name) (n == strlen(name) && !strncmp(f, name, n))
                int done = 1;
                size_t at = b->n;
                if (IS("document") && ex->document) {
                    sb_add_words(b, ex->document, word_cap, truncated);
                    span_add(sp, "document", at, b->n);
                } else if (IS("question") && ex->question) {
                    eval_sb_add(b, ex->question, strlen(ex->question));
                    span_add(sp, "question", at, b->n);
                } else if (IS("search_results") && doc_k < 0) {
                    for (int k = 0; k < ex->n_docs; k++) {
                        if (k) eval_sb_add(b, ps->doc_join, strlen(ps->doc_join));
                        size_t d0 = b->n;
                        expand(b, ps->doc_format, ex, k, ps, word_cap, truncated, NULL);
                        char nm[16];
                        snprintf(nm, sizeof nm, "doc%d", k);
                        span_add(sp, nm, d0, b->n);
                    }
                } else if (IS("k") && doc_k >= 0) {
                    char num[16];
                    snprintf(num, sizeof num, "%d", doc_k + 1);
                    eval_sb_add(b, num, strlen(num));
                } else if (IS("title") && doc_k >= 0) eval_sb_add(b, ex->docs[doc_k].title, strlen(ex->docs[doc_k].title));
                else if (IS("text") && doc_k >= 0) sb_add_words(b, ex->docs[doc_k].text, word_cap, truncated);
                else done = 0;
#undef IS
                if (done) {
                    p = e + 1;
                    continue;
                }
            }
        }
        eval_sb_add(b, p, 1);
        p++;
    }
}

char *eval_prompt_render(const eval_prompt_style *ps, eval_task task, const eval_example *ex,
                         int word_cap, int *truncated)
{
    return eval_prompt_render_ex(ps, task, ex, word_cap, EVAL_PROMPT_LAST, truncated, NULL);
}

char *eval_prompt_render_ex(const eval_prompt_style *ps, eval_task task, const eval_example *ex,
                            int word_cap, int variant, int *truncated, eval_spans *sp)
{
    *truncated = 0;
    if (sp) sp->n = 0;
    if (task < 0 || task >= EVAL_TASK_COUNT) return NULL;
    const char *t = variant == EVAL_PROMPT_FIRST ? ps->tmpl_first[task]
                  : variant == EVAL_PROMPT_CLOSEDBOOK ? ps->tmpl_closedbook[task] : ps->tmpl[task];
    if (!t) return NULL;
    eval_sbuf b = {0};
    eval_sb_add(&b, "", 0);
    expand(&b, t, ex, -1, ps, word_cap, truncated, sp);
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
