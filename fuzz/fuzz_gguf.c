/* Fuzz target: the GGUF header parser (gguf_parse, used by gguf_open on the mmap) and the
 * metadata readers above it (gguf_config, gguf_map_names, every typed getter). The input is a
 * whole .gguf file. On success: every tensor lies inside the input's data section with nbytes =
 * rows × the row bytes of its type (its first and last bytes are read, so AddressSanitizer
 * catches a pointer outside the input), names are unique and st_find finds each one, every
 * metadata value can be read with the getter of its type without leaving the input. On failure:
 * one non-empty line. */
#include "fuzz/fuzz.h"
#include "model/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gguf_file g;
    char err[LLM_ERR_LEN] = "";
    if (gguf_parse(data, size, "fuzz.gguf", &g, err, sizeof err) != 0) {
        fuzz_check_err(err);
        if (g.kv || g.n_kv || g.tensors.tensors) fuzz_fail("failed parse left state behind", err);
        return 0;
    }
    const uint8_t *buf0 = data + g.data_offset, *buf1 = data + size;
    volatile uint8_t sink = 0;
    for (int i = 0; i < g.tensors.n_tensors; i++) {
        const st_tensor *t = &g.tensors.tensors[i];
        if (st_find(&g.tensors, t->name) != t) fuzz_fail("st_find does not find", t->name);
        if (t->ndim < 1 || t->ndim > 4) fuzz_fail("ndim out of range", t->name);
        uint64_t rows = 1;
        for (int d = 0; d < t->ndim - 1; d++) rows *= (uint64_t)t->shape[d];
        if (rows * dtype_row_bytes(t->dtype, t->shape[t->ndim - 1]) != t->nbytes)
            fuzz_fail("nbytes != rows * row bytes", t->name);
        const uint8_t *p = t->data;
        if (p < buf0 || p + t->nbytes > buf1) fuzz_fail("tensor outside the data section", t->name);
        if ((size_t)(p - buf0) % g.alignment) fuzz_fail("tensor not aligned", t->name);
        sink ^= p[0] ^ p[t->nbytes - 1];
    }
    for (int i = 0; i < g.n_kv; i++) {
        const gguf_kv *kv = &g.kv[i];
        char e2[LLM_ERR_LEN] = "";
        if (gguf_find(&g, kv->key) != kv) fuzz_fail("gguf_find does not find", kv->key);
        int64_t iv;
        double dv;
        char *s = NULL, **sa = NULL;
        double *na = NULL;
        int n = 0, rc;
        if (kv->type == GGUF_TYPE_STRING) {
            if ((rc = gguf_get_str(&g, kv->key, &s, e2, sizeof e2)) != 1) fuzz_fail("string getter", kv->key);
            free(s);
        } else if (kv->type == GGUF_TYPE_ARRAY) {
            rc = kv->arr_type == GGUF_TYPE_STRING ? gguf_get_str_array(&g, kv->key, &sa, &n, e2, sizeof e2)
                                                  : gguf_get_num_array(&g, kv->key, &na, &n, e2, sizeof e2);
            if (rc != 1 || (uint64_t)n != kv->n) fuzz_fail("array getter", kv->key);
            gguf_free_str_array(sa, n);
            free(na);
        } else if (kv->type == GGUF_TYPE_FLOAT32 || kv->type == GGUF_TYPE_FLOAT64) {
            if (gguf_get_float(&g, kv->key, &dv, e2, sizeof e2) != 1) fuzz_fail("float getter", kv->key);
        } else if (gguf_get_int(&g, kv->key, &iv, e2, sizeof e2) < 0) {
            fuzz_check_err(e2);   /* a uint64 above INT64_MAX */
        }
    }
    model_config cfg;
    err[0] = '\0';
    if (gguf_config(&g, &cfg, err, sizeof err) != 0) fuzz_check_err(err);
    else if (cfg.n_heads <= 0 || cfg.head_dim <= 0 || cfg.vocab_size <= 0 || cfg.n_heads % cfg.n_kv_heads)
        fuzz_fail("gguf_config accepted an invalid config", "");
    err[0] = '\0';
    if (gguf_map_names(&g, err, sizeof err) != 0) fuzz_check_err(err);
    (void)sink;
    gguf_close(&g);
    return 0;
}
