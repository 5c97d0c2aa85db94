/* merge.c — `llm-run eval-merge [--out OUT] DIR...`: joins the results of sweep shards (each
 * DIR/results.jsonl and DIR/shard-I-of-N/results.jsonl), keeps the first line of every
 * (id, policy, budget), orders the lines by example index (stable, so an example keeps its
 * policy × budget order) and writes OUT/results.jsonl (default OUT: the first DIR), run.json
 * and the summaries. The merged file equals the unsharded run's, timings aside.
 * Refused (naming the folders): shards whose run.json differ, and, unless --allow-partial,
 * missing cells: each shard's expected.json lists the examples, policies and budgets it was
 * to run, and every one of those cells must be in the merged lines. */
#include "eval/sweep.h"
#include "eval/util.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    char *line;
    long idx;
    long seq;          /* input order, for a stable sort */
} mline;

static int cmp_mline(const void *a, const void *b)
{
    const mline *x = a, *y = b;
    if (x->idx != y->idx) return x->idx < y->idx ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static char *slurp_small(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = malloc(65536);
    size_t n = b ? fread(b, 1, 65535, f) : 0;
    fclose(f);
    if (b) b[n] = '\0';
    return b;
}

/* The first key of run.json a that differs from b ("?" when none is found). */
static const char *differing_key(const char *a, const char *b)
{
    static char key[64];
    cJSON *x = cJSON_Parse(a), *y = cJSON_Parse(b);
    snprintf(key, sizeof key, "?");
    const cJSON *it;
    cJSON_ArrayForEach(it, x) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(y, it->string);
        if (!o || !cJSON_Compare(o, it, 1)) {
            snprintf(key, sizeof key, "%s", it->string);
            break;
        }
    }
    cJSON_Delete(x);
    cJSON_Delete(y);
    return key;
}

/* Cells of dir/expected.json missing from seen: their count, the first one in first. -1: no
 * expected.json (a folder from before issue 16: not checked). */
static long missing_cells(const char *dir, const eval_results *seen, char *first, size_t flen)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/expected.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)sz + 1);
    size_t n = b ? fread(b, 1, (size_t)sz, f) : 0;
    fclose(f);
    if (!b) return -1;
    b[n] = '\0';
    cJSON *j = cJSON_Parse(b);
    free(b);
    long miss = 0;
    const cJSON *id, *p, *bu, *e, *run;
    cJSON_ArrayForEach(run, cJSON_GetObjectItemCaseSensitive(j, "runs")) {
        const cJSON *ids = cJSON_GetObjectItemCaseSensitive(run, "ids"), *pols = cJSON_GetObjectItemCaseSensitive(run, "policies");
        const cJSON *buds = cJSON_GetObjectItemCaseSensitive(run, "budgets"), *extra = cJSON_GetObjectItemCaseSensitive(run, "extra");
        cJSON_ArrayForEach(id, ids) {
            char key[512];
            cJSON_ArrayForEach(p, pols) cJSON_ArrayForEach(bu, buds) {
                eval_result_key(key, sizeof key, cJSON_GetStringValue(id), cJSON_GetStringValue(p), bu->valuedouble);
                if (!eval_results_done(seen, key) && miss++ == 0) snprintf(first, flen, "%s", key);
            }
            cJSON_ArrayForEach(e, extra) {
                eval_result_key(key, sizeof key, cJSON_GetStringValue(id), cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "policy")),
                                cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(e, "budget")));
                if (!eval_results_done(seen, key) && miss++ == 0) snprintf(first, flen, "%s", key);
            }
        }
    }
    cJSON_Delete(j);
    return miss;
}

int eval_merge_main(int argc, char **argv)
{
    const char *out = NULL;
    const char *dirs[256];
    const char *folders[1024];   /* every folder a results.jsonl came from */
    int n_folders = 0;
    int n_dirs = 0, no_plot = 0, allow_partial = 0;
    eval_summary_opts so = {.margin = -1, .resamples = 0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: llm-run eval-merge [--out OUT] [--no-plot] DIR...\n\n"
                   "Merges the results of sweep shards: every DIR/results.jsonl and\n"
                   "DIR/shard-*-of-*/results.jsonl (llm-run eval --shard i/n --out DIR), deduplicated by\n"
                   "(id, policy, budget) and ordered by example, into OUT/results.jsonl (default OUT: the\n"
                   "first DIR), then writes OUT/summary.csv, summary.md and summary.png.\n"
                   "Refuses folders whose run.json differ, and folders with missing cells (example x\n"
                   "policy x budget of their expected.json) unless --allow-partial.\n"
                   "  --margin M, --bootstrap N   the summary's equivalence margin and resamples\n");
            return 0;
        } else if (!strcmp(argv[i], "--allow-partial")) {
            allow_partial = 1;
        } else if (!strcmp(argv[i], "--margin") || !strcmp(argv[i], "--bootstrap")) {
            char *end;
            double v = i + 1 < argc ? strtod(argv[i + 1], &end) : -1;
            if (i + 1 >= argc || *end || !(v >= 0)) {
                fprintf(stderr, "llm-run eval-merge: %s: expected a number >= 0\n", argv[i]);
                return 2;
            }
            if (argv[i][2] == 'm') so.margin = v;
            else so.resamples = (int)v;
            i++;
        } else if (!strcmp(argv[i], "--out")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "llm-run eval-merge: --out: missing value\n");
                return 2;
            }
            out = argv[++i];
        } else if (!strcmp(argv[i], "--no-plot")) {
            no_plot = 1;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "llm-run eval-merge: unknown option '%s' (see --help)\n", argv[i]);
            return 2;
        } else if (n_dirs < 256) {
            dirs[n_dirs++] = argv[i];
        }
    }
    if (!n_dirs) {
        fprintf(stderr, "llm-run eval-merge: no DIR given (usage: llm-run eval-merge [--out OUT] DIR...)\n");
        return 2;
    }
    if (!out) out = dirs[0];
    char err[512];
    int status = 1, cap = 0;
    long n = 0, seq = 0;
    mline *v = NULL;
    char *run_json = NULL, run_from[PATH_MAX + 16] = "";
    /* keys seen (for dedup) through a results set with no file behind it */
    eval_results seen;
    memset(&seen, 0, sizeof seen);
    seen.fd = -1;
    int n_files = 0, n_dup = 0;
    for (int d = 0; d < n_dirs; d++) {
        struct stat st;
        if (stat(dirs[d], &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "llm-run eval-merge: %s: not a directory\n", dirs[d]);
            goto done;
        }
        char pat[PATH_MAX + 64];
        glob_t gl;
        memset(&gl, 0, sizeof gl);
        snprintf(pat, sizeof pat, "%s/results.jsonl", dirs[d]);
        glob(pat, 0, NULL, &gl);
        snprintf(pat, sizeof pat, "%s/shard-*-of-*/results.jsonl", dirs[d]);
        glob(pat, gl.gl_pathc ? GLOB_APPEND : 0, NULL, &gl);
        for (size_t k = 0; k < gl.gl_pathc; k++) {
            const char *path = gl.gl_pathv[k];
            /* the run.json next to it must agree with the others */
            char rj[PATH_MAX + 16];
            snprintf(rj, sizeof rj, "%.*s/run.json", (int)(strrchr(path, '/') - path), path);
            char *cfg = slurp_small(rj);
            if (cfg) {
                cJSON *a = cJSON_Parse(cfg), *b = run_json ? cJSON_Parse(run_json) : NULL;
                int same = !run_json || (a && b && cJSON_Compare(a, b, 1));
                cJSON_Delete(a);
                cJSON_Delete(b);
                if (!same) {
                    fprintf(stderr, "llm-run eval-merge: %s differs from %s (%s): the results come from different configurations\n",
                            rj, run_from, differing_key(cfg, run_json));
                    free(cfg);
                    globfree(&gl);
                    goto done;
                }
                if (!run_json) {
                    run_json = cfg;
                    snprintf(run_from, sizeof run_from, "%s", rj);
                } else {
                    free(cfg);
                }
            }
            char **lines;
            int nl;
            if (eval_read_lines(path, &lines, &nl, err, sizeof err) != 0) {
                fprintf(stderr, "llm-run eval-merge: %s\n", err);
                globfree(&gl);
                goto done;
            }
            n_files++;
            if (n_folders < 1024) folders[n_folders++] = strdup(rj);
            for (int i = 0; i < nl; i++) {
                cJSON *o = cJSON_Parse(lines[i]);
                const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
                const cJSON *pol = cJSON_GetObjectItemCaseSensitive(o, "policy");
                const cJSON *bud = cJSON_GetObjectItemCaseSensitive(o, "budget");
                const cJSON *idx = cJSON_GetObjectItemCaseSensitive(o, "idx");
                if (!cJSON_IsString(id) || !cJSON_IsString(pol) || !cJSON_IsNumber(bud)) {
                    fprintf(stderr, "llm-run eval-merge: %s: line %d: not a results line\n", path, i + 1);
                    cJSON_Delete(o);
                    for (int j = i; j < nl; j++) free(lines[j]);
                    free(lines);
                    globfree(&gl);
                    goto done;
                }
                char key[512];
                eval_result_key(key, sizeof key, id->valuestring, pol->valuestring, bud->valuedouble);
                long ix = cJSON_IsNumber(idx) ? (long)idx->valuedouble : LONG_MAX;
                cJSON_Delete(o);
                if (eval_results_done(&seen, key)) {
                    n_dup++;
                    free(lines[i]);
                    continue;
                }
                /* remember the key: a zero-length append to a set without a file */
                if (eval_results_mark(&seen, key) != 0 || (n == cap && !(v = realloc(v, (size_t)(cap = cap ? 2 * cap : 1024) * sizeof *v)))) {
                    fprintf(stderr, "llm-run eval-merge: out of memory\n");
                    globfree(&gl);
                    goto done;
                }
                v[n].line = lines[i];
                v[n].idx = ix;
                v[n].seq = seq++;
                n++;
            }
            free(lines);
        }
        globfree(&gl);
    }
    if (!n_files) {
        fprintf(stderr, "llm-run eval-merge: no results.jsonl under %s%s\n", dirs[0], n_dirs > 1 ? " ..." : "");
        goto done;
    }
    /* every cell each folder was to run must be there */
    long total_miss = 0;
    for (int k = 0; k < n_folders; k++) {
        if (!folders[k]) continue;
        char *sl = strrchr(folders[k], '/');
        if (sl) *sl = '\0';
        char first[600] = "";
        long miss = missing_cells(folders[k], &seen, first, sizeof first);
        if (miss > 0) {
            fprintf(stderr, "llm-run eval-merge: %s: %ld missing cell%s (e.g. %s)%s\n", folders[k], miss, miss > 1 ? "s" : "",
                    first, allow_partial ? "" : "; finish that run (rerun it: it resumes) or pass --allow-partial");
            total_miss += miss;
        }
    }
    if (total_miss > 0 && !allow_partial) goto done;
    /* shards i-of-n: all n must be there */
    for (int k = 0; k < n_folders; k++) {
        const char *sh = folders[k] ? strstr(folders[k], "shard-") : NULL;
        int si, sn;
        if (!sh || sscanf(sh, "shard-%d-of-%d", &si, &sn) != 2) continue;
        for (int q = 0; q < sn; q++) {
            char want[32];
            snprintf(want, sizeof want, "shard-%d-of-%d", q, sn);
            int found = 0;
            for (int r = 0; r < n_folders; r++) found |= folders[r] && strstr(folders[r], want) != NULL;
            if (!found) {
                fprintf(stderr, "llm-run eval-merge: %s is missing (shard %d of %d has no results.jsonl)%s\n", want, q, sn,
                        allow_partial ? "" : "; run it or pass --allow-partial");
                if (!allow_partial) goto done;
            }
        }
        break;
    }
    if (n > 1) qsort(v, (size_t)n, sizeof *v, cmp_mline);   /* v is NULL with no lines */
    int lock_fd = -1;
    if (eval_mkdirs(out, err, sizeof err) != 0 || (lock_fd = sweep_lock_dir(out, err, sizeof err)) < 0) {
        fprintf(stderr, "llm-run eval-merge: %s\n", err);
        goto done;
    }
    /* write OUT/results.jsonl through a temporary file and rename */
    char path[PATH_MAX + 32], tmp[PATH_MAX + 48];
    snprintf(path, sizeof path, "%s/results.jsonl", out);
    snprintf(tmp, sizeof tmp, "%s/.results.jsonl.merge.tmp", out);
    FILE *f = fopen(tmp, "wb");
    int bad = !f;
    for (long i = 0; !bad && i < n; i++) bad = fprintf(f, "%s\n", v[i].line) < 0;
    if (f && (fflush(f) != 0 || fsync(fileno(f)) != 0)) bad = 1;
    if (f && fclose(f) != 0) bad = 1;
    if (bad || rename(tmp, path) != 0) {
        fprintf(stderr, "llm-run eval-merge: %s: write failed: %s\n", path, strerror(errno));
        unlink(tmp);
        goto done;
    }
    if (run_json) {
        snprintf(tmp, sizeof tmp, "%s/run.json", out);
        char *have = slurp_small(tmp);
        if (!have) {
            f = fopen(tmp, "wb");
            if (!f || fputs(run_json, f) < 0 || fclose(f) != 0) {
                fprintf(stderr, "llm-run eval-merge: %s: write failed: %s\n", tmp, strerror(errno));
                goto done;
            }
        }
        free(have);
    }
    close(lock_fd);
    if (eval_write_summary_ex(out, &so, err, sizeof err) != 0) {
        fprintf(stderr, "llm-run eval-merge: %s\n", err);
        goto done;
    }
    if (!no_plot) eval_plot_summary(out);
    fprintf(stderr, "llm-run eval-merge: %ld results from %d files (%d duplicates dropped) -> %s\n", n, n_files,
            n_dup, path);
    status = 0;
done:
    for (int k = 0; k < n_folders; k++) free((char *)folders[k]);
    for (long i = 0; i < n; i++) free(v[i].line);
    free(v);
    free(run_json);
    eval_results_close(&seen);
    return status;
}
