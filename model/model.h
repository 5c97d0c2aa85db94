/* model/ — the interface of the model directory: config.json, safetensors weights, the
 * forward pass (prefill and decode) and the sampler.
 *
 * Errors: every function that can fail takes `char *err, size_t errlen`, returns 0 on success
 * and -1 on failure with a one-line message in err that names the file, tensor or field and
 * the problem ("model.layers.3.mlp.up_proj.weight: shape [172, 64], config says [176, 64]").
 * Nothing here calls exit() or abort().
 */
#ifndef LLM_MODEL_H
#define LLM_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"   /* dtype_t, weight_t, f16/bf16 conversions */

#define LLM_ERR_LEN 512

/* ---------------------------------------------------------------- config.json (config.c) */

/* Architectures (model_type / general.architecture). */
enum { ARCH_LLAMA = 0, ARCH_QWEN2 = 1 };

typedef struct {
    int arch;                    /* ARCH_LLAMA (llama, mistral without sliding window) or
                                    ARCH_QWEN2 (llama + q/k/v biases) */
    int qkv_bias;                /* q/k/v projections have biases (qwen2, llama attention_bias) */
    int o_bias;                  /* o projection has a bias (llama attention_bias) */
    int hidden_size;             /* dim */
    int intermediate_size;       /* ffn hidden dim */
    int n_layers;                /* num_hidden_layers */
    int n_heads;                 /* num_attention_heads */
    int n_kv_heads;              /* num_key_value_heads (default n_heads) */
    int head_dim;                /* hidden_size / n_heads, or "head_dim" when given */
    int vocab_size;
    int max_position_embeddings; /* the trained context length (default 2048) */
    float rms_norm_eps;          /* default 1e-6 */
    float rope_theta;            /* default 10000 */
    float rope_scaling_factor;   /* rope_scaling {"type"|"rope_type": "linear", "factor": f}; 1 when null */
#define MODEL_MAX_ROPE_FACTORS 512
    int n_rope_factors;          /* 0, or head_dim/2: per-frequency divisors of inv_freq */
    float rope_factors[MODEL_MAX_ROPE_FACTORS]; /* rope_scaling "llama3" (computed from factor,
                                    low/high_freq_factor, original_max_position_embeddings as
                                    transformers does) or a GGUF rope_freqs tensor */
    float llama3_factor, llama3_low, llama3_high; /* rope_scaling llama3 (0: none) */
    int llama3_orig_ctx;
    int tie_word_embeddings;     /* default 0; also inferred when lm_head.weight is absent */
    int bos_token_id;            /* default 1 */
    int eos_token_id;            /* default 2 (first element when a list) */
} model_config;

/* Reads and validates a Hugging Face config.json: model_type llama, mistral (without a sliding
 * window shorter than the context) or qwen2 (q/k/v biases implied), architectures
 * Llama/Mistral/Qwen2ForCausalLM, hidden_act silu, attention_bias (llama: q/k/v/o biases);
 * anything else (Gemma, Phi, MoE, gelu, mlp_bias) is refused naming it.
 * Validation: all sizes positive, n_heads divides hidden_size (unless head_dim is given),
 * n_kv_heads divides n_heads, head_dim even, rms_norm_eps > 0, rope_theta > 0,
 * rope_scaling null or linear with factor >= 1. Unknown fields are ignored. */
int config_load(const char *path, model_config *cfg, char *err, size_t errlen);
/* The same on config.json's text already in memory: text[0..len) (no NUL needed); path names
 * the input in errors. config_load reads the file and calls this. */
int config_parse(const char *text, size_t len, const char *path, model_config *cfg,
                 char *err, size_t errlen);
/* The checks config_parse makes on the values (sizes positive, heads divide, head_dim even, eps
 * and theta positive, bos/eos inside the vocabulary); fills head_dim from hidden_size / n_heads
 * when !head_dim_given. path names the source in errors. */
int config_validate(model_config *cfg, int head_dim_given, const char *path, char *err, size_t errlen);

/* ------------------------------------------------------------- safetensors (safetensors.c) */

typedef struct {
    char name[256];
    dtype_t dtype;
    int ndim;                 /* 0..4 */
    int64_t shape[4];
    const void *data;         /* points into the mmapped file */
    size_t nbytes;
} st_tensor;

typedef struct {
    char path[1024];
    void *map;                /* mmap of the whole file (read-only) */
    size_t size;
    int n_tensors;
    st_tensor *tensors;       /* sorted by name for lookup */
} st_file;

/* mmaps one .safetensors file and validates its header fully before use: 8-byte length within
 * the file, JSON well formed, every entry has dtype/shape/data_offsets, dtype one of F32/F16/
 * BF16 (others are an error naming the tensor), offsets inside the data buffer, entries
 * non-overlapping, nbytes = product(shape) * dtype size. "__metadata__" is skipped. */
int st_open(const char *path, st_file *f, char *err, size_t errlen);
/* The same validation on a safetensors image already in memory: buf[0..size) is the whole file
 * (st_open passes its mmap; the fuzz target passes its input). name is used in errors and
 * copied to f->path. Tensor data pointers point into buf, which must outlive f; f->map stays
 * NULL. Free with st_close. */
int st_parse(const void *buf, size_t size, const char *name, st_file *f, char *err, size_t errlen);
const st_tensor *st_find(const st_file *f, const char *name); /* NULL when absent */
void st_close(st_file *f);

/* ------------------------------------------------------------------------- GGUF (gguf.c) */

/* GGUF metadata value types (ggml/docs/gguf.md). */
enum {
    GGUF_TYPE_UINT8 = 0, GGUF_TYPE_INT8, GGUF_TYPE_UINT16, GGUF_TYPE_INT16, GGUF_TYPE_UINT32,
    GGUF_TYPE_INT32, GGUF_TYPE_FLOAT32, GGUF_TYPE_BOOL, GGUF_TYPE_STRING, GGUF_TYPE_ARRAY,
    GGUF_TYPE_UINT64, GGUF_TYPE_INT64, GGUF_TYPE_FLOAT64, GGUF_TYPE_COUNT
};

typedef struct {
    char *key;                /* NUL-terminated copy */
    int type;                 /* GGUF_TYPE_* */
    int arr_type;             /* element type when type == GGUF_TYPE_ARRAY */
    uint64_t n;               /* array length (1 for a scalar) */
    const uint8_t *val;       /* into the file: the value (an array's first element) */
} gguf_kv;

typedef struct {
    char path[1024];
    void *map;                /* mmap of the whole file (NULL when parsed from memory) */
    size_t size;
    uint32_t version;         /* 2 or 3 */
    size_t alignment;         /* general.alignment, default 32 */
    size_t data_offset;       /* start of the data section */
    int n_kv;
    gguf_kv *kv;              /* sorted by key */
    st_file tensors;          /* GGUF tensor names; shape outermost-first (ne reversed), so a
                                 matrix is [rows = ne[1]][cols = ne[0]]; data into the map;
                                 tensors.map is NULL (the gguf_file owns the mapping) */
} gguf_file;

/* mmaps a GGUF file (v2 or v3, little-endian) and validates the whole header before use:
 * magic, version, counts against the file size, every string and array inside the file, every
 * value type known (arrays of arrays refused), keys unique, tensor dims 1..4 and non-zero, the
 * tensor type one we run (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K), row
 * length ne[0] a multiple of the type's block, offsets aligned to general.alignment (a power of
 * two, default 32) and inside the data section, no two tensors overlapping, no size product
 * overflowing, names unique. Errors name the key or tensor. Free with gguf_close. */
int gguf_open(const char *path, gguf_file *g, char *err, size_t errlen);
/* The same validation on a GGUF image in memory buf[0..size) (the fuzz target's input); data
 * pointers point into buf, which must outlive g. */
int gguf_parse(const void *buf, size_t size, const char *name, gguf_file *g, char *err, size_t errlen);
void gguf_close(gguf_file *g);
/* 1 when path is a readable file starting with the GGUF magic. */
int gguf_is_gguf_file(const char *path);
const char *gguf_type_name(int type);

/* Metadata lookups: return 1 and set *out when key is present with a usable type, 0 when absent
 * (*out untouched, or NULL/0 for the allocating ones), -1 with err set on a wrong type. */
const gguf_kv *gguf_find(const gguf_file *g, const char *key);
int gguf_get_int(const gguf_file *g, const char *key, int64_t *out, char *err, size_t errlen);
int gguf_get_float(const gguf_file *g, const char *key, double *out, char *err, size_t errlen);
/* *out: malloc'd NUL-terminated copy (free it). */
int gguf_get_str(const gguf_file *g, const char *key, char **out, char *err, size_t errlen);
/* *out: n malloc'd NUL-terminated copies (gguf_free_str_array). */
int gguf_get_str_array(const gguf_file *g, const char *key, char ***out, int *n, char *err, size_t errlen);
void gguf_free_str_array(char **a, int n);
/* *out: malloc'd doubles (any numeric element type). */
int gguf_get_num_array(const gguf_file *g, const char *key, double **out, int *n, char *err, size_t errlen);

/* GGUF metadata → model_config (gguf_model.c): general.architecture must be llama or qwen2 (any
 * other: "architecture X is not supported"); hyper-parameters from the <arch>.* keys
 * (embedding_length, feed_forward_length, block_count, attention.head_count(_kv),
 * attention.key_length, context_length, attention.layer_norm_rms_epsilon, rope.freq_base,
 * rope.dimension_count = head_dim, rope.scaling.type none/linear), vocabulary size from
 * token_embd, tokenizer.ggml.bos/eos_token_id. MoE (expert_count > 0), partial rotary, a
 * rope_freqs tensor (Llama-3.1 scaling) and yarn scaling are refused with a clear message.
 * Validated as config_parse validates. */
int gguf_config(const gguf_file *g, model_config *cfg, char *err, size_t errlen);
/* Renames g's tensor table in place from GGUF names (token_embd, blk.N.attn_q, ...) to the
 * Hugging Face names weights.c binds (model.embed_tokens.weight, model.layers.N.self_attn.
 * q_proj.weight, ...); unknown names are kept. Re-sorts the table. */
int gguf_map_names(gguf_file *g, char *err, size_t errlen);

/* -------------------------------------- sharded index (weights.c): model.safetensors.index.json */

struct cJSON;
typedef struct {
    struct cJSON *root;               /* the parsed index; owns weight_map */
    const struct cJSON *weight_map;   /* tensor name -> shard file name */
    int n_shards;
    char **shards;                    /* the distinct shard file names, sorted */
} st_index;

/* Parses the text of a Hugging Face model.safetensors.index.json, text[0..len) (no NUL needed;
 * path names it in errors): "weight_map" must be an object whose values are non-empty file
 * names inside the model folder (not absolute, no ".." component). Free with st_index_free
 * (also after a failure; a no-op then). */
int st_index_parse(const char *text, size_t len, const char *path, st_index *ix,
                   char *err, size_t errlen);
/* The shard file name weight_map gives for tensor, or NULL when it lists none. */
const char *st_index_shard(const st_index *ix, const char *tensor);
void st_index_free(st_index *ix);

/* ------------------------------------------------------------------- weights (weights.c) */

typedef struct {
    weight_t attn_norm;              /* [1][dim]  input_layernorm */
    weight_t wq, wk, wv, wo;         /* [n_heads*hd][dim], [n_kv*hd][dim] x2, [dim][n_heads*hd] */
    weight_t bq, bk, bv, bo;         /* [1][n_heads*hd], [1][n_kv*hd] x2, [1][dim] biases when
                                        cfg.qkv_bias / cfg.o_bias; data NULL otherwise */
    weight_t ffn_norm;               /* [1][dim]  post_attention_layernorm */
    weight_t w_gate, w_up, w_down;   /* [ffn][dim], [ffn][dim], [dim][ffn] */
} layer_weights;

typedef struct {
    model_config cfg;
    weight_t embed;                  /* [vocab][dim] model.embed_tokens.weight */
    layer_weights *layers;           /* [n_layers] */
    weight_t final_norm;             /* [1][dim] model.norm.weight */
    weight_t lm_head;                /* [vocab][dim]; == embed when tied */
    /* owned storage */
    int n_files;
    st_file *files;                  /* one per shard */
    void **owned;                    /* buffers allocated by model_convert */
    int n_owned;
    int resident;                    /* model_make_resident ran (the arena is in owned) */
#define MODEL_MAX_KEPT 8
    int n_kept;                      /* model_convert: weights left in their dtype (row length not
                                        a multiple of the target's block) */
    char kept[MODEL_MAX_KEPT][96];   /* the first of their names */
    gguf_file *gguf;                 /* a GGUF model: the open file (metadata for the tokenizer
                                        and chat template; files[0] is its renamed tensor table),
                                        NULL for safetensors */
} model_weights;

/* Loads a model from path: a Hugging Face folder (DIR/config.json and DIR/model.safetensors, or
 * the shards named by DIR/model.safetensors.index.json "weight_map") or a GGUF file (gguf_open,
 * gguf_config, gguf_map_names; m->gguf keeps it open). Checks every tensor's presence and shape
 * against the config (error names the tensor, found vs expected); ignores
 * "*.rotary_emb.inv_freq"; lm_head absent → tied embeddings; q/k/v(/o) biases when the config
 * has them. A llama GGUF's q/k rows (and biases), which llama.cpp's converter interleaves for
 * its RoPE, are permuted back to the Hugging Face order (rotate_half) into owned memory.
 * Weights stay in the file's dtype (pointers into the mmaps). */
int model_load(const char *path, model_weights *m, char *err, size_t errlen);

/* Converts the weight matrices (embedding, projections, LM head) to dtype `to` in newly owned
 * buffers: F16/BF16/block formats → F32 exactly, → BF16/F16 rounding to nearest even, → Q8_0 or
 * Q4_0 with ggml's reference quantizers (row-wise blocks of 32; a matrix whose row length is not
 * a multiple of 32, like stories260K's FFN of 172, stays in its dtype: m->n_kept / m->kept).
 * Norm weights become F32 when to is F32 and otherwise stay as stored (the kernels read any
 * dtype). Weights already in `to` stay in the mmap; a tied LM head stays shared. Not calling
 * it keeps every weight in the file's dtype (--dtype auto). Returns 0, or -1 on allocation
 * failure or an unknown dtype. */
int model_convert(model_weights *m, dtype_t to, char *err, size_t errlen);

/* Copies the matrices decode streams every token (projections, LM head) that still point into
 * the file mapping into owned memory marked for transparent huge pages (madvise), so the reads
 * do not take a TLB miss every 4 KiB; converted weights are allocated that way already. Costs
 * a copy at load and the weights' size in anonymous memory. Returns 0, or -1 when out of
 * memory. */
int model_make_resident(model_weights *m, char *err, size_t errlen);

/* Every weight finite (issue 19): F32/F16/BF16 elements, and the f16 scales of each block of the
 * block formats (the integer quants cannot be non-finite). One pass over the weights at load
 * (OpenMP over elements; SmolLM2: a few ms). Returns 0, or -1 naming the tensor and the first
 * element (row, column) or block. */
int model_check_finite(const model_weights *m, char *err, size_t errlen);

/* model_convert(m, DT_F32): every weight F32 (the reference path). */
int model_to_f32(model_weights *m, char *err, size_t errlen);

/* Bytes of weights: per_token = 1 gives what one decode step reads (every projection, the
 * norms, the LM head and one embedding row); 0 gives the weights held (embedding counted
 * once when tied). */
size_t model_weight_bytes(const model_weights *m, int per_token);

/* --mlock: every weight's pages locked in memory (mlock(2)), the arena and what is still read
 * from the file mapping (an untied embedding). Returns 0, or -1 with the errno text (usually
 * RLIMIT_MEMLOCK: ulimit -l). */
int model_mlock(const model_weights *m, char *err, size_t errlen);

void model_free(model_weights *m);

/* ------------------------------------------------------------------------ npy (npy.c) */

/* Writes a float32 C-order .npy of shape [rows][cols]. */
int npy_write_f32(const char *path, const float *data, int64_t rows, int64_t cols,
                  char *err, size_t errlen);
/* Reads a 1-D or 2-D little-endian float32 (or int32 / int64, converted) .npy; *data is
 * malloc'd float; cols = 1 for 1-D. */
int npy_read_f32(const char *path, float **data, int64_t *rows, int64_t *cols,
                 char *err, size_t errlen);

/* ------------------------------------------------------------- forward pass (forward.c) */

struct kv_cache;

/* The run state of one sequence: scratch buffers sized once (no per-token allocation). */
typedef struct {
    const model_weights *w;
    struct kv_cache *kv;      /* owned by eviction/; every KV write and read goes through it */
    int max_chunk;            /* prefill scratch is sized for this many tokens */
    /* decode scratch */
    float *x, *xb, *q, *k, *v, *att, *hb, *hb2, *probs, *logits;
    float *rope_cos, *rope_sin;  /* [max_chunk][head_dim/2] */
    /* prefill scratch [max_chunk][...]; pq/pk/pv/patt (attention) and phb/phb2 (MLP) are
     * never live at once: they share p_phase, whose size is the larger of the two sets */
    float *px, *pxb, *pq, *pk, *pv, *patt, *phb, *phb2;
    float *p_phase;
    float *colsum;            /* [n_heads][cand_stride] when the policy asks */
    float *colsum_kv;         /* [n_kv_heads][cand_stride] */
    float *att_scratch;       /* [n_threads][attn_prefill_scratch_floats(head_dim)] */
    int cand_stride, n_threads, probs_stride;
    int *pos_buf;             /* [max_chunk] positions of a prefill chunk */
    /* --rope shifted (POLICIES.md §1.7): RoPE tables by rank, rotated-key scratch */
    int shifted, n_rank;
    float *rank_cos, *rank_sin; /* [n_rank][head_dim/2] */
    int *rank_idx;            /* [max_cap+1] */
    float *kr_live;           /* [n_kv_heads][max_cap+1][head_dim] */
    float *kr_new;            /* [n_kv_heads][max_chunk][head_dim] */
    /* --device cuda (model/device.c, kernels/cuda): the device state, NULL on the CPU. Then
     * engine_prefill/engine_decode run on the GPU and only e->logits, e->next are used here. */
    void *dev;
    int want_logits;          /* device decode: copy the logits row into e->logits (sampling,
                                 --logits-out); else only e->next is set */
    int next;                 /* device: the greedy next token (device argmax) after a prefill
                                 or decode step; -1 on the CPU */
    /* CPU prefill: called after each layer of a chunk (layer 0-based, n_layers) when set; the
     * CLI's progress line for long unchunked prompts (issue 19) */
    void (*on_layer)(void *ctx, int layer, int n_layers);
    void *on_layer_ctx;
    struct prefill_record *record;  /* engine_prefill_record: where engine_prefill copies what
                                       each layer hands the policy; NULL otherwise */
    /* CPU decode on n_threads > 1 (forward.c decode_threads_*): the thread count decode runs on
     * now (n_threads or 1), chosen by timing steps: every dec_interval steps one step runs on
     * the other count, and decode switches (on trial) when that step is clearly faster than the
     * median of the last steps (a core taken by another process after the start). */
    int dec_threads, dec_since, dec_interval, dec_probe, dec_nref, dec_trial, dec_old_interval;
    double dec_ref[4];        /* the last step times at dec_threads (seconds) */
    double dec_old_med;       /* on trial: the median step time before the switch */
} engine;

/* The KV cache's element type when --kv-dtype is auto (policy_params.kv_dtype): DT_F32 for a
 * model whose k_proj weights (layer 0, as held in memory, i.e. after --dtype) are F32, so F32
 * checkpoints keep their exact results; DT_F16 for 16-bit and quantized (GGUF block format)
 * weights: half the cache bytes, 11 significant bits, LLaMA keys and values far below f16's
 * 65504. */
dtype_t model_kv_dtype_default(const model_weights *w);

/* Allocates the run state for up to max_chunk prefill tokens per call. Weights may be F32,
 * F16 or BF16 (mixed is fine). kv must be initialised (kv_init) in any of its dtypes: the engine
 * rounds each new K/V row to the cache's dtype before attending, and widens cached rows as the
 * attention reads them (f32 accumulation). */
int engine_init(engine *e, const model_weights *w, struct kv_cache *kv, int max_chunk,
                int n_threads, char *err, size_t errlen);
void engine_free(engine *e);

/* --device cuda (model/device.c): the same run state with the weights, activations and KV cache
 * on the GPU (model/cuda/cuda_engine.h). The weights stay in their file dtype (do not call
 * model_to_f32). Errors: the policy is not ported (one line), no device, device memory (a KV
 * cache that does not fit stops here, before it is allocated, suggesting a budget). */
int engine_init_cuda(engine *e, const model_weights *w, struct kv_cache *kv, int max_chunk,
                     char *err, size_t errlen);

/* --device auto|cpu|cuda: sets *use_cuda. cuda without a usable GPU, or with a policy the CUDA
 * backend does not run, is an error (-1, one line in msg); auto falls back to the CPU (msg may
 * hold a one-line note, else ""). ops, params: the run's policy and its policy_params
 * (eviction/eviction.h). */
struct policy_ops;
int device_resolve(const char *want, const struct policy_ops *ops, const void *params,
                   int *use_cuda, char *msg, size_t msglen);

/* Prefill: runs tokens[0..n) at positions pos0..pos0+n-1 in one pass (matrix-matrix products,
 * exact causal attention over the live cache + the chunk), then lets the eviction policy
 * choose what each layer keeps. n ≤ max_chunk. Logits of the last token go to e->logits
 * [vocab]; when logits_all is non-NULL it receives all rows [n][vocab]. */
int engine_prefill(engine *e, const int *tokens, int n, int pos0, float *logits_all,
                   char *err, size_t errlen);

/* -------------------------------- a prefill computed once, replayed (prefill_fork.c) */

/* What each layer of one whole-prompt prefill handed the eviction policy (kv_prefill_chunk:
 * post-RoPE queries, K/V as the cache stores them, attention column sums) and the last logits
 * row, so the same prompt can fill the caches of other policies without the matrix products
 * (issue 16: sweeps compute a prefill once per example and fork it). */
typedef struct prefill_record prefill_record;

/* 1 when a prefill of tokens[0..n) into e's cache does not depend on e's policy, so it can be
 * recorded or replayed: the CPU engine, an empty cache, the whole prompt in one chunk (n ≤
 * max_chunk) at positions 0.., absolute RoPE, and a policy without a logit_scale hook (buzz_logn
 * rescales the attention itself). */
int engine_prefill_forkable(const engine *e, int n);
/* Bytes a record of n tokens takes: n_layers × n × (n_heads + 2·n_kv_heads) × head_dim floats,
 * n_layers × n_kv_heads × n column sums, one logits row, the tokens. */
size_t prefill_record_bytes(const engine *e, int n);
/* engine_prefill(e, tokens, n, 0, NULL) (e forkable, else -1 with err), recording what each
 * layer hands the policy (the column sums computed whether or not e's policy reads them) and
 * the last logits into *out (prefill_record_free). -1 with err: out of memory, engine error. */
int engine_prefill_record(engine *e, const int *tokens, int n, prefill_record **out, char *err,
                          size_t errlen);
/* 1 when r can be replayed into e for tokens[0..n): the same prompt, model shape and cache
 * dtype, and e forkable. */
int prefill_record_matches(const prefill_record *r, const engine *e, const int *tokens, int n);
/* Fills e's cache as engine_prefill(e, tokens, n, 0, NULL) would, from r: per layer the same
 * kv_prefill call (column sums passed only when e's policy reads them), the statistics sample,
 * e->logits. Bit-identical to computing it (tests/test_prefill_fork.c). -1 with err when r does
 * not match (prefill_record_matches) or the policy fails. */
int engine_prefill_replay(engine *e, const prefill_record *r, const int *tokens, int n, char *err,
                          size_t errlen);
void prefill_record_free(prefill_record *r);
/* The wall time the recorded prefill took to compute (s): what a replayed run's prefill would
 * have cost on its own. */
double prefill_record_seconds(const prefill_record *r);

/* Decode: one token at position pos through every layer (KV write and eviction through
 * eviction/); logits to e->logits [vocab]. */
int engine_decode(engine *e, int token, int pos, char *err, size_t errlen);

/* ------------------------------------------------------------------- sampler (sampler.c) */

/* The chain's stages, in llama.cpp's letters (its --sampling-seq): e penalties, d DRY, s
 * top-n-sigma, k top-k, y locally typical, p top-p, m min-p, x XTC, t temperature, a
 * adaptive-p (wherever it is named, the draw at the end, as in llama.cpp). The default is llama.cpp's (common/common.h common_params_sampling.samplers). */
#define SAMPLER_STAGES "edskypmxta"
#define SAMPLER_ORDER_DEFAULT "edskypmxt"

typedef struct { float logit, p; int id; } sampler_cand;   /* a candidate token */
typedef struct { uint32_t mt[624]; int i; } sampler_mt;     /* an mt19937 state (sampler_rng.c) */

typedef struct {
    float temperature;   /* 0: greedy (argmax, lowest id on ties) */
    float top_p;         /* nucleus; 1 = off */
    int top_k;           /* 0 = off */
    float min_p;         /* keep tokens with p ≥ min_p · p_max; 0 = off */
    float typical_p;     /* locally typical sampling; 1 = off */
    float top_n_sigma;   /* keep logits ≥ max − n·σ; ≤ 0 = off */
    float xtc_probability, xtc_threshold;      /* XTC; probability 0 = off (threshold 0.1) */
    float dynatemp_range, dynatemp_exponent;   /* dynamic temperature; range 0 = off (exponent 1) */
    int min_keep;        /* top-p, min-p, typical and XTC keep at least this many (0) */
    int mirostat;        /* 0 the chain; 1 Mirostat, 2 Mirostat 2.0 (temperature, then it) */
    float mirostat_tau, mirostat_eta, mirostat_mu;   /* target surprise 5, learning rate 0.1; mu = 2 tau */
    char order[16];      /* the chain: letters of SAMPLER_STAGES (sampler_set_order) */
    /* adaptive-p (llama.cpp PR 17927; 'a' in order, target ≥ 0): the draw favours tokens whose p
     * is near a target moved by the EMA of the p taken so far (sampler_set_adaptive) */
    float adaptive_target, adaptive_decay, adaptive_sum, adaptive_weight;
    float *adaptive_p;   /* [vocab]: the p before the transform, for the EMA (NULL: off) */
    struct sampler_dry *dry;   /* DRY (sampler_set_dry; NULL: off) */
    /* llama.cpp's logit bias (-l ID+BIAS): bias[i] added to the logit of id bias_id[i] before
     * everything else (penalties, the chain, Mirostat, greedy); -inf bans the token */
    int n_bias, *bias_id;
    float *bias;
    /* llama.cpp's penalties (llama_sampler_penalties), over the last `last_n` accepted tokens
     * (sampler_accept: the prompt's, then each generated one): a token seen c > 0 times has its
     * logit divided by `repeat` (multiplied when ≤ 0), then lowered by c · frequency + presence.
     * Applied at the chain's 'e' (first by default), to greedy decoding as well; not with
     * Mirostat (llama.cpp's Mirostat chain has no penalties). repeat 1, frequency 0, presence 0
     * or last_n 0 = off. */
    float repeat, frequency, presence;
    int last_n;
    int *hist, n_hist;   /* ring of the last last_n accepted ids; n_hist accepted in all */
    int *count;          /* [vocab] scratch, all zero between calls */
    /* the draws' generators, as llama.cpp's: the final draw (dist, Mirostat or adaptive-p) and
     * XTC's own, both seeded with the low 32 bits of the seed */
    sampler_mt rng, rng_xtc;
    sampler_cand *buf, *tmp;   /* [vocab]: the candidates (buf[0..n)), scratch */
    int n, sorted;             /* candidates left; 1 when buf[0..n) is in descending logit order */
    int vocab;
} sampler;

/* The draws' generator (sampler_rng.c), llama.cpp's: std::mt19937 seeded with seed (C++11
 * [rand.predef]); its next 32-bit output; a uniform draw in [0, 1) as libstdc++'s
 * std::uniform_real_distribution<double> (two outputs, 53 bits) and <float> (one, 24 bits). */
void sampler_mt_seed(sampler_mt *g, uint32_t seed);
uint32_t sampler_mt_next(sampler_mt *g);
double sampler_mt_double(sampler_mt *g);
float sampler_mt_float(sampler_mt *g);

/* Greedy or temperature / top-p / top-k sampling seeded by seed (its low 32 bits, as llama.cpp's
 * uint32 seed: the same seed draws the same tokens from the same candidates); the other fields at llama.cpp's
 * defaults (off). 0, or -1 out of memory. */
int sampler_init(sampler *s, int vocab, float temperature, float top_p, int top_k, uint64_t seed);
/* The chain's order: letters of SAMPLER_STAGES, at most 15 (repeats allowed, as in llama.cpp).
 * 0, or -1 for another letter or a longer string. */
int sampler_set_order(sampler *s, const char *order);
/* Mirostat version 0 (off), 1 or 2 with target surprise tau (bits) and learning rate eta; mu
 * starts at 2 tau. 0, or -1 for another version. */
int sampler_set_mirostat(sampler *s, int version, float tau, float eta);
/* The logit bias: n pairs (ids in [0, vocab), checked; a repeated id adds up), copied. 0, or -1
 * for an id out of range or out of memory. */
int sampler_set_logit_bias(sampler *s, const int *ids, const float *bias, int n);
/* adaptive-p with target (< 0: the plain draw) and decay (clamped to [0, 0.99], as llama.cpp);
 * the EMA starts at target. 0, or -1 out of memory. */
int sampler_set_adaptive(sampler *s, float target, float decay);
/* DRY (model/sampler_dry.c; llama.cpp's llama_sampler_dry), the chain's 'd': over the last
 * last_n accepted ids, a token that would extend a repeat of n ≥ allowed_length tokens loses
 * multiplier · base^(n − allowed_length) of its logit. Breakers: n_breakers token sequences,
 * concatenated in seq with their lengths in len (≥ 1: a head id, then the ids that follow it);
 * repetition does not reach back past the last one seen. Off (0) when multiplier is 0, base < 1
 * or last_n ≤ 0, as llama.cpp. 0, or -1 for an id out of range, an empty breaker, a negative
 * allowed_length, out of memory. */
int sampler_set_dry(sampler *s, float multiplier, float base, int allowed_length, int last_n, const int *seq,
                    const int *len, int n_breakers);
/* Turns the penalties on (sampler fields above; last_n ≥ 1, repeat > 0). 0, or -1 out of memory. */
int sampler_set_penalties(sampler *s, float repeat, float frequency, float presence, int last_n);
/* 1 when sampler_sample reads more than the argmax of the logits (sampling, penalties): a
 * device that returns only its argmax (--device cuda, greedy) cannot stand in for it. */
int sampler_needs_logits(const sampler *s);
/* Records a token of the sequence (prompt or generated) for the penalties; cheap when off. */
void sampler_accept(sampler *s, int id);
void sampler_free(sampler *s);
/* Picks the next token from logits [vocab] (the greedy path applies the bias and penalties in place):
 * sampler_filter, a draw by p, sampler_commit. */
int sampler_sample(sampler *s, float *logits);
/* The chain (or Mirostat's truncation; adaptive-p's transform last) over logits [vocab]: returns n ≥ 1, the candidates left
 * in s->buf[0..n) in no set order, p their probabilities (softmax over what is left; 0 for a
 * logit a stage made −∞). Exposed for tests against llama.cpp (tests/test_sampler.c). */
int sampler_filter(sampler *s, const float *logits);
/* Takes candidate s->buf[k] of the last sampler_filter: Mirostat's mu update from its
 * surprise, adaptive-p's EMA from its p before the transform; returns its token id. */
int sampler_commit(sampler *s, int k);


/* ------------------------------------------------------ the generation loop (generate.c) */

/* What generate() tells its caller as it goes; any member may be NULL. Callbacks return 0 to go
 * on; a negative return is an error (err set by the callback) that ends generate() with -1. */
typedef struct {
    void *ctx;
    /* logits rows [n][vocab]: each prefill chunk's rows (only with want_prompt_logits), then
     * each decode step's row (N + n - 1 rows in all for n generated tokens) */
    int (*on_logits)(void *ctx, const float *rows, int n, char *err, size_t errlen);
    /* a generated token (also in r->tokens); 1 ends generation with stop "stop" (the caller's
     * stop string matched) */
    int (*on_token)(void *ctx, int id, char *err, size_t errlen);
    /* after each prefill chunk: done of total prompt tokens */
    void (*on_prefill)(void *ctx, int done, int total);
} gen_callbacks;

typedef struct {
    int max_new;              /* tokens to generate at most */
    int prefill_chunk;        /* prompt tokens per prefill pass (≤ 0: all) */
    const int *stop_ids;      /* end-of-generation ids (EOS, end-of-turn, ...): a sampled one ends
                                 generation and is not emitted */
    int n_stop_ids;
    int want_prompt_logits;   /* on_logits also gets the prompt rows */
    const volatile int *interrupted;  /* NULL, or a flag a signal handler sets: stops at the next
                                         chunk or step with stop "interrupted" */
    const int *force_ids;     /* teacher forcing (backend parity tests): generated token i is
                                 force_ids[i] for i < n_force, whatever the sampler says (stop ids
                                 included), so two backends decode the same sequence */
    int n_force;
    prefill_record **fork;    /* NULL, or a prefill shared across runs of one prompt (sweeps):
                                 when the whole prompt is one forkable chunk (and no prompt
                                 logits are asked for), *fork NULL is filled by recording this
                                 run's prefill, and a matching *fork is replayed instead of
                                 computed; the caller frees it (prefill_record_free) */
} gen_params;

typedef struct {
    int n_prompt, n_gen;      /* prompt tokens, generated tokens */
    int n_decode_steps;       /* decode forward passes (n_gen - 1 unless stopped by an id) */
    int *tokens;              /* [n_gen] generated ids (gen_result_free) */
    const char *stop;         /* "eos", "length", "stop" or "interrupted" */
    int stop_id;              /* the stop id that ended it (stop "eos"), else -1 */
    double prefill_s, decode_s;
    float *step_ms;           /* [n_decode_steps] wall time of each decode forward pass, ms
                                 (sampling and the callbacks not included) */
    int prefill_replayed;     /* 1: the prefill came from gen_params.fork (prefill_s: the replay) */
} gen_result;

/* Runs prompt[0..n_prompt) through e (prefill in chunks of p->prefill_chunk at positions 0..),
 * then samples with smp and decodes until p->max_new tokens, a stop id, the caller's stop or an
 * interrupt. e: initialised (engine_init / engine_init_cuda) with max_chunk ≥ the chunk used.
 * Returns 0 (r filled; free with gen_result_free), or -1 with err set (engine or callback error,
 * out of memory); r->tokens may hold the tokens generated so far either way. */
int generate(engine *e, sampler *smp, const int *prompt, int n_prompt, const gen_params *p,
             const gen_callbacks *cb, gen_result *r, char *err, size_t errlen);
void gen_result_free(gen_result *r);

/* The q-quantile (0..1, linear between order statistics) of r's decode step times, ms; 0 when
 * no step ran. The median is the decode speed a stall does not move (a shared host
 * descheduling the process for a few steps): bench/issue17_rows.py reads it from --json. */
double gen_step_ms_quantile(const gen_result *r, double q);

#endif
