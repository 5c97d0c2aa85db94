/* A GGUF file as a model: hyper-parameters from its metadata (llama.cpp's key names, as written
 * by convert_hf_to_gguf.py) and its tensor names mapped to the Hugging Face names weights.c
 * binds, so nothing above this file needs to know which format a model came from. */
#include "model/internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define fail model_fail


/* <arch>.<suffix> as an int in [lo, hi]; required: absent is an error. Returns 1 present, 0
 * absent (not required), -1 error. */
static int arch_int(const gguf_file *g, const char *arch, const char *suffix, int required,
                    int64_t lo, int64_t hi, int *out, char *err, size_t errlen) {
    char key[160];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int64_t v;
    int rc = gguf_get_int(g, key, &v, err, errlen);
    if (rc < 0) return -1;
    if (rc == 0) return required ? fail(err, errlen, "%s: missing %s", g->path, key) : 0;
    if (v < lo || v > hi)
        return fail(err, errlen, "%s: %s = %lld is out of range [%lld, %lld]", g->path, key,
                    (long long)v, (long long)lo, (long long)hi);
    *out = (int)v;
    return 1;
}

static int arch_float(const gguf_file *g, const char *arch, const char *suffix, float *out,
                      char *err, size_t errlen) {
    char key[160];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    double v;
    int rc = gguf_get_float(g, key, &v, err, errlen);
    if (rc <= 0) return rc;
    if (!isfinite(v) || !isfinite((float)v))
        return fail(err, errlen, "%s: %s = %g is not a finite float", g->path, key, v);
    *out = (float)v;
    return 1;
}

int gguf_config(const gguf_file *g, model_config *cfg, char *err, size_t errlen) {
    char *arch = NULL;
    int rc = gguf_get_str(g, "general.architecture", &arch, err, errlen);
    if (rc <= 0) return rc < 0 ? -1 : fail(err, errlen, "%s: missing general.architecture", g->path);
    model_config c = {
        .max_position_embeddings = 2048, .rms_norm_eps = 1e-5f, .rope_theta = 10000.0f,
        .rope_scaling_factor = 1.0f, .bos_token_id = 1, .eos_token_id = 2,
    };
    if (!strcmp(arch, "llama")) c.arch = ARCH_LLAMA;
    else if (!strcmp(arch, "qwen2")) c.arch = ARCH_QWEN2, c.qkv_bias = 1;
    else {
        fail(err, errlen, "%s: architecture \"%.64s\" is not supported (llama and qwen2 are)", g->path, arch);
        free(arch);
        return -1;
    }
    const int64_t BIG = 1 << 24;
    int rope_dims = 0, experts = 0, head_dim_given;
    if (arch_int(g, arch, "block_count", 1, 1, 4096, &c.n_layers, err, errlen) < 0 ||
        arch_int(g, arch, "embedding_length", 1, 1, BIG, &c.hidden_size, err, errlen) < 0 ||
        arch_int(g, arch, "feed_forward_length", 1, 1, BIG, &c.intermediate_size, err, errlen) < 0 ||
        arch_int(g, arch, "attention.head_count", 1, 1, 4096, &c.n_heads, err, errlen) < 0 ||
        arch_int(g, arch, "context_length", 0, 1, INT32_MAX, &c.max_position_embeddings, err, errlen) < 0 ||
        arch_float(g, arch, "attention.layer_norm_rms_epsilon", &c.rms_norm_eps, err, errlen) < 0 ||
        arch_float(g, arch, "rope.freq_base", &c.rope_theta, err, errlen) < 0 ||
        arch_int(g, arch, "expert_count", 0, 0, 4096, &experts, err, errlen) < 0)
        goto bad;
    c.n_kv_heads = c.n_heads;
    if (arch_int(g, arch, "attention.head_count_kv", 0, 1, 4096, &c.n_kv_heads, err, errlen) < 0 ||
        (head_dim_given = arch_int(g, arch, "attention.key_length", 0, 1, 65536, &c.head_dim, err, errlen)) < 0 ||
        arch_int(g, arch, "rope.dimension_count", 0, 1, 65536, &rope_dims, err, errlen) < 0)
        goto bad;
    if (experts > 0) {
        fail(err, errlen, "%s: %s.expert_count = %d: mixture-of-experts models are not supported",
             g->path, arch, experts);
        goto bad;
    }
    int value_dim = 0;
    if (arch_int(g, arch, "attention.value_length", 0, 1, 65536, &value_dim, err, errlen) < 0) goto bad;
    if (head_dim_given && value_dim && value_dim != c.head_dim) {
        fail(err, errlen, "%s: %s.attention.value_length %d differs from key_length %d (not supported)",
             g->path, arch, value_dim, c.head_dim);
        goto bad;
    }
    /* RoPE scaling: none or linear; anything else refused until implemented */
    char *stype = NULL;
    char key[160];
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    if (gguf_get_str(g, key, &stype, err, errlen) < 0) goto bad;
    if (stype && strcmp(stype, "none") && strcmp(stype, "linear")) {
        fail(err, errlen, "%s: %s = \"%.32s\" is not supported (none, linear)", g->path, key, stype);
        free(stype);
        goto bad;
    }
    if (stype && !strcmp(stype, "linear")) {
        float f = 1.0f;
        if (arch_float(g, arch, "rope.scaling.factor", &f, err, errlen) < 0) { free(stype); goto bad; }
        if (!(f >= 1.0f)) {
            fail(err, errlen, "%s: %s.rope.scaling.factor = %g must be >= 1", g->path, arch, f);
            free(stype);
            goto bad;
        }
        c.rope_scaling_factor = f;
    }
    free(stype);
    const st_tensor *rf = st_find(&g->tensors, "rope_freqs.weight");
    const st_tensor *emb = st_find(&g->tensors, "token_embd.weight");
    if (!emb || emb->ndim != 2) {
        fail(err, errlen, "%s: missing 2-D tensor token_embd.weight", g->path);
        goto bad;
    }
    if (emb->shape[0] > INT32_MAX) {
        fail(err, errlen, "%s: token_embd.weight: vocabulary too large", g->path);
        goto bad;
    }
    c.vocab_size = (int)emb->shape[0];
    int64_t v;
    if ((rc = gguf_get_int(g, "tokenizer.ggml.bos_token_id", &v, err, errlen)) < 0) goto bad;
    if (rc) c.bos_token_id = v >= 0 && v < c.vocab_size ? (int)v : -1;
    if ((rc = gguf_get_int(g, "tokenizer.ggml.eos_token_id", &v, err, errlen)) < 0) goto bad;
    if (rc) c.eos_token_id = v >= 0 && v < c.vocab_size ? (int)v : -1;
    /* config_validate checks the ids against the vocabulary; a GGUF may lack a BOS (Qwen uses
     * none): keep it in range and let the tokenizer decide whether one is added */
    if (c.bos_token_id < 0) c.bos_token_id = c.eos_token_id >= 0 ? c.eos_token_id : 0;
    if (c.eos_token_id < 0) c.eos_token_id = c.bos_token_id;
    if (config_validate(&c, head_dim_given, g->path, err, errlen)) goto bad;
    if (rf) {
        /* Llama-3.1+ GGUFs carry their llama3 RoPE scaling as divisors of inv_freq (llama.cpp's
         * freq_factors): F32 [head_dim/2] */
        if (rf->dtype != DT_F32 || rf->ndim != 1 || rf->shape[0] != c.head_dim / 2 ||
            c.head_dim / 2 > MODEL_MAX_ROPE_FACTORS) {
            fail(err, errlen, "%s: rope_freqs.weight: expected F32 [%d] (head_dim / 2)", g->path, c.head_dim / 2);
            goto bad;
        }
        c.n_rope_factors = c.head_dim / 2;
        memcpy(c.rope_factors, rf->data, sizeof(float) * (size_t)c.n_rope_factors);
        for (int i = 0; i < c.n_rope_factors; i++)
            if (!(c.rope_factors[i] > 0) || !isfinite(c.rope_factors[i])) {
                fail(err, errlen, "%s: rope_freqs.weight[%d] = %g must be a positive number", g->path, i, c.rope_factors[i]);
                goto bad;
            }
    }
    if (rope_dims && rope_dims != c.head_dim) {
        fail(err, errlen, "%s: %s.rope.dimension_count = %d differs from head_dim %d (partial rotary "
             "embeddings are not supported)", g->path, arch, rope_dims, c.head_dim);
        goto bad;
    }
    free(arch);
    *cfg = c;
    return 0;
bad:
    free(arch);
    return -1;
}

/* GGUF tensor name → Hugging Face name (llama.cpp's tensor map for llama/qwen2). */
static int hf_name(const char *in, char *out, size_t outlen) {
    static const struct { const char *gguf, *hf; } top[] = {
        {"token_embd.weight", "model.embed_tokens.weight"},
        {"output_norm.weight", "model.norm.weight"},
        {"output.weight", "lm_head.weight"},
    };
    for (size_t i = 0; i < sizeof top / sizeof top[0]; i++)
        if (!strcmp(in, top[i].gguf)) return snprintf(out, outlen, "%s", top[i].hf) < (int)outlen;
    static const struct { const char *gguf, *hf; } blk[] = {
        {"attn_norm", "input_layernorm"},        {"attn_q", "self_attn.q_proj"},
        {"attn_k", "self_attn.k_proj"},          {"attn_v", "self_attn.v_proj"},
        {"attn_output", "self_attn.o_proj"},     {"ffn_norm", "post_attention_layernorm"},
        {"ffn_gate", "mlp.gate_proj"},           {"ffn_up", "mlp.up_proj"},
        {"ffn_down", "mlp.down_proj"},
    };
    int layer, n = 0;
    if (sscanf(in, "blk.%d.%n", &layer, &n) != 1 || n == 0 || layer < 0) return 0;
    const char *rest = in + n, *dot = strrchr(rest, '.');
    if (!dot || (strcmp(dot, ".weight") && strcmp(dot, ".bias"))) return 0;
    for (size_t i = 0; i < sizeof blk / sizeof blk[0]; i++)
        if (strlen(blk[i].gguf) == (size_t)(dot - rest) && !strncmp(rest, blk[i].gguf, (size_t)(dot - rest)))
            return snprintf(out, outlen, "model.layers.%d.%s%s", layer, blk[i].hf, dot) < (int)outlen;
    return 0;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const st_tensor *)a)->name, ((const st_tensor *)b)->name);
}

int gguf_map_names(gguf_file *g, char *err, size_t errlen) {
    st_file *t = &g->tensors;
    for (int i = 0; i < t->n_tensors; i++) {
        char hf[256];
        if (hf_name(t->tensors[i].name, hf, sizeof hf)) memcpy(t->tensors[i].name, hf, strlen(hf) + 1);
    }
    qsort(t->tensors, (size_t)t->n_tensors, sizeof *t->tensors, cmp_name);
    for (int i = 1; i < t->n_tensors; i++)
        if (!strcmp(t->tensors[i - 1].name, t->tensors[i].name))
            return fail(err, errlen, "%s: two tensors map to %s", g->path, t->tensors[i].name);
    return 0;
}

/* llama.cpp's converter stores the q/k rows of architecture llama interleaved for its RoPE
 * (convert_hf_to_gguf.py LlamaModel.permute: per head, rows (half, j) → (j, half)); the HF
 * order is GGUF row h·hd + 2j + half at HF row h·hd + half·hd/2 + j. Copies w with the rows
 * put back (any dtype: rows are whole blocks). */
static int unpermute_rows(model_weights *m, weight_t *w, int n_heads, int head_dim, char *err, size_t errlen) {
    if (!w->data) return 0;
    size_t rb = dtype_row_bytes(w->dtype, w->cols);
    char *out = model_alloc_weight(rb * (size_t)w->rows);
    if (!out) return fail(err, errlen, "out of memory un-permuting a [%d, %d] weight", w->rows, w->cols);
    const char *in = w->data;
    int half = head_dim / 2;
    for (int h = 0; h < n_heads; h++)
        for (int hf = 0; hf < 2; hf++)
            for (int j = 0; j < half; j++) {
                size_t dst = (size_t)h * head_dim + (size_t)hf * half + j;
                size_t src = (size_t)h * head_dim + 2 * (size_t)j + hf;
                memcpy(out + dst * rb, in + src * rb, rb);
            }
    m->owned[m->n_owned++] = out;
    w->data = out;
    return 0;
}

int gguf_unpermute_qk(model_weights *m, char *err, size_t errlen) {
    const model_config *c = &m->cfg;
    if (model_reserve_owned(m, 4 * (size_t)c->n_layers, err, errlen)) return -1;
    for (int l = 0; l < c->n_layers; l++) {
        layer_weights *lw = &m->layers[l];
        /* a bias is a [1][n] "matrix": permute its n elements as rows of one element */
        weight_t bq = lw->bq, bk = lw->bk;
        bq.rows = bq.cols, bq.cols = 1;
        bk.rows = bk.cols, bk.cols = 1;
        if (unpermute_rows(m, &lw->wq, c->n_heads, c->head_dim, err, errlen) ||
            unpermute_rows(m, &lw->wk, c->n_kv_heads, c->head_dim, err, errlen) ||
            (lw->bq.data && unpermute_rows(m, &bq, c->n_heads, c->head_dim, err, errlen)) ||
            (lw->bk.data && unpermute_rows(m, &bk, c->n_kv_heads, c->head_dim, err, errlen)))
            return -1;
        lw->bq.data = bq.data;
        lw->bk.data = bk.data;
    }
    return 0;
}
