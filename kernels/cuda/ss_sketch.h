/* kernels/cuda/ss_sketch.h — subgen_stream's sketch (POLICIES.md §8.3) as plain arrays: the
 * layout the CPU policy (eviction/policy_subgen_stream.c) keeps and the device's decode step
 * (kernels/cuda/ss_insert.cu, ss_attend.cu) mirrors byte for byte, so the engine copies it
 * either way as it is. Plain C (no kv_cache), beside evict_modes.h: the kernels layer owns it
 * so that eviction/ includes it downward. */
#ifndef LLM_SS_SKETCH_H
#define LLM_SS_SKETCH_H

#include <stdint.h>

/* Sketch of one (layer, KV head): scalars here, arrays in ss_sketch at index idx = kv_idx. */
typedef struct {
    int m;           /* clusters */
    int delta_set;   /* δ fixed (by --ss-delta, or at the first insertion) */
    double delta;
    int64_t n_ins;   /* tokens inserted = Σ n_i */
    double mu;       /* Σ ‖v‖² of the inserted tokens */
} ss_head;

/* The arrays of every (layer, KV head): n = n_layers · n_kv_heads regions, d = head_dim. */
typedef struct {
    int r, s, t, m_max, d, n;
    ss_head *head;     /* [n] */
    float *rep;        /* [n][m_max][d] cluster representatives */
    int64_t *count;    /* [n][m_max] cluster sizes n_i */
    float *samp;       /* [n][m_max][t][d] cluster samples S_i */
    int32_t *samp_pos; /* [n][m_max][t] their positions */
    float *mk, *mv;    /* [n][s][d] value-norm samples: keys, values */
    double *mw2;       /* [n][s] their ‖v‖² */
    int32_t *mpos;     /* [n][s] their positions, -1 = empty */
} ss_sketch;

/* The random streams of §1.6 (evict_rng_u01's `stream`) */
#define SS_STREAM_S 0x534753545253ULL /* "SGSTRS": cluster sample reservoirs */
#define SS_STREAM_M 0x534753545244ULL /* "SGSTRM": value-norm sample reservoirs */

#endif
