/* Fuzz target: the sharded-index reader (st_index_parse, used by model_load for
 * model.safetensors.index.json). On success the shard list must hold each distinct file name
 * of weight_map once, sorted, none leaving the model folder, and st_index_shard must map every listed
 * tensor to one of them. */
#include "fuzz/fuzz.h"
#include "model/model.h"

#include <cjson/cJSON.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    st_index ix;
    char err[LLM_ERR_LEN] = "";
    if (st_index_parse((const char *)data, size, "fuzz/model.safetensors.index.json", &ix, err,
                       sizeof err) != 0) {
        fuzz_check_err(err);
        if (ix.root || ix.shards || ix.n_shards) fuzz_fail("failed parse left state behind", err);
        st_index_free(&ix);
        return 0;
    }
    for (int i = 0; i < ix.n_shards; i++) {
        const char *s = ix.shards[i];
        if (!s[0]) fuzz_fail("empty shard name", "");
        if (s[0] == '/' || !strcmp(s, "..") || !strncmp(s, "../", 3) || strstr(s, "/../") ||
            (strlen(s) >= 3 && !strcmp(s + strlen(s) - 3, "/..")))
            fuzz_fail("shard outside the model folder", s);
        if (i > 0 && strcmp(ix.shards[i - 1], s) >= 0) fuzz_fail("shards not sorted and unique", s);
    }
    for (const cJSON *e = ix.weight_map->child; e; e = e->next) {
        const char *s = e->valuestring;   /* st_index_shard gives the first of duplicate keys */
        int lo = 0, hi = ix.n_shards - 1, found = 0;
        while (!found && lo <= hi) {
            int mid = (lo + hi) / 2, c = strcmp(s, ix.shards[mid]);
            if (c == 0) found = 1;
            else if (c < 0) hi = mid - 1;
            else lo = mid + 1;
        }
        if (!found) fuzz_fail("listed tensor maps to no shard", e->string);
        if (!st_index_shard(&ix, e->string)) fuzz_fail("st_index_shard finds nothing", e->string);
    }
    st_index_free(&ix);
    return 0;
}
