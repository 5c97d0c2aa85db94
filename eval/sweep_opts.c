/* sweep_opts.c — the settings of `llm-run eval` (eval_opts; the command line is cli/eval.c's):
 * defaults, the policy parameters of each policy, and the records of a sweep folder: run.json
 * (which keeps a rerun from mixing results of other settings into it), expected.json (the
 * cells eval-merge checks) and the advisory lock that keeps two sweeps out of one folder. */
#include "eval/sweep.h"
#include "eval/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

void eval_opts_init(eval_opts *o)
{
    memset(o, 0, sizeof *o);
    o->task = -1;
    o->shard_n = 1;
    o->dtype = -1;
    o->kv_dtype = -1;
    o->act_bits = 16;
    o->chat = -1;
    o->max_new = 0;
    static const double depths[] = {0, 0.25, 0.5, 0.75, 1};
    for (int i = 0; i < 5; i++) o->depths[i] = depths[i];
    o->n_depths = 5;
    o->lengths[0] = 1024;
    o->lengths[1] = 2048;
    o->n_lengths = 2;
    o->samples = 4;
    o->dump_every = 16;
    o->margin = -1;
}

const char *sweep_baseline_name(int task) { return task == EVAL_TASK_LITM ? "closedbook" : "nocontext"; }

static int has_param(const policy_ops *ops, const char *name)
{
    for (const policy_param_def *d = ops->param_defs; d && d->name; d++)
        if (!strcmp(d->name, name) || (d->generic && !strcmp(d->generic, name))) return 1;
    return 0;
}

int sweep_policy_params(const eval_opts *o, const policy_ops *ops, policy_params *pp, char *err, size_t errlen)
{
    memset(pp, 0, sizeof *pp);
    if (o->preset) {
        const policy_ops *pops = NULL;
        policy_params tmp;
        memset(&tmp, 0, sizeof tmp);
        if (policy_preset_load(o->preset, &pops, &tmp, err, errlen) != 0) return -1;
        if (pops == ops) {
            pp->n_set = tmp.n_set;
            memcpy(pp->set, tmp.set, sizeof tmp.set);
        }
    }
    for (int k = 0; k < o->n_params; k++)
        if (has_param(ops, o->param_name[k]) &&
            policy_params_set(pp, ops, o->param_name[k], o->param_value[k], err, errlen) != 0)
            return -1;
    return 0;
}

int sweep_lock_dir(const char *dir, char *err, size_t errlen)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%.400s: cannot open: %s", dir, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK)
            snprintf(err, errlen, "%.400s: another llm-run eval is writing here (its lock is held); wait for it or use another --out", dir);
        else
            snprintf(err, errlen, "%.400s: cannot lock: %s", dir, strerror(e));
        return -1;
    }
    return fd;
}

int sweep_write_expected(const char *dir, const char *const *ids, int n_ids, const eval_opts *o,
                         char *err, size_t errlen)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddItemToObject(j, "ids", cJSON_CreateStringArray(ids, n_ids));
    cJSON_AddItemToObject(j, "policies", cJSON_CreateStringArray(o->policies, o->n_policies));
    cJSON_AddItemToObject(j, "budgets", cJSON_CreateDoubleArray(o->budgets, o->n_budgets));
    cJSON *extra = cJSON_AddArrayToObject(j, "extra");
    if (o->baseline) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "policy", sweep_baseline_name(o->task));
        cJSON_AddNumberToObject(e, "budget", 1);
        cJSON_AddItemToArray(extra, e);
    }
    char path[PATH_MAX + 32], tmp[PATH_MAX + 48];
    snprintf(path, sizeof path, "%s/expected.json", dir);
    snprintf(tmp, sizeof tmp, "%s/.expected.json.tmp", dir);
    /* {"runs": [...]}: every distinct run into this folder (a grid made of several sweeps) */
    cJSON *all = NULL;
    FILE *in = fopen(path, "rb");
    if (in) {
        fseek(in, 0, SEEK_END);
        long sz = ftell(in);
        fseek(in, 0, SEEK_SET);
        char *b = sz > 0 ? malloc((size_t)sz + 1) : NULL;
        if (b && fread(b, 1, (size_t)sz, in) == (size_t)sz) {
            b[sz] = '\0';
            all = cJSON_Parse(b);
        }
        free(b);
        fclose(in);
    }
    if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(all, "runs"))) {
        cJSON_Delete(all);
        all = cJSON_CreateObject();
        cJSON_AddArrayToObject(all, "runs");
    }
    cJSON *runs = cJSON_GetObjectItemCaseSensitive(all, "runs"), *it;
    int have = 0;
    cJSON_ArrayForEach(it, runs) have |= cJSON_Compare(it, j, 1);
    if (!have) cJSON_AddItemToArray(runs, j);
    else cJSON_Delete(j);
    char *s = cJSON_PrintUnformatted(all);
    cJSON_Delete(all);
    FILE *f = fopen(tmp, "wb");
    int bad = !s || !f || fprintf(f, "%s\n", s) < 0;
    if (f && fclose(f) != 0) bad = 1;
    free(s);
    if (bad || rename(tmp, path) != 0) {
        snprintf(err, errlen, "%.400s: cannot write: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* OUT/run.json: the settings a results file depends on. A rerun with other settings into the
 * same folder is refused (policies, budgets, --limit and --shard may change). */
int sweep_check_run_config(const char *dir, const eval_opts *o, const char *style, int max_new,
                           const char *chat, char *err, size_t errlen)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/run.json", dir);
    /* data and model as given (relative paths stay valid in another checkout) */
    cJSON *cfg = cJSON_CreateObject();
    cJSON_AddStringToObject(cfg, "task", eval_task_name(o->task));
    cJSON_AddStringToObject(cfg, "data", o->data);
    cJSON_AddStringToObject(cfg, "model", o->model);
    if (eval_task_is_ppl(o->task)) {
        cJSON_AddNumberToObject(cfg, "window", o->window);
        if (o->prefill_chunk > 1) cJSON_AddNumberToObject(cfg, "prefill_chunk", o->prefill_chunk);
    } else {
        cJSON_AddStringToObject(cfg, "prompt_style", style);
        cJSON_AddNumberToObject(cfg, "max_new_tokens", max_new);
        cJSON_AddStringToObject(cfg, "fit", o->fit_skip ? "skip" : "truncate");
        cJSON_AddNumberToObject(cfg, "prefill_chunk", o->prefill_chunk);
    }
    cJSON_AddStringToObject(cfg, "rope", o->rope_shifted ? "shifted" : "absolute");
    cJSON_AddStringToObject(cfg, "budget_ref", o->budget_ref_prompt ? "prompt" : "total");
    cJSON_AddNumberToObject(cfg, "seed", (double)o->seed);
    /* since issue 16; a run.json without them had their defaults (dtype_name: kernels) */
    static const char *const DT[] = {"f32", "f16", "bf16", "q8_0", "q4_0"};
    const int DTV[] = {DT_F32, DT_F16, DT_BF16, DT_Q8_0, DT_Q4_0};
    const char *dt = "auto";
    for (int i = 0; i < 5; i++)
        if (o->dtype == DTV[i]) dt = DT[i];
    cJSON_AddStringToObject(cfg, "dtype", dt);
    cJSON_AddStringToObject(cfg, "kv_dtype", o->kv_dtype == DT_F32 ? "f32" : o->kv_dtype == DT_F16 ? "f16"
                                             : o->kv_dtype == DT_BF16 ? "bf16" : "auto");
    /* since issue 17: a run.json without it ran the 8-bit activations of before */
    cJSON_AddNumberToObject(cfg, "act_bits", o->act_bits);
    /* llama.cpp's RoPE overrides, only when given (a run.json without them had none) */
    if (o->open.rope_freq_base > 0) cJSON_AddNumberToObject(cfg, "rope_freq_base", o->open.rope_freq_base);
    if (o->open.rope_scaling_none) cJSON_AddStringToObject(cfg, "rope_scaling", "none");
    else if (o->open.rope_freq_scale > 0) cJSON_AddNumberToObject(cfg, "rope_freq_scale", o->open.rope_freq_scale);
    if (!eval_task_is_ppl(o->task)) {
        cJSON_AddStringToObject(cfg, "chat", chat ? chat : "none");
        cJSON_AddStringToObject(cfg, "question_position", o->question_first ? "first" : "last");
    }
    cJSON *pp = cJSON_AddObjectToObject(cfg, "policy_params");
    for (int k = 0; k < o->n_params; k++) cJSON_AddStringToObject(pp, o->param_name[k], o->param_value[k]);
    if (o->preset) cJSON_AddStringToObject(cfg, "policy_config", o->preset);
    else cJSON_AddNullToObject(cfg, "policy_config");
    int rc = 0, exists;
    cJSON *old = eval_read_json(path, &exists);
    if (exists && old) {
        /* keys an older run.json lacks count as their default */
        static const char *const DEF[][2] = {{"dtype", "\"auto\""}, {"chat", "\"none\""},
                                             {"question_position", "\"last\""}, {"policy_params", "{}"},
                                             {"policy_config", "null"}, {"act_bits", "8"}};
        for (size_t i = 0; i < sizeof DEF / sizeof DEF[0]; i++)
            if (!cJSON_GetObjectItemCaseSensitive(old, DEF[i][0]) && cJSON_GetObjectItemCaseSensitive(cfg, DEF[i][0]))
                cJSON_AddItemToObject(old, DEF[i][0], cJSON_Parse(DEF[i][1]));
    }
    if (exists) {
        if (!old || !cJSON_Compare(old, cfg, 1)) {
            const cJSON *it;
            const char *what = "?";
            cJSON_ArrayForEach(it, cfg) {
                const cJSON *ov = old ? cJSON_GetObjectItemCaseSensitive(old, it->string) : NULL;
                if (!ov || !cJSON_Compare(ov, it, 1)) {
                    what = it->string;
                    break;
                }
            }
            if (!strcmp(what, "?") && old)   /* a key the folder's run.json has and this run does not */
                cJSON_ArrayForEach(it, old) if (!cJSON_GetObjectItemCaseSensitive(cfg, it->string)) {
                    what = it->string;
                    break;
                }
            snprintf(err, errlen, "%.300s: this folder holds results of another configuration (%s differs); use another --out",
                     path, what);
            rc = -1;
        }
        cJSON_Delete(old);
    } else {
        char *s = cJSON_Print(cfg);
        FILE *f = fopen(path, "wb");
        if (!f || !s || fprintf(f, "%s\n", s) < 0 || fclose(f) != 0) {
            snprintf(err, errlen, "%.400s: cannot write: %s", path, strerror(errno));
            rc = -1;
        }
        free(s);
    }
    cJSON_Delete(cfg);
    return rc;
}
