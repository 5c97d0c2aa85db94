/* eval/score_cli.c — `llm-run score rouge|em|self-bleu ...`: the metrics of eval.h over files
 * with one text per line, printing the means as JSON (--json) or as a small table. */
#include "eval/eval.h"
#include "eval/text.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void score_usage(FILE *f)
{
    fprintf(f,
"usage: llm-run score rouge HYP_FILE REF_FILE [--impl rouge-score|pltrdy] [--stem] [--json]\n"
"       llm-run score em PRED_FILE ANSWERS_JSONL [--json]\n"
"       llm-run score self-bleu TEXT_FILE [--json]\n"
"Files hold one text per line (UTF-8; a trailing \"\\r\" is dropped); line i of HYP_FILE is\n"
"scored against line i of REF_FILE, and the mean over lines is printed.\n"
"  rouge      ROUGE-1/2/L/Lsum precision, recall, F1. --impl rouge-score (default): Google\n"
"             rouge-score; --stem: its Porter stemming. --impl pltrdy: the `rouge` 1.0.1\n"
"             package of the BUZZ and H2O papers (rougeLsum = its summary-level rouge-l; an\n"
"             empty hypothesis or reference is an error, as the package raises).\n"
"             JSON: {\"rouge1\": {\"p\", \"r\", \"f\"}, \"rouge2\", \"rougeL\", \"rougeLsum\"}\n"
"  em         Lost-in-the-Middle best-subspan exact match; each ANSWERS_JSONL line is a JSON\n"
"             list of strings. JSON: {\"em\": mean}\n"
"  self-bleu  BUZZ's Self-BLEU of each line (needs at least one '.'). JSON: {\"self_bleu\": mean}\n");
}

typedef struct { char *buf; char **line; int n; } lines;

static void lines_free(lines *l) { free(l->buf); free(l->line); memset(l, 0, sizeof *l); }

/* Reads path as lines split on '\n' (no empty last line after a final '\n'); -1 with a
 * one-line error when unreadable, not UTF-8 or empty. */
static int read_lines(const char *path, lines *l, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    FILE *f = fopen(path, "rb");
    if (!f) { snprintf(err, errlen, "%s: cannot open", path); return -1; }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) { fclose(f); snprintf(err, errlen, "%s: out of memory", path); return -1; }
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1) break;
        cap *= 2;
        char *b = realloc(buf, cap);
        if (!b) free(buf);
        buf = b;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { free(buf); snprintf(err, errlen, "%s: read error", path); return -1; }
    buf[n] = 0;
    if (strlen(buf) != n) {
        int ln = 1;
        for (size_t i = 0; buf[i]; i++) ln += buf[i] == '\n';
        free(buf);
        snprintf(err, errlen, "%s:%d: NUL byte in text", path, ln);
        return -1;
    }
    int nl = 0;
    for (size_t i = 0; i < n; i++) nl += buf[i] == '\n';
    l->buf = buf;
    l->line = malloc((size_t)(nl + 1) * sizeof *l->line);
    if (!l->line) { lines_free(l); snprintf(err, errlen, "%s: out of memory", path); return -1; }
    char *s = buf;
    while (*s) {
        char *e = strchr(s, '\n');
        if (e) *e = 0;
        size_t len = strlen(s);
        if (len && s[len - 1] == '\r') s[--len] = 0;
        for (size_t i = 0; i < len;) {
            uint32_t cp;
            int k = utf8_decode((unsigned char *)s + i, len - i, &cp);
            if (cp == 0xFFFD && k == 1 && (unsigned char)s[i] >= 0x80) {
                snprintf(err, errlen, "%s:%d: not valid UTF-8", path, l->n + 1);
                lines_free(l);
                return -1;
            }
            i += (size_t)k;
        }
        l->line[l->n++] = s;
        if (!e) break;
        s = e + 1;
    }
    if (l->n == 0) { lines_free(l); snprintf(err, errlen, "%s: no lines", path); return -1; }
    return 0;
}

static int same_count(const char *pa, const lines *a, const char *pb, const lines *b,
                      char *err, size_t errlen)
{
    if (a->n == b->n) return 0;
    snprintf(err, errlen, "%s has %d lines but %s has %d", pa, a->n, pb, b->n);
    return -1;
}

static void print_json(cJSON *o)
{
    char *s = cJSON_PrintUnformatted(o);
    if (s) printf("%s\n", s);
    free(s);
}

static int score_rouge(const char *hyp_path, const char *ref_path, rouge_impl impl, int stem,
                       int json)
{
    char err[512] = "";
    lines h, r;
    if (read_lines(hyp_path, &h, err, sizeof err)) { fprintf(stderr, "llm-run: score: %s\n", err); return 1; }
    if (read_lines(ref_path, &r, err, sizeof err) ||
        same_count(hyp_path, &h, ref_path, &r, err, sizeof err)) {
        fprintf(stderr, "llm-run: score: %s\n", err);
        lines_free(&h); lines_free(&r);
        return 1;
    }
    rouge_scores sum = {0}, s;
    for (int i = 0; i < h.n; i++) {
        if (rouge_pair(r.line[i], h.line[i], impl, stem, &s, err, sizeof err)) {
            fprintf(stderr, "llm-run: score: %s:%d / %s:%d: %s\n", hyp_path, i + 1, ref_path, i + 1, err);
            lines_free(&h); lines_free(&r);
            return 1;
        }
        rouge_prf *a = &sum.rouge1, *b = &s.rouge1;
        for (int k = 0; k < 4; k++) { a[k].p += b[k].p; a[k].r += b[k].r; a[k].f += b[k].f; }
    }
    static const char *names[4] = { "rouge1", "rouge2", "rougeL", "rougeLsum" };
    rouge_prf *a = &sum.rouge1;
    if (json) {
        cJSON *o = cJSON_CreateObject();
        for (int k = 0; k < 4; k++) {
            cJSON *m = cJSON_AddObjectToObject(o, names[k]);
            cJSON_AddNumberToObject(m, "p", a[k].p / h.n);
            cJSON_AddNumberToObject(m, "r", a[k].r / h.n);
            cJSON_AddNumberToObject(m, "f", a[k].f / h.n);
        }
        print_json(o);
        cJSON_Delete(o);
    } else {
        printf("ROUGE (%s%s), mean over %d pairs\n",
               impl == ROUGE_IMPL_PLTRDY ? "pltrdy rouge 1.0.1" : "rouge-score",
               impl == ROUGE_IMPL_GOOGLE && stem ? ", Porter stemming" : "", h.n);
        printf("%-10s %8s %8s %8s\n", "metric", "P", "R", "F");
        for (int k = 0; k < 4; k++)
            printf("%-10s %8.4f %8.4f %8.4f\n", names[k], a[k].p / h.n, a[k].r / h.n, a[k].f / h.n);
    }
    lines_free(&h); lines_free(&r);
    return 0;
}

static int score_em(const char *pred_path, const char *ans_path, int json)
{
    char err[512] = "";
    lines p, a;
    if (read_lines(pred_path, &p, err, sizeof err)) { fprintf(stderr, "llm-run: score: %s\n", err); return 1; }
    if (read_lines(ans_path, &a, err, sizeof err) ||
        same_count(pred_path, &p, ans_path, &a, err, sizeof err)) {
        fprintf(stderr, "llm-run: score: %s\n", err);
        lines_free(&p); lines_free(&a);
        return 1;
    }
    double sum = 0;
    int rc = 0;
    for (int i = 0; i < a.n && !rc; i++) {
        cJSON *j = cJSON_Parse(a.line[i]);
        int n = j && cJSON_IsArray(j) ? cJSON_GetArraySize(j) : -1;
        const char **ans = n > 0 ? malloc((size_t)n * sizeof *ans) : NULL;
        for (int k = 0; k < n && ans; k++) {
            cJSON *e = cJSON_GetArrayItem(j, k);
            if (!cJSON_IsString(e)) { n = -1; break; }
            ans[k] = e->valuestring;
        }
        if (n < 0 || (n > 0 && !ans)) {
            fprintf(stderr, "llm-run: score: %s:%d: not a JSON list of strings\n", ans_path, i + 1);
            rc = 1;
        } else {
            sum += em_best_subspan(p.line[i], ans, n);
        }
        free(ans);
        cJSON_Delete(j);
    }
    if (!rc) {
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "em", sum / p.n);
            print_json(o);
            cJSON_Delete(o);
        } else {
            printf("best-subspan exact match over %d predictions: %.4f\n", p.n, sum / p.n);
        }
    }
    lines_free(&p); lines_free(&a);
    return rc;
}

static int score_self_bleu(const char *path, int json)
{
    char err[512] = "";
    lines t;
    if (read_lines(path, &t, err, sizeof err)) { fprintf(stderr, "llm-run: score: %s\n", err); return 1; }
    double sum = 0;
    for (int i = 0; i < t.n; i++) {
        double b = self_bleu(t.line[i]);
        if (isnan(b)) {
            fprintf(stderr, "llm-run: score: %s:%d: self-BLEU needs at least two '.'-separated "
                    "pieces (NLTK raises without references)\n", path, i + 1);
            lines_free(&t);
            return 1;
        }
        sum += b;
    }
    if (json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "self_bleu", sum / t.n);
        print_json(o);
        cJSON_Delete(o);
    } else {
        printf("self-BLEU (BUZZ/Texygen, 3-gram, method1) over %d texts: %.4f\n", t.n, sum / t.n);
    }
    lines_free(&t);
    return 0;
}

int score_main(int argc, char **argv)
{
    const char *pos[3] = {0};
    int npos = 0, json = 0, stem = 0;
    rouge_impl impl = ROUGE_IMPL_GOOGLE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { score_usage(stdout); return 0; }
        else if (!strcmp(a, "--json")) json = 1;
        else if (!strcmp(a, "--stem")) stem = 1;
        else if (!strcmp(a, "--impl") || !strncmp(a, "--impl=", 7)) {
            const char *v = a[6] == '=' ? a + 7 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v) { fprintf(stderr, "llm-run: score: --impl needs a value (rouge-score|pltrdy)\n"); return 2; }
            if (!strcmp(v, "rouge-score") || !strcmp(v, "google")) impl = ROUGE_IMPL_GOOGLE;
            else if (!strcmp(v, "pltrdy")) impl = ROUGE_IMPL_PLTRDY;
            else { fprintf(stderr, "llm-run: score: --impl %s: expected rouge-score or pltrdy\n", v); return 2; }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "llm-run: score: unknown option %s (see llm-run score --help)\n", a);
            return 2;
        } else if (npos < 3) pos[npos++] = a;
        else { fprintf(stderr, "llm-run: score: unexpected argument %s\n", a); return 2; }
    }
    if (npos == 0) { score_usage(stderr); return 2; }
    if (!strcmp(pos[0], "rouge") && npos == 3) return score_rouge(pos[1], pos[2], impl, stem, json);
    if (!strcmp(pos[0], "em") && npos == 3) return score_em(pos[1], pos[2], json);
    if (!strcmp(pos[0], "self-bleu") && npos == 2) return score_self_bleu(pos[1], json);
    fprintf(stderr, "llm-run: score: expected 'rouge HYP REF', 'em PRED ANSWERS' or "
            "'self-bleu FILE' (see llm-run score --help)\n");
    return 2;
}
