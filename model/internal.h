/* model/internal.h — shared by the files of model/ only (not an interface: model/model.h is).
 * Owned weight buffers and the load-time fix-ups that the format readers and the converters
 * share. */
#ifndef LLM_MODEL_INTERNAL_H
#define LLM_MODEL_INTERNAL_H

#include "model/model.h"

/* A weight buffer of `bytes`, 2 MiB-aligned and marked for transparent huge pages before its
 * first touch (a smaller one: plain malloc). Freed with free(). NULL when out of memory. */
void *model_alloc_weight(size_t bytes);

/* Makes room for `more` entries in m->owned. 0, or -1 with err set. */
int model_reserve_owned(model_weights *m, size_t more, char *err, size_t errlen);

/* F32/F16/BF16 tensors at addresses not aligned to their element size (a safetensors header
 * length that is not a multiple of 4) copied once into aligned owned memory. 0 or -1. */
int model_align_weights(model_weights *m, char *err, size_t errlen);

/* A llama GGUF's q/k rows (and biases) put back from llama.cpp's interleaved RoPE order into
 * the Hugging Face rotate_half order, in owned memory (gguf_model.c). 0 or -1. */
int gguf_unpermute_qk(model_weights *m, char *err, size_t errlen);

/* n zeroed elements of `size` bytes, 64-byte aligned (util.c; freed with free()), or NULL. */
void *model_alloc64(size_t n, size_t size);

/* The one-line error of every file of model/ (util.c): printf format into err; control
 * characters that came from the input become '?'. Always returns -1. */
int model_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* engine_prefill's recording hook (prefill_fork.c): layer l's queries [n][qdim], K/V
 * [n][kvdim] and column sums [n_kv_heads][cand_stride] as handed to kv_prefill. */
void prefill_record_layer(struct prefill_record *r, int l, const float *q, const float *k, const float *v,
                          const float *colsum_kv, int cand_stride);

/* A whole regular file of at most max_bytes into a NUL-terminated malloc'd buffer (*len bytes
 * without the NUL). NULL with "PATH: not a regular file | cannot open: ... | file too large |
 * out of memory | read error" in err (a FIFO is refused before it is opened). */
char *model_read_text(const char *path, long long max_bytes, size_t *len, char *err, size_t errlen);

/* The checks every format reader ends with (safetensors.c, gguf.c): no two tensors' data
 * [data, data + nbytes) overlap, and no name appears twice. Sorts tensors[0..n) by name (the
 * order lookups bsearch). 0, or -1 with "PATH: tensors A and B overlap" / "PATH: tensor A
 * appears twice" in err. */
int model_check_tensor_layout(st_tensor *tensors, int n, const char *path, char *err, size_t errlen);

/* The decode thread count (decode_threads.c; engine.dec_*): the threads the next CPU decode step
 * runs on (n_threads, or 1 while a timed probe says one thread is faster; LLM_ADAPT_THREADS=0
 * off, =flip alternating), then decode_threads_end with that count and the step's seconds
 * (model_now_s). Never changes an output: every kernel sums in the same order
 * for any thread count. */
int decode_threads_begin(engine *e);
void decode_threads_end(engine *e, int T, double dt);

/* The policy's factor on the logit scale of an attention call over n_keys keys (decode_attn.c:
 * the policy's logit_scale hook, else 1). */
float model_logit_factor(const struct kv_cache *kv, int n_keys);

/* Decode attention of layer l on the CPU (decode_attn.c): e->q's query heads over each KV
 * head's live cache (or e->kr_live in shifted-RoPE mode) → e->att [n_heads][head_dim], the
 * probabilities left in e->probs (rows probs_stride apart) for the policies, on n_threads
 * threads; the same floats for any thread count. */
void model_decode_attention(engine *e, int l, float scale, int n_threads);
/* Decode, before layer l's q/k/v product (after its matmul_next_hint): tells that product's
 * team workers (matmul_next_hint_bytes) the keys their share of model_decode_attention(e, l, .,
 * n_threads) reads, to prefetch while the caller writes the new token's K/V. Short caches only
 * (the heads split); the phases split gets none. Timing only. */
void model_decode_attention_hint(const engine *e, int l, int n_threads);

/* Seconds on CLOCK_MONOTONIC (util.c): the model's step, prefill and generation timings. */
double model_now_s(void);

/* The byte size of a scalar GGUF value type (gguf.c; 0 for string, array and unknown types). */
int gguf_type_size(int type);

/* The sampler chain's stages (sampler_stages.c), run by sampler.c over s->buf[0..s->n):
 * sampler_stage does one stage letter of SAMPLER_STAGES but 'e' (the penalties, sampler.c's);
 * sampler_mirostat truncates as Mirostat s->mirostat (1 or 2.0) after sampler_scale; the list
 * is then renormalized. sampler_softmax sets each candidate's p (do_sort: sorts the list first);
 * sampler_scale divides the logits by t (t ≤ 0: only the first largest stays finite). */
void sampler_stage(sampler *s, char stage);
void sampler_mirostat(sampler *s);
void sampler_adaptive(sampler *s);   /* adaptive-p's transform (s->adaptive_p set), the list renormalized */
void sampler_softmax(sampler *s, int do_sort);
void sampler_scale(sampler *s, float t);
/* The draws (sampler_rng.c; its generator: model.h's sampler_mt_*). sampler_draw_dist:
 * llama_sampler_dist_apply's pick over
 * s->buf[0..s->n) (n ≥ 1) in list order, from the logits (exp(logit − max) summed in double);
 * sampler_draw_discrete: std::discrete_distribution over the candidates' p (Mirostat's and
 * adaptive-p's llama_sample_dist; no draw for one candidate). Both use s->rng and return the
 * index taken. */
int sampler_draw_dist(sampler *s);
int sampler_draw_discrete(sampler *s);
/* DRY (sampler_dry.c; s->dry set): the stage over the list; the accepted-id window; freeing. */
void sampler_dry_apply(sampler *s);
void sampler_dry_accept(sampler *s, int id);
void sampler_dry_free(sampler *s);

#endif
