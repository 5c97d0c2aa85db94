/* dump.c — --dump-kept: which prompt positions each (layer, KV head) of the cache holds, after
 * the prefill and every N decode steps, as JSON lines (scripts/plot_kept.py draws them). */
#include "eval/eval.h"
#include "eviction/eviction.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int eval_dump_kept(const eval_dump *d, const void *kvp, int n_prompt, int step)
{
    const kv_cache *kv = kvp;
    if (!d || !d->f) return 0;
    cJSON *j = d->head ? cJSON_Duplicate((const cJSON *)d->head, 1) : cJSON_CreateObject();
    if (!j) return -1;
    cJSON_AddNumberToObject(j, "step", step);
    cJSON_AddNumberToObject(j, "n_prompt", n_prompt);
    cJSON_AddNumberToObject(j, "n_layers", kv->n_layers);
    cJSON_AddNumberToObject(j, "n_kv_heads", kv->n_kv_heads);
    cJSON *kept = cJSON_AddArrayToObject(j, "kept");
    int max_len = 1;
    for (int i = 0; i < kv->n_layers * kv->n_kv_heads; i++)
        if (kv->len[i] > max_len) max_len = kv->len[i];
    int *buf = malloc(sizeof *buf * (size_t)max_len);
    if (!buf) {
        cJSON_Delete(j);
        return -1;
    }
    for (int l = 0; l < kv->n_layers; l++) {
        cJSON *row = cJSON_CreateArray();
        for (int g = 0; g < kv->n_kv_heads; g++) {
            const int32_t *pos = kv_positions(kv, l, g);
            int n = 0, len = kv_len(kv, l, g);
            for (int s = 0; s < len; s++)
                if (pos[s] < n_prompt) buf[n++] = pos[s];
            qsort(buf, (size_t)n, sizeof *buf, cmp_int);
            cJSON_AddItemToArray(row, cJSON_CreateIntArray(buf, n));
        }
        cJSON_AddItemToArray(kept, row);
    }
    free(buf);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!s) return -1;
    FILE *f = d->f;
    int rc = fputs(s, f) < 0 || fputc('\n', f) == EOF || fflush(f) != 0 ? -1 : 0;
    free(s);
    return rc;
}
