/* run_report.c — what `llm-run` writes besides the text: the --logits-out .npy header, the
 * --json object and the stderr summary in llama.cpp's shape (split out of run.c). */
#include "cli/cli.h"
#include "model/cuda/cuda_engine.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

int cli_npy_stream_header(cli_npy_stream *s)
{
    char hdr[128];
    int n = snprintf(hdr + 10, sizeof hdr - 10,
                     "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld, %lld), }",
                     (long long)s->rows, (long long)s->cols);
    memset(hdr + 10 + n, ' ', sizeof hdr - 10 - n);
    hdr[sizeof hdr - 1] = '\n';
    memcpy(hdr, "\x93NUMPY\x01\x00", 8);
    hdr[8] = (char)((sizeof hdr - 10) & 0xff);
    hdr[9] = (char)((sizeof hdr - 10) >> 8);
    if (fseek(s->f, 0, SEEK_SET) != 0) return -1;
    return fwrite(hdr, 1, sizeof hdr, s->f) == sizeof hdr ? 0 : -1;
}

void cli_run_print_json(const run_options *o, const kv_cache *kv, const gen_result *g, const char *text,
                       const kv_stats *st, int use_cuda, const engine *eng, int chunk, double load_s,
                       int budget_cap)
{
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "text", text);
    cJSON_AddItemToObject(j, "tokens", cJSON_CreateIntArray(g->tokens, g->n_gen));
    cJSON_AddNumberToObject(j, "n_prompt_tokens", g->n_prompt);
    cJSON_AddNumberToObject(j, "n_generated_tokens", g->n_gen);
    cJSON_AddStringToObject(j, "device", use_cuda ? "cuda" : "cpu");
    cJSON_AddStringToObject(j, "stop", g->stop);
    cJSON_AddNumberToObject(j, "seed", (double)o->seed);   /* the one drawn for -s -1 too */
    /* the OpenMP wait this run got (cli/runtime.c: "spin" or "passive", or what the user set) */
    const char *wp = getenv("OMP_WAIT_POLICY"), *sc = getenv("GOMP_SPINCOUNT");
    cJSON_AddStringToObject(j, "omp_wait", wp ? wp : sc ? "spin" : "default");
    cJSON *tm = cJSON_AddObjectToObject(j, "timings");
    cJSON_AddNumberToObject(tm, "load_ms", load_s * 1e3);
    cJSON_AddNumberToObject(tm, "prefill_ms", g->prefill_s * 1e3);
    cJSON_AddNumberToObject(tm, "decode_ms", g->decode_s * 1e3);
    cJSON_AddNumberToObject(tm, "prefill_tok_s", g->prefill_s > 0 ? g->n_prompt / g->prefill_s : 0);
    cJSON_AddNumberToObject(tm, "decode_tok_s",
                            g->decode_s > 0 && g->n_decode_steps > 0 ? g->n_decode_steps / g->decode_s : 0);
    cJSON_AddNumberToObject(tm, "decode_step_ms_median", gen_step_ms_quantile(g, 0.5));
    cJSON_AddNumberToObject(tm, "decode_step_ms_p90", gen_step_ms_quantile(g, 0.9));
    cJSON *wj = cJSON_AddObjectToObject(j, "weights");
    cJSON_AddNumberToObject(wj, "bytes", (double)model_weight_bytes(eng->w, 0));
    cJSON_AddNumberToObject(wj, "bytes_per_token", (double)model_weight_bytes(eng->w, 1));
    cJSON_AddStringToObject(wj, "dtype", dtype_name(eng->w->layers[0].w_up.dtype));
    /* the RoPE the run used (the model's, or --rope-freq-base / --rope-freq-scale's) */
    const model_config *c = &eng->w->cfg;
    cJSON *mj = cJSON_AddObjectToObject(j, "model");
    cJSON_AddNumberToObject(mj, "context", c->max_position_embeddings);
    cJSON_AddNumberToObject(mj, "rope_theta", c->rope_theta);
    cJSON_AddNumberToObject(mj, "rope_freq_scale", 1.0 / c->rope_scaling_factor);
    cJSON *k = cJSON_AddObjectToObject(j, "kv");
    cJSON_AddStringToObject(k, "policy", kv->ops->name);
    cJSON_AddStringToObject(k, "kv_dtype", kv_dtype_name(kv->kv_dtype));
    cJSON_AddNumberToObject(k, "budget", o->pp.budget);
    cJSON_AddNumberToObject(k, "capacity", kv->cap[0]);
    cJSON_AddNumberToObject(k, "budget_capacity", budget_cap);   /* what the budget alone gives */
    int raised = 1;
    for (int i = 0; i < kv->n_layers * kv->n_kv_heads; i++) raised &= kv->cap[i] > budget_cap;
    cJSON_AddBoolToObject(k, "capacity_raised", raised);
    cJSON_AddNumberToObject(k, "peak_bytes", st->peak_bytes);
    cJSON_AddNumberToObject(k, "avg_bytes", st->avg_bytes);
    cJSON_AddNumberToObject(k, "full_bytes", st->full_bytes);
    cJSON_AddNumberToObject(k, "allocated_bytes", (double)kv_bytes_allocated(kv));
    cJSON_AddNumberToObject(k, "sketch_bytes", (double)st->sketch_bytes);
    if (eng->dev) /* GPU: everything the engine allocated (weights, cache, scratch) */
        cJSON_AddNumberToObject(k, "device_bytes", (double)cuda_engine_device_bytes(eng->dev));
    cJSON_AddNumberToObject(k, "live_peak_tokens", st->peak_tokens);
    cJSON_AddNumberToObject(k, "live_avg_tokens", st->avg_tokens);
    cJSON_AddNumberToObject(k, "full_avg_tokens", st->full_avg_tokens);
    cJSON_AddNumberToObject(k, "evictions", (double)kv->evictions);
    cJSON_AddStringToObject(k, "rope", o->pp.rope_shifted ? "shifted" : "absolute");
    cJSON_AddNumberToObject(k, "prefill_chunk", chunk);
    cJSON *lc = cJSON_AddArrayToObject(k, "layer_capacities");
    cJSON *hc = cJSON_AddArrayToObject(k, "head_capacities");
    for (int l = 0; l < kv->n_layers; l++) {
        double sum = 0;
        cJSON *row = cJSON_CreateArray();
        for (int h = 0; h < kv->n_kv_heads; h++) {
            sum += kv->cap[l * kv->n_kv_heads + h];
            cJSON_AddItemToArray(row, cJSON_CreateNumber(kv->cap[l * kv->n_kv_heads + h]));
        }
        cJSON_AddItemToArray(lc, cJSON_CreateNumber(sum / kv->n_kv_heads));
        cJSON_AddItemToArray(hc, row);
    }
    char *s = cJSON_PrintUnformatted(j);
    if (s) printf("%s\n", s);
    free(s);
    cJSON_Delete(j);
}

/* The summary in llama.cpp's familiar shape (load, prompt eval, eval, total) plus the KV line. */
void cli_run_print_summary(const kv_cache *kv, const gen_result *g, const kv_stats *st, double load_s)
{
    double pt = g->prefill_s * 1e3, dt = g->decode_s * 1e3;
    int steps = g->n_decode_steps;
    fprintf(stderr,
            "load time   = %10.2f ms\n"
            "prompt eval = %10.2f ms / %6d tokens (%8.2f ms per token, %8.2f tokens per second)\n"
            "eval        = %10.2f ms / %6d runs   (%8.2f ms per token, %8.2f tokens per second)\n"
            "total time  = %10.2f ms / %6d tokens\n"
            "kv: policy %s, %s, capacity %d tokens/head, %lld evictions | peak %.1f KiB (full %.1f KiB, %.2fx) | "
            "avg %.1f KiB (full %.1f KiB, %.2fx)\n",
            load_s * 1e3, pt, g->n_prompt, g->n_prompt ? pt / g->n_prompt : 0, pt > 0 ? g->n_prompt / pt * 1e3 : 0,
            dt, steps, steps ? dt / steps : 0, dt > 0 && steps ? steps / dt * 1e3 : 0,
            load_s * 1e3 + pt + dt, g->n_prompt + g->n_gen,
            kv->ops->name, kv_dtype_name(kv->kv_dtype), kv->cap[0], (long long)kv->evictions, st->peak_bytes / 1024, st->full_bytes / 1024,
            st->peak_bytes > 0 ? st->full_bytes / st->peak_bytes : 0, st->avg_bytes / 1024,
            st->full_avg_bytes / 1024, st->avg_bytes > 0 ? st->full_avg_bytes / st->avg_bytes : 0);
}
