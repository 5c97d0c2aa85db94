/* The device state of the policies whose decode steps do more on the device than a plain append
 * (model/cuda/engine.cuh ce_setup_policy, called by ce_setup once the step buffers and max_cap
 * are known): the per-slot state of scissorhands / hashevict (EV_SH, EV_HASH) and hashevict's
 * projections, subgen_stream's sketch (EV_SS), the capped re-compressions' targets and scratch
 * (EV_SNAP, EV_SUBGEN, EV_ADA), and for every policy with device decode steps (dp.dev_decode) the
 * host mirror's freshness per region and the snap family's query ring on the device. */
#include "model/cuda/engine.cuh"

int ce_setup_policy(cuda_engine *ce, char *err, size_t errlen)
{
    kv_cache *kv = ce->kv;
    const int hd = kv->head_dim, H = kv->n_heads, Hkv = kv->n_kv_heads, qdim = H * hd;
    const int n_lh = kv->n_layers * kv->n_kv_heads;
    if ((ce->dp.evict == EV_SH || ce->dp.evict == EV_HASH) && ce->dp.dev_decode) {
        ce->sstate_words = ce->dp.evict == EV_SH ? EV_SH_WORDS : EV_HASH_WORDS;
        if (kv->ops->slot_state_bytes != ce->sstate_words * sizeof(unsigned long long)) {
            snprintf(err, errlen, "policy %s: %zu bytes of per-slot state, the device kernel keeps %zu", kv->ops->name,
                     kv->ops->slot_state_bytes, (size_t)ce->sstate_words * sizeof(unsigned long long));
            return -1;
        }
        DALLOC(ce->sstate, kv->n_slots * ce->sstate_words * sizeof(unsigned long long));
        ce->sstate_dirty = 1;
    }
    if (ce->dp.evict == EV_HASH && ce->dp.dev_decode) {
        int bits = 0;
        const float *R = hashevict_device_proj(kv, &bits);
        if (!R || bits != ce->dp.he_bits) {
            snprintf(err, errlen, "policy %s: no projections for the device", kv->ops->name);
            return -1;
        }
        const size_t rb = (size_t)kv->n_layers * bits * kv->head_dim * sizeof(float);
        DALLOC(ce->he_R, rb);
        CUDA_TRY(cudaMemcpy(ce->he_R, R, rb, cudaMemcpyHostToDevice));
    }
    if (ce->dp.evict == EV_SS && ce->dp.dev_decode) {
        /* subgen_stream: the device copy of the sketch (uploaded before the first device step
         * after each prefill, taken back by ce_refresh_mirror), its f32 weights, the attention's
         * scratch */
        ss_sketch *h = &ce->ss_h, *d = &ce->ss_d;
        if (subgen_stream_device_sketch(kv, h) != 0 || h->d != hd || h->t < 1 || h->s < 1 || h->m_max < 1) {
            snprintf(err, errlen, "policy %s: no sketch for the device", kv->ops->name);
            return -1;
        }
        *d = *h;
        const size_t nm = (size_t)h->n * h->m_max, ns = (size_t)h->n * h->s;
        ce_ss_array a[CE_SS_ARRAYS];
        ce_ss_arrays(ce, a);
        for (int i = 0; i < CE_SS_ARRAYS; i++)
            if (ce_dalloc(ce, a[i].dev, a[i].bytes, err, errlen) != 0) return -1;
        DALLOC(ce->ss_cw, nm * sizeof(float));
        DALLOC(ce->ss_mwt, ns * sizeof(float));
        ce->ss_stride = (size_t)ce->max_cap + 1 + (size_t)h->m_max * h->t + h->s;
        DALLOC(ce->ss_scratch, (size_t)H * ce->ss_stride * sizeof(float));
        ce->ss_dirty = 1;
    }
    const int recompress = ce->dp.evict == EV_SNAP || ce->dp.evict == EV_SUBGEN || ce->dp.evict == EV_ADA;
    if (recompress && ce->dp.dev_decode) {
        /* capped snapkv / pyramidkv / subgen: the targets the regions go back to; capped ada_*:
         * each layer's split parameters and the targets (the stride max_cap + 1 covers a layer's
         * arena: dp.relayout); the kernels' scratch */
        int ok = 0;
        if (ce->dp.evict == EV_SNAP) {
            ok = kv_device_snap_capped(kv, &ce->snap) == 0;
        } else if (ce->dp.evict == EV_SUBGEN) {
            ok = subgen_device_capped(kv, &ce->sg_target, &ce->sg_recent) == 0;
        } else {
            ce->ada = (kv_ada_capped *)calloc((size_t)kv->n_layers, sizeof *ce->ada);
            if (!ce->ada) {
                snprintf(err, errlen, "out of host memory");
                return -1;
            }
            ok = 1;
            for (int l = 0; l < kv->n_layers; l++)
                ok &= kv_device_ada_capped(kv, l, &ce->ada[l]) == 0 && ce->ada[l].arena <= ce->max_cap + 1;
            if (ok) ce->snap = ce->ada[0].c;
        }
        if (!ok) {
            snprintf(err, errlen, "policy %s: no capped re-compression for the device", kv->ops->name);
            return -1;
        }
        const size_t stride = (size_t)ce->max_cap + 1;
        if (ce->dp.evict != EV_SUBGEN) {
            DALLOC(ce->snap_target_d, (size_t)n_lh * sizeof(int));
            CUDA_TRY(cudaMemcpy(ce->snap_target_d, ce->snap.target, (size_t)n_lh * sizeof(int),
                                cudaMemcpyHostToDevice));
        }
        DALLOC(ce->rc_scratch, (size_t)Hkv * 4 * stride * sizeof(float));
        DALLOC(ce->rc_map, (size_t)Hkv * stride * sizeof(int));
    }
    if (ce->dp.dev_decode) {
        ce->kv_fresh = (int *)calloc((size_t)n_lh, sizeof(int));
        if (!ce->kv_fresh) {
            snprintf(err, errlen, "out of host memory");
            return -1;
        }
        for (int i = 0; i < n_lh; i++) ce->kv_fresh[i] = kv->cap[i] + 1; /* nothing behind yet */
        ce->h_qring = kv_device_query_ring(kv, &ce->qring_rows);
        if (ce->h_qring) {
            DALLOC(ce->qring, (size_t)kv->n_layers * ce->qring_rows * qdim * sizeof(float));
            CUDA_TRY(cudaMemcpy(ce->qring, ce->h_qring, (size_t)kv->n_layers * ce->qring_rows * qdim * sizeof(float),
                                cudaMemcpyHostToDevice));
        }
    }
    return 0;
}
