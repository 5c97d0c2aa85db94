/* bench.c — `llm-run bench -m MODEL [-p 512] [-n 128] [-pg PP,TG] [-d D] [-r 5] [-t T] [-o md]`:
 * llama-bench's tests and table, so a llama.cpp user compares the two engines with the same
 * command on the same file. Each test starts from an empty cache (the full cache, sized for its
 * tokens), fills D tokens of depth untimed, then times: ppN, one prefill of N tokens (t/s =
 * N / time); tgN, N decode steps of one token (N / time); ppN+tgM both. Tokens are random ids
 * (from a fixed-seed LCG; llama-bench draws its ids with std::mt19937, and only their variety
 * matters to the timing). One untimed
 * warm-up of each test unless --no-warmup; each value is the mean ± standard deviation of the
 * per-repetition t/s over -r repetitions, as llama-bench reports it. Lists ("-p 128,512",
 * "-t 1,2") run every combination. -o md (default), csv, json, jsonl. Not a measurement the tests
 * time: the numbers are this machine's, as noisy as it is (bench/ and docs/PERFORMANCE.md hold
 * the project's measured comparisons). */
#include "cli/cli.h"
#include "eval/eval.h"
#include "eviction/eviction.h"
#include "kernels/kernels.h"
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXV 16

typedef struct {
    const char *model;
    int np, nn, nd, nt, npg;
    int p[MAXV], n[MAXV], d[MAXV], t[MAXV], pg[MAXV][2];
    int reps, warmup, progress;
    int kv_dtype;   /* -1 auto */
    const char *out;
} bench_opts;

typedef struct {
    int p, n, d, t;
    double mean, sd;   /* t/s */
    double *samples;
} bench_row;

/* "a,b,c" of integers in [lo, hi] into v (at most MAXV); the count, or -1 (printed). */
static int int_list(const char *flag, const char *s, int lo, int hi, int *v)
{
    int k = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (k == MAXV) return cli_die("%s: at most %d values", flag, MAXV), -1;
        if (cli_int(flag, tok, lo, hi, &v[k]) != 0) return -1;
        k++;
    }
    if (!k) return cli_die("%s: expected N or N,N,...", flag), -1;
    return k;
}

static int is_flag(const char *a, const char *s, const char *l) { return !strcmp(a, s) || (l && !strcmp(a, l)); }

/* The flags parse() takes (for "missing value" against "unknown option"). */
static int is_known(const char *a)
{
    static const char *const known[] = {"-m", "--model", "-p", "--n-prompt", "-n", "--n-gen", "-d", "--n-depth", "-t",
                                        "--threads", "-pg", "-r", "--repetitions", "-o", "--output", "-ctk",
                                        "--cache-type-k", "-ctv", "--cache-type-v", "-ngl", "--n-gpu-layers", "-b",
                                        "--batch-size", "-ub", "--ubatch-size", "-fa", "--flash-attn", "--numa", "--prio",
                                        "--poll", "--delay", "-mmp", "--mmap", "--repack", "-embd", "--embeddings", NULL};
    for (int i = 0; known[i]; i++)
        if (!strcmp(a, known[i])) return 1;
    return 0;
}

static int parse(int argc, char **argv, bench_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int has = 1;
#define IS(s, l) is_flag(a, s, l)
        if (IS("-h", "--help")) {
            printf("usage: llm-run bench -m MODEL [-p 512] [-n 128] [-pg PP,TG] [-d 0] [-r 5] [-t N] [-ctk f16]\n"
                   "                     [-o md|csv|json|jsonl] [--no-warmup] [--progress]\n\n"
                   "llama-bench's tests and table on llm-run: ppN (one prefill of N tokens), tgN (N decode steps),\n"
                   "ppN+tgM, each from an empty cache after -d tokens of depth, random token ids; t/s as the mean\n"
                   "± standard deviation over -r repetitions. Comma lists run every combination. -ctk/-ctv: the\n"
                   "KV dtype (f32, f16, bf16; default: the model's). -b, -ub, -fa, -ngl 0, --numa, --prio, --poll\n"
                   "are accepted and change nothing here.\n");
            return 1;
        }
        const int flag_only = IS("--no-warmup", NULL) || IS("--progress", NULL) || IS("-v", "--verbose");
        if (!v && !flag_only && is_known(a)) return cli_die("%s: missing value", a);
        if (IS("-m", "--model")) o->model = v;
        else if (IS("-p", "--n-prompt")) { if ((o->np = int_list(a, v, 0, 1 << 20, o->p)) < 0) return 2; }
        else if (IS("-n", "--n-gen")) { if ((o->nn = int_list(a, v, 0, 1 << 20, o->n)) < 0) return 2; }
        else if (IS("-d", "--n-depth")) { if ((o->nd = int_list(a, v, 0, 1 << 20, o->d)) < 0) return 2; }
        else if (IS("-t", "--threads")) { if ((o->nt = int_list(a, v, 1, 1024, o->t)) < 0) return 2; }
        else if (IS("-pg", NULL)) {
            int x[2];
            if (int_list(a, v, 0, 1 << 20, x) != 2) return cli_die("%s: expected PP,TG", a);
            if (o->npg == MAXV) return cli_die("%s: at most %d", a, MAXV);
            o->pg[o->npg][0] = x[0], o->pg[o->npg++][1] = x[1];
        } else if (IS("-r", "--repetitions")) { if (cli_int(a, v, 1, 1000, &o->reps)) return 2; }
        else if (IS("-o", "--output")) {
            if (strcmp(v, "md") && strcmp(v, "csv") && strcmp(v, "json") && strcmp(v, "jsonl"))
                return cli_die("%s: md, csv, json or jsonl (sql is llama-bench's only)", a);
            o->out = v;
        } else if (IS("-ctk", "--cache-type-k") || IS("-ctv", "--cache-type-v")) {
            int dt = !strcmp(v, "f32") ? DT_F32 : !strcmp(v, "f16") ? DT_F16 : !strcmp(v, "bf16") ? DT_BF16 : -2;
            if (dt == -2) return cli_die("%s: '%s': f32, f16 or bf16 (quantized KV caches are not in llm-run)", a, v);
            if (o->kv_dtype >= 0 && o->kv_dtype != dt) return cli_die("%s: K and V share one dtype here", a);
            o->kv_dtype = dt;
        } else if (IS("--no-warmup", NULL)) { o->warmup = 0, has = 0; }
        else if (IS("--progress", NULL)) { o->progress = 1, has = 0; }
        else if (IS("-v", "--verbose")) { has = 0; }
        else if (IS("-ngl", "--n-gpu-layers")) {
            if (strcmp(v, "0")) return cli_die("%s %s: llm-run bench runs on the CPU (-ngl 0)", a, v);
        } else if (IS("-b", "--batch-size") || IS("-ub", "--ubatch-size") || IS("-fa", "--flash-attn") ||
                   IS("--numa", NULL) || IS("--prio", NULL) || IS("--poll", NULL) || IS("--delay", NULL) ||
                   IS("-mmp", "--mmap") || IS("--repack", NULL) || IS("-embd", "--embeddings")) {
            /* accepted: one prefill pass per test, the CPU's own attention; nothing to set */
        } else {
            return cli_die("bench: unknown option '%s' (see llm-run bench --help)", a);
        }
        i += has;
#undef IS
    }
    if (!o->model) return cli_die("bench: -m MODEL is required");
    return 0;
}

static uint64_t rng = 1234;
static int rand_id(int vocab)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (int)((rng >> 33) % (uint64_t)vocab);
}

/* One timed run of the test (p prompt tokens, n decode steps) after d tokens of depth: seconds,
 * or -1 with err set. */
static double run_test(eval_model *m, const bench_row *r, int kv_dtype, char *err, size_t errlen)
{
    model_weights *w = eval_model_weights(m);
    const model_config *c = &w->cfg;
    const int total = r->d + r->p + r->n, chunk = r->d > r->p ? r->d : r->p > 0 ? r->p : 1;
    int *ids = malloc(sizeof *ids * (size_t)(total + 1));
    if (!ids) return snprintf(err, errlen, "out of memory"), -1;
    for (int i = 0; i < total + 1; i++) ids[i] = rand_id(c->vocab_size);
    policy_params pp;
    memset(&pp, 0, sizeof pp);
    pp.budget = 1.0;
    pp.kv_dtype = kv_dtype >= 0 ? kv_dtype : (int)model_kv_dtype_default(w);
    kv_cache kv;
    engine e;
    memset(&kv, 0, sizeof kv);
    memset(&e, 0, sizeof e);
    double s = -1;
    if (kv_init(&kv, policy_find("full"), &pp, c->n_layers, c->n_kv_heads, c->n_heads, c->head_dim, total, 1, err,
                errlen) != 0) {
        free(ids);
        return -1;
    }
    if (engine_init(&e, w, &kv, chunk, r->t, err, errlen) != 0) goto done;
    int pos = 0;
    if (r->d > 0 && engine_prefill(&e, ids, r->d, 0, NULL, err, errlen) != 0) goto done;
    pos = r->d;
    const double t0 = cli_now_s();
    if (r->p > 0) {
        if (engine_prefill(&e, ids + pos, r->p, pos, NULL, err, errlen) != 0) goto done;
        pos += r->p;
    }
    for (int i = 0; i < r->n; i++, pos++)
        if (engine_decode(&e, ids[pos], pos, err, errlen) != 0) goto done;
    s = cli_now_s() - t0;
done:
    engine_free(&e);
    kv_free(&kv);
    free(ids);
    return s;
}

static void test_name(const bench_row *r, char *b, size_t n)
{
    if (r->p && r->n) snprintf(b, n, "pp%d+tg%d", r->p, r->n);
    else if (r->p) snprintf(b, n, "pp%d", r->p);
    else snprintf(b, n, "tg%d", r->n);
    if (r->d) snprintf(b + strlen(b), n - strlen(b), " @ d%d", r->d);
}

int cli_bench_main(int argc, char **argv)
{
    bench_opts o = {.reps = 5, .warmup = 1, .kv_dtype = -1, .out = "md"};
    int rc = parse(argc, argv, &o);
    if (rc) return rc == 1 ? 0 : rc;
    if (!o.np) o.p[o.np++] = 512;
    if (!o.nn) o.n[o.nn++] = 128;
    if (!o.nd) o.d[o.nd++] = 0;
    if (!o.nt) o.t[o.nt++] = cpu_num_cores();
    char err[LLM_ERR_LEN] = "";
    eval_model_opts mo = {.threads = o.t[0], .dtype = -1, .resident = 1};
    eval_model *m = eval_model_open(o.model, &mo, err, sizeof err);
    if (!m) return fprintf(stderr, "llm-run: %s\n", err), 1;
    model_weights *w = eval_model_weights(m);
    const model_config *c = &w->cfg;
    /* the rows: for each threads, depth: ppN, tgN, then the -pg pairs (llama-bench's order) */
    bench_row *rows = calloc((size_t)o.nt * o.nd * (o.np + o.nn + o.npg), sizeof *rows);
    int nr = 0;
    if (!rows) {
        eval_model_free(m);
        return cli_die("bench: out of memory");
    }
    for (int ti = 0; ti < o.nt; ti++)
        for (int di = 0; di < o.nd; di++) {
            for (int i = 0; i < o.np; i++)
                if (o.p[i]) rows[nr++] = (bench_row){.p = o.p[i], .d = o.d[di], .t = o.t[ti]};
            for (int i = 0; i < o.nn; i++)
                if (o.n[i]) rows[nr++] = (bench_row){.n = o.n[i], .d = o.d[di], .t = o.t[ti]};
            for (int i = 0; i < o.npg; i++)
                if (o.pg[i][0] || o.pg[i][1])
                    rows[nr++] = (bench_row){.p = o.pg[i][0], .n = o.pg[i][1], .d = o.d[di], .t = o.t[ti]};
        }
    int status = 0;
    const double gib = (double)model_weight_bytes(w, 0) / (1024.0 * 1024.0 * 1024.0);
    const double params = (double)c->vocab_size * c->hidden_size * (c->tie_word_embeddings ? 1 : 2) +
                          (double)c->n_layers * ((double)c->hidden_size * c->head_dim * (2 * c->n_heads + 2 * c->n_kv_heads) +
                                                 3.0 * c->hidden_size * c->intermediate_size + 2.0 * c->hidden_size +
                                                 (c->qkv_bias ? (double)c->head_dim * (c->n_heads + 2 * c->n_kv_heads) : 0) +
                                                 (c->o_bias ? c->hidden_size : 0)) +
                          c->hidden_size;   /* embeddings (and an untied head), layers with their biases, final norm */
    const char *name = strrchr(o.model, '/') ? strrchr(o.model, '/') + 1 : o.model;
    const char *dt = dtype_name(w->layers[0].w_up.dtype);
    const int md = !strcmp(o.out, "md"), csv = !strcmp(o.out, "csv"), json = !strcmp(o.out, "json");
    if (md) {
        printf("| model | size | params | backend | threads | test | t/s |\n");
        printf("| --- | ---: | ---: | --- | ---: | ---: | ---: |\n");
    } else if (csv) {
        printf("model_filename,model_type,model_size,model_n_params,n_threads,n_prompt,n_gen,n_depth,avg_ts,stddev_ts\n");
    } else if (json) {
        printf("[\n");
    }
    for (int k = 0; k < nr; k++) {
        bench_row *r = &rows[k];
        char tn[64];
        test_name(r, tn, sizeof tn);
        if (!(r->samples = malloc(sizeof *r->samples * (size_t)o.reps))) {
            status = 1;
            break;
        }
        if (r->d + r->p + r->n > c->max_position_embeddings)
            fprintf(stderr, "llm-run: bench: note: %s runs past the model's context of %d\n", tn, c->max_position_embeddings);
        if (o.warmup && run_test(m, r, o.kv_dtype, err, sizeof err) < 0) goto fail;
        double sum = 0, sum2 = 0;
        for (int i = 0; i < o.reps; i++) {
            if (o.progress) fprintf(stderr, "llm-run: bench: %s, %d threads: repetition %d of %d\n", tn, r->t, i + 1, o.reps);
            const double s = run_test(m, r, o.kv_dtype, err, sizeof err);
            if (s < 0) goto fail;
            r->samples[i] = (r->p + r->n) / s;
            sum += r->samples[i];
        }
        r->mean = sum / o.reps;
        for (int i = 0; i < o.reps; i++) sum2 += (r->samples[i] - r->mean) * (r->samples[i] - r->mean);
        r->sd = o.reps > 1 ? sqrt(sum2 / (o.reps - 1)) : 0;
        if (md) {
            printf("| %s %s | %.2f %s | %.2f M | CPU | %d | %s | %.2f ± %.2f |\n", name, dt, gib < 1 ? gib * 1024 : gib,
                   gib < 1 ? "MiB" : "GiB", params / 1e6, r->t, tn, r->mean, r->sd);
        } else if (csv) {
            printf("\"%s\",\"%s\",%llu,%.0f,%d,%d,%d,%d,%.6f,%.6f\n", o.model, dt,
                   (unsigned long long)model_weight_bytes(w, 0), params, r->t, r->p, r->n, r->d, r->mean, r->sd);
        } else {
            printf("%s{\"model_filename\": \"%s\", \"model_type\": \"%s\", \"model_size\": %llu, \"model_n_params\": %.0f, "
                   "\"n_threads\": %d, \"n_prompt\": %d, \"n_gen\": %d, \"n_depth\": %d, \"avg_ts\": %.6f, \"stddev_ts\": %.6f, "
                   "\"samples_ts\": [",
                   json && k ? ",\n  " : json ? "  " : "", o.model, dt, (unsigned long long)model_weight_bytes(w, 0),
                   params, r->t, r->p, r->n, r->d, r->mean, r->sd);
            for (int i = 0; i < o.reps; i++) printf(i ? ", %.6f" : "%.6f", r->samples[i]);
            printf("]}%s", json ? "" : "\n");
        }
        fflush(stdout);
    }
    if (json) printf("\n]\n");
    goto done;
fail:
    fprintf(stderr, "llm-run: bench: %s\n", err);
    status = 1;
done:
    for (int k = 0; k < nr; k++) free(rows[k].samples);
    free(rows);
    eval_model_free(m);
    if (fflush(stdout) != 0) {
        cli_die("stdout: write failed");
        status = 1;
    }
    return status;
}
