/* config.json → model_config (Hugging Face LlamaForCausalLM). */
#include "model/internal.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define fail model_fail

#define CONFIG_MAX_BYTES (16 << 20)



/* Optional integer field: absent or null keeps *out. Returns -1 with err set when the value
 * is not an integer in int range. */
static int get_int(const cJSON *root, const char *key, int *out, const char *path,
                   char *err, size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return 0;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!(d == floor(d) && d >= -2147483648.0 && d <= 2147483647.0))
        return fail(err, errlen, "%s: %s must be an integer", path, key);
    *out = (int)d;
    return 0;
}

/* Optional boolean: true/false (or 0/1). */
static int get_bool(const cJSON *root, const char *key, int *out, const char *path,
                    char *err, size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (cJSON_IsBool(v)) {
        *out = cJSON_IsTrue(v);
        return 0;
    }
    if (get_int(root, key, out, path, err, errlen)) return -1;
    *out = *out != 0;
    return 0;
}

static int get_float(const cJSON *root, const char *key, float *out, const char *path,
                     char *err, size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return fail(err, errlen, "%s: %s must be a number", path, key);
    if (!isfinite((float)v->valuedouble))
        return fail(err, errlen, "%s: %s=%g is out of the float range", path, key, v->valuedouble);
    *out = (float)v->valuedouble;
    return 0;
}

static int require_int(const cJSON *root, const char *key, int *out, const char *path,
                       char *err, size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v || cJSON_IsNull(v)) return fail(err, errlen, "%s: missing %s", path, key);
    return get_int(root, key, out, path, err, errlen);
}

static int parse_rope_scaling(const cJSON *root, model_config *c, const char *path,
                              char *err, size_t errlen) {
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    c->rope_scaling_factor = 1.0f;
    if (!rs || cJSON_IsNull(rs)) return 0;
    if (!cJSON_IsObject(rs)) return fail(err, errlen, "%s: rope_scaling must be an object or null", path);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(rs, "type");
    if (!t) t = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!cJSON_IsString(t)) return fail(err, errlen, "%s: rope_scaling has no type", path);
    if (!strcmp(t->valuestring, "llama3")) {
        /* Llama-3.1: factor, low_freq_factor, high_freq_factor, original_max_position_embeddings;
         * the per-frequency divisors are computed once head_dim is known (config_validate) */
        const char *keys[] = {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"};
        double v[4];
        for (int i = 0; i < 4; i++) {
            const cJSON *x = cJSON_GetObjectItemCaseSensitive(rs, keys[i]);
            if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) || !(x->valuedouble > 0))
                return fail(err, errlen, "%s: rope_scaling.%s must be a positive number (llama3)", path, keys[i]);
            v[i] = x->valuedouble;
        }
        if (!(v[2] > v[1]))
            return fail(err, errlen, "%s: rope_scaling: high_freq_factor %g must exceed low_freq_factor %g", path, v[2], v[1]);
        c->llama3_factor = (float)v[0];
        c->llama3_low = (float)v[1];
        c->llama3_high = (float)v[2];
        c->llama3_orig_ctx = (int)v[3];
        return 0;
    }
    if (strcmp(t->valuestring, "linear") != 0)
        return fail(err, errlen, "%s: rope_scaling type \"%.64s\" is not supported (linear and llama3 are)",
                    path, t->valuestring);
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(rs, "factor");
    if (!cJSON_IsNumber(f) || !isfinite((float)f->valuedouble))
        return fail(err, errlen, "%s: rope_scaling.factor must be a number in the float range", path);
    if (f->valuedouble < 1.0)
        return fail(err, errlen, "%s: rope_scaling.factor=%g must be >= 1", path, f->valuedouble);
    c->rope_scaling_factor = (float)f->valuedouble;
    return 0;
}

static int parse_eos(const cJSON *root, model_config *c, const char *path, char *err, size_t errlen) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "eos_token_id");
    if (!cJSON_IsArray(v)) return get_int(root, "eos_token_id", &c->eos_token_id, path, err, errlen);
    const cJSON *first = cJSON_GetArrayItem(v, 0);
    if (!cJSON_IsNumber(first) || first->valuedouble != floor(first->valuedouble) ||
        first->valuedouble < 0 || first->valuedouble > 2147483647.0)
        return fail(err, errlen, "%s: eos_token_id must be an integer or a non-empty list of integers", path);
    c->eos_token_id = (int)first->valuedouble;
    return 0;
}

/* model_type / architectures / hidden_act / biases / sliding window: what we run, or a refusal
 * naming what we do not (never a silent wrong model). */
static int parse_arch(const cJSON *root, model_config *c, const char *path, char *err, size_t errlen) {
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    const char *type = cJSON_IsString(mt) ? mt->valuestring : "llama";
    if (mt && !cJSON_IsString(mt) && !cJSON_IsNull(mt)) return fail(err, errlen, "%s: model_type must be a string", path);
    int mistral = 0;
    if (!strcmp(type, "llama")) c->arch = ARCH_LLAMA;
    else if (!strcmp(type, "mistral")) c->arch = ARCH_LLAMA, mistral = 1;
    else if (!strcmp(type, "qwen2")) c->arch = ARCH_QWEN2, c->qkv_bias = 1;
    else return fail(err, errlen, "%s: not supported: architecture %.64s (llama, mistral without "
                     "sliding window, qwen2 are)", path, type);
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *a0 = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
    if (cJSON_IsString(a0) && strcmp(a0->valuestring, "LlamaForCausalLM") &&
        strcmp(a0->valuestring, "MistralForCausalLM") && strcmp(a0->valuestring, "Qwen2ForCausalLM"))
        return fail(err, errlen, "%s: not supported: architecture %.64s (LlamaForCausalLM, "
                    "MistralForCausalLM, Qwen2ForCausalLM are)", path, a0->valuestring);
    const char *acts[] = {"hidden_act", "hidden_activation"};
    for (int i = 0; i < 2; i++) {
        const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, acts[i]);
        if (act && !cJSON_IsNull(act) && (!cJSON_IsString(act) || strcmp(act->valuestring, "silu")))
            return fail(err, errlen, "%s: %s %.32s is not supported (only silu)", path, acts[i],
                        cJSON_IsString(act) ? act->valuestring : "(not a string)");
    }
    int bias = 0, mlp_bias = 0;
    if (get_bool(root, "attention_bias", &bias, path, err, errlen) ||
        get_bool(root, "mlp_bias", &mlp_bias, path, err, errlen))
        return -1;
    if (bias && c->arch == ARCH_LLAMA) c->qkv_bias = c->o_bias = 1;
    if (mlp_bias) return fail(err, errlen, "%s: mlp_bias true is not supported", path);
    const char *moe[] = {"num_local_experts", "num_experts", "n_routed_experts"};
    for (int i = 0; i < 3; i++) {
        int n = 0;
        if (get_int(root, moe[i], &n, path, err, errlen)) return -1;
        if (n > 0) return fail(err, errlen, "%s: not supported: mixture of experts (%s = %d)", path, moe[i], n);
    }
    /* a sliding window shorter than the context changes the attention: refuse it */
    int window = 0, use_window = 1, ctx = 0;
    if (get_int(root, "sliding_window", &window, path, err, errlen) ||
        get_bool(root, "use_sliding_window", &use_window, path, err, errlen) ||
        get_int(root, "max_position_embeddings", &ctx, path, err, errlen))
        return -1;
    if ((mistral || c->arch == ARCH_QWEN2) && use_window && window > 0 && (ctx <= 0 || window < ctx))
        return fail(err, errlen, "%s: not supported: sliding_window %d shorter than the context %d "
                    "(use_sliding_window is not false)", path, window, ctx > 0 ? ctx : 2048);
    return 0;
}

static int parse(const cJSON *root, model_config *c, const char *path, char *err, size_t errlen) {
    if (parse_arch(root, c, path, err, errlen)) return -1;
    if (require_int(root, "hidden_size", &c->hidden_size, path, err, errlen) ||
        require_int(root, "intermediate_size", &c->intermediate_size, path, err, errlen) ||
        require_int(root, "num_hidden_layers", &c->n_layers, path, err, errlen) ||
        require_int(root, "num_attention_heads", &c->n_heads, path, err, errlen) ||
        require_int(root, "vocab_size", &c->vocab_size, path, err, errlen))
        return -1;
    c->n_kv_heads = c->n_heads;
    c->head_dim = 0;
    if (get_int(root, "num_key_value_heads", &c->n_kv_heads, path, err, errlen) ||
        get_int(root, "head_dim", &c->head_dim, path, err, errlen) ||
        get_int(root, "max_position_embeddings", &c->max_position_embeddings, path, err, errlen) ||
        get_float(root, "rms_norm_eps", &c->rms_norm_eps, path, err, errlen) ||
        get_float(root, "rope_theta", &c->rope_theta, path, err, errlen) ||
        get_bool(root, "tie_word_embeddings", &c->tie_word_embeddings, path, err, errlen) ||
        get_int(root, "bos_token_id", &c->bos_token_id, path, err, errlen) ||
        parse_eos(root, c, path, err, errlen) ||
        parse_rope_scaling(root, c, path, err, errlen))
        return -1;
    return 0;
}

int config_validate(model_config *c, int head_dim_given, const char *path, char *err, size_t errlen) {
    const struct { const char *name; int v; } sizes[] = {
        {"hidden_size", c->hidden_size},           {"intermediate_size", c->intermediate_size},
        {"num_hidden_layers", c->n_layers},        {"num_attention_heads", c->n_heads},
        {"num_key_value_heads", c->n_kv_heads},    {"vocab_size", c->vocab_size},
        {"max_position_embeddings", c->max_position_embeddings},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].v <= 0)
            return fail(err, errlen, "%s: %s=%d must be positive", path, sizes[i].name, sizes[i].v);
    if (!head_dim_given) {
        if (c->hidden_size % c->n_heads)
            return fail(err, errlen, "%s: num_attention_heads=%d does not divide hidden_size=%d",
                        path, c->n_heads, c->hidden_size);
        c->head_dim = c->hidden_size / c->n_heads;
    } else if (c->head_dim <= 0) {
        return fail(err, errlen, "%s: head_dim=%d must be positive", path, c->head_dim);
    }
    if (c->n_heads % c->n_kv_heads)
        return fail(err, errlen, "%s: num_key_value_heads=%d does not divide num_attention_heads=%d",
                    path, c->n_kv_heads, c->n_heads);
    if (c->head_dim % 2)
        return fail(err, errlen, "%s: head_dim=%d must be even (RoPE rotates pairs)", path, c->head_dim);
    if ((int64_t)c->n_heads * c->head_dim > INT32_MAX)
        return fail(err, errlen, "%s: num_attention_heads*head_dim is too large", path);
    if (!(c->rms_norm_eps > 0))
        return fail(err, errlen, "%s: rms_norm_eps=%g must be positive", path, c->rms_norm_eps);
    if (!(c->rope_theta > 0))
        return fail(err, errlen, "%s: rope_theta=%g must be positive", path, c->rope_theta);
    if (c->bos_token_id < 0 || c->bos_token_id >= c->vocab_size)
        return fail(err, errlen, "%s: bos_token_id=%d is outside the vocabulary [0, %d)", path,
                    c->bos_token_id, c->vocab_size);
    if (c->llama3_factor > 0) {
        /* transformers' _compute_llama3_parameters, in f32 as torch computes it, expressed as
         * divisors of inv_freq */
        if (c->head_dim / 2 > MODEL_MAX_ROPE_FACTORS)
            return fail(err, errlen, "%s: head_dim %d too large for rope_scaling llama3", path, c->head_dim);
        c->n_rope_factors = c->head_dim / 2;
        float lo_wl = (float)c->llama3_orig_ctx / c->llama3_low, hi_wl = (float)c->llama3_orig_ctx / c->llama3_high;
        for (int i = 0; i < c->n_rope_factors; i++) {
            float inv = (float)(1.0 / pow((double)c->rope_theta, (double)(float)(2 * i) / c->head_dim));
            float wl = 2.0f * (float)M_PI / inv, out;
            if (wl > lo_wl) out = inv / c->llama3_factor;
            else if (wl < hi_wl) out = inv;
            else {
                float smooth = ((float)c->llama3_orig_ctx / wl - c->llama3_low) / (c->llama3_high - c->llama3_low);
                out = (1 - smooth) * inv / c->llama3_factor + smooth * inv;
            }
            c->rope_factors[i] = inv / out;
        }
    }
    if (c->eos_token_id < 0 || c->eos_token_id >= c->vocab_size)
        return fail(err, errlen, "%s: eos_token_id=%d is outside the vocabulary [0, %d)", path,
                    c->eos_token_id, c->vocab_size);
    return 0;
}

int config_load(const char *path, model_config *cfg, char *err, size_t errlen) {
    size_t len = 0;
    char *text = model_read_text(path, CONFIG_MAX_BYTES, &len, err, errlen);
    if (!text) return -1;
    int rc = config_parse(text, len, path, cfg, err, errlen);
    free(text);
    return rc;
}

int config_parse(const char *text, size_t len, const char *path, model_config *cfg,
                 char *err, size_t errlen) {
    const char *end = text;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    while (root && end < text + len && *end && strchr(" \t\r\n", *end)) end++;
    if (!root || end != text + len || !cJSON_IsObject(root)) {
        if (root && end == text + len) fail(err, errlen, "%s: not a JSON object", path);
        else fail(err, errlen, "%s: malformed JSON near byte %ld", path, (long)(end - text));
        cJSON_Delete(root);
        return -1;
    }
    model_config c = {
        .max_position_embeddings = 2048, .rms_norm_eps = 1e-6f, .rope_theta = 10000.0f,
        .rope_scaling_factor = 1.0f, .tie_word_embeddings = 0, .bos_token_id = 1, .eos_token_id = 2,
    };
    int rc = parse(root, &c, path, err, errlen);
    const cJSON *hd = cJSON_GetObjectItemCaseSensitive(root, "head_dim");
    int head_dim_given = hd && !cJSON_IsNull(hd);
    if (rc == 0) rc = config_validate(&c, head_dim_given, path, err, errlen);
    cJSON_Delete(root);
    if (rc == 0) *cfg = c;
    return rc;
}
