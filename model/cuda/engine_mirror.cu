/* Keeping the device KV cache in line with the host kv_cache mirror (model/cuda/engine.cuh):
 * row gathers for keep-lists and replayed slot moves, the upload of positions/scores/lengths,
 * and the decode/prefill steps of the policies whose selection runs on the host:
 * host-assisted ones (DEV_POLICY_HOST: the CPU hooks every step) and BUZZ (DEV_POLICY_ROUNDS:
 * the CPU round only on round steps). See model/device.c for which policy runs where. */
#include "model/cuda/engine.cuh"

/* Gathers rows src[0..n) of KV head g of layer l (src < n_live: live slot, else chunk row
 * src − n_live of ce->k/ce->v) into the region's first n slots, through the scratch (a parallel
 * in-place compaction would race, POLICIES.md §1.3). src: host pinned. */
int ce_gather_region(cuda_engine *ce, int l, int g, const int *src, int n, int n_live,
                         char *err, size_t errlen)
{
    if (n < 1) return 0;
    const model_config *c = &ce->w->cfg;
    const int hd = c->head_dim, kvdim = c->n_kv_heads * hd;
    size_t region = ce->kv->off[kv_idx(ce->kv, l, g)];
    CUDA_TRY(cudaMemcpyAsync(ce->src_d, src, (size_t)n * sizeof(int), cudaMemcpyHostToDevice, ce->st));
    LAUNCH(launch_kv_gather(ce->tmpk, ce->tmpv, ce->kc, ce->vc, ce->kv_dt, region, ce->src_d, n,
                            n_live, ce->k, ce->v, kvdim, g * hd, hd, ce->st));
    size_t bytes = (size_t)n * hd * ce->kv_es, at = region * hd * ce->kv_es;
    CUDA_TRY(cudaMemcpyAsync((char *)ce->kc + at, ce->tmpk, bytes, cudaMemcpyDeviceToDevice, ce->st));
    CUDA_TRY(cudaMemcpyAsync((char *)ce->vc + at, ce->tmpv, bytes, cudaMemcpyDeviceToDevice, ce->st));
    /* src is reused by the next call: wait for this upload */
    CUDA_TRY(cudaStreamSynchronize(ce->st));
    return 0;
}

/* A layer re-laid out by a host hook (dp.relayout, ada_*: eviction/policy_snapkv.c
 * snap_relayout moved regions and rewrote kv->cap/off): for every KV head g, rows
 * src[g * stride + i], i < n[g] (src < n_live[g]: live slot src of the region at its OLD offset
 * old_off[g]; else chunk row src − n_live[g] of ce->k/ce->v) are gathered into the scratch at
 * the head's NEW offset (relative to the layer's first slot; the arena's start and size never
 * change), the arena is copied back in one piece (regions overlap old ones: gathering in place
 * would race), and the new offsets, capacities, positions, scores and lengths are uploaded.
 * src: host pinned. */
int ce_gather_layer(cuda_engine *ce, int l, const size_t *old_off, const int *src, int stride,
                    const int *n, const int *n_live, char *err, size_t errlen)
{
    kv_cache *kv = ce->kv;
    const int hd = kv->head_dim, Hkv = kv->n_kv_heads, kvdim = Hkv * hd;
    const int i0 = kv_idx(kv, l, 0), i1 = kv_idx(kv, l, Hkv - 1);
    const size_t base = kv->off[i0], rows = kv->off[i1] + (size_t)kv->cap[i1] + 1 - base;
    if (rows > ce->tmp_rows) {
        snprintf(err, errlen, "policy %s: layer %d's regions grew to %zu slots, over the scratch of %zu",
                 kv->ops->name, l, rows, ce->tmp_rows);
        return -1;
    }
    CUDA_TRY(cudaMemcpyAsync(ce->src_d, src, (size_t)Hkv * stride * sizeof(int), cudaMemcpyHostToDevice, ce->st));
    for (int g = 0; g < Hkv; g++) {
        if (n[g] < 1) continue;
        size_t at = (kv->off[i0 + g] - base) * hd * ce->kv_es;
        LAUNCH(launch_kv_gather((char *)ce->tmpk + at, (char *)ce->tmpv + at, ce->kc, ce->vc, ce->kv_dt,
                                old_off[g], ce->src_d + (size_t)g * stride, n[g], n_live[g], ce->k,
                                ce->v, kvdim, g * hd, hd, ce->st));
    }
    size_t bytes = rows * hd * ce->kv_es, at = base * hd * ce->kv_es;
    CUDA_TRY(cudaMemcpyAsync((char *)ce->kc + at, ce->tmpk, bytes, cudaMemcpyDeviceToDevice, ce->st));
    CUDA_TRY(cudaMemcpyAsync((char *)ce->vc + at, ce->tmpv, bytes, cudaMemcpyDeviceToDevice, ce->st));
    CUDA_TRY(cudaMemcpyAsync(ce->off + i0, kv->off + i0, (size_t)Hkv * sizeof(size_t), cudaMemcpyHostToDevice, ce->st));
    CUDA_TRY(cudaMemcpyAsync(ce->cap + i0, kv->cap + i0, (size_t)Hkv * sizeof(int), cudaMemcpyHostToDevice, ce->st));
    if (ce_upload_layer_meta(ce, l, err, errlen)) return -1;
    /* src is reused by the next call: wait for this upload */
    CUDA_TRY(cudaStreamSynchronize(ce->st));
    return 0;
}

/* Did a host hook re-partition layer l (offsets other than ce->h_off_before)? */
static int layer_moved(const cuda_engine *ce, int l)
{
    const kv_cache *kv = ce->kv;
    if (!ce->dp.relayout) return 0;
    for (int g = 0; g < kv->n_kv_heads; g++)
        if (kv->off[kv_idx(kv, l, g)] != ce->h_off_before[g]) return 1;
    return 0;
}

static void save_offsets(cuda_engine *ce, int l)
{
    const kv_cache *kv = ce->kv;
    if (!ce->dp.relayout) return;
    for (int g = 0; g < kv->n_kv_heads; g++) ce->h_off_before[g] = kv->off[kv_idx(kv, l, g)];
}

/* Uploads the host mirror's positions, scores (device-scored policies) and lengths of layer l. */
int ce_upload_layer_meta(cuda_engine *ce, int l, char *err, size_t errlen)
{
    kv_cache *kv = ce->kv;
    int i0 = kv_idx(kv, l, 0), i1 = kv_idx(kv, l, kv->n_kv_heads - 1);
    size_t s0 = kv->off[i0], s1 = kv->off[i1] + (size_t)kv->cap[i1] + 1;
    /* on the stream (the engine's stream does not synchronise with the legacy default stream);
     * pageable sources are staged before cudaMemcpyAsync returns */
    CUDA_TRY(cudaMemcpyAsync(ce->pos + s0, kv->pos + s0, (s1 - s0) * sizeof(int32_t),
                             cudaMemcpyHostToDevice, ce->st));
    if (ce->score && kv->score)
        CUDA_TRY(cudaMemcpyAsync(ce->score + s0, kv->score + s0, (s1 - s0) * sizeof(float),
                                 cudaMemcpyHostToDevice, ce->st));
    CUDA_TRY(cudaMemcpyAsync(ce->len + i0, kv->len + i0, (size_t)kv->n_kv_heads * sizeof(int),
                             cudaMemcpyHostToDevice, ce->st));
    return 0;
}

/* Uploads the host mirror's positions of layer l (--rope shifted with host-assisted policies:
 * the rank rotation reads the device positions, which the host hooks' moves do not update). */
int ce_upload_layer_pos(cuda_engine *ce, int l, char *err, size_t errlen)
{
    kv_cache *kv = ce->kv;
    int i0 = kv_idx(kv, l, 0), i1 = kv_idx(kv, l, kv->n_kv_heads - 1);
    size_t s0 = kv->off[i0], s1 = kv->off[i1] + (size_t)kv->cap[i1] + 1;
    CUDA_TRY(cudaMemcpyAsync(ce->pos + s0, kv->pos + s0, (s1 - s0) * sizeof(int32_t),
                             cudaMemcpyHostToDevice, ce->st));
    return 0;
}

/* --rope shifted, host-assisted prefill: the rotated keys the attention used (ce->kr's live
 * rows, ce->krn) to the host in kv_prefill_chunk's layout, so on_prefill hooks that score keys
 * (kv_cand_key) see what the CPU engine gives them. */
static int shifted_keys_to_host(cuda_engine *ce, kv_prefill_chunk *c, char *err, size_t errlen)
{
    const model_config *cf = &ce->w->cfg;
    kv_cache *kv = ce->kv;
    const int n = c->n_new, Hkv = cf->n_kv_heads, hd = cf->head_dim, l = c->layer;
    const size_t live_stride = (size_t)ce->max_cap + 1;
    for (int g = 0; g < Hkv; g++) {
        int n_live = kv_len(kv, l, g);
        if (n_live < 1) continue;
        size_t at = kv->off[kv_idx(kv, l, g)] * hd;
        CUDA_TRY(cudaMemcpyAsync(ce->h_krl + (size_t)g * live_stride * hd, ce->kr + at,
                                 (size_t)n_live * hd * sizeof(float), cudaMemcpyDeviceToHost, ce->st));
    }
    /* the chunk's rotated keys [n][kvdim] → [Hkv][max_chunk][hd] (h_pv as the staging buffer,
     * refilled with the values by the caller afterwards) */
    CUDA_TRY(cudaMemcpyAsync(ce->h_pv, ce->krn, (size_t)n * Hkv * hd * sizeof(float),
                             cudaMemcpyDeviceToHost, ce->st));
    CUDA_TRY(cudaStreamSynchronize(ce->st));
    for (int g = 0; g < Hkv; g++)
        for (int i = 0; i < n; i++)
            memcpy(ce->h_krn + ((size_t)g * ce->max_chunk + i) * hd,
                   ce->h_pv + ((size_t)i * Hkv + g) * hd, (size_t)hd * sizeof(float));
    c->k_live_rot = ce->h_krl;
    c->rot_live_stride = (int)live_stride;
    c->k_new_rot = ce->h_krn;
    c->rot_new_stride = ce->max_chunk;
    return 0;
}

/* Host-assisted prefill: the CPU's kv_prefill on the host mirror with the chunk's q/k/v copied
 * back (the host mirror keeps real K/V rows, so hooks that read keys work as on the CPU); the
 * keep-lists are recovered from the positions (candidates: the live slots, then the chunk). */
int ce_host_prefill(cuda_engine *ce, kv_prefill_chunk *c, char *err, size_t errlen)
{
    const model_config *cf = &ce->w->cfg;
    kv_cache *kv = ce->kv;
    const int n = c->n_new, Hkv = cf->n_kv_heads, qdim = cf->n_heads * cf->head_dim;
    const int kvdim = Hkv * cf->head_dim, l = c->layer, cs = ce->cand_stride;
    if (ce->dp.rope_shifted && shifted_keys_to_host(ce, c, err, errlen)) return -1;
    CUDA_TRY(cudaMemcpyAsync(ce->h_pq, ce->q, (size_t)n * qdim * sizeof(float), cudaMemcpyDeviceToHost, ce->st));
    CUDA_TRY(cudaMemcpyAsync(ce->h_pk, ce->k, (size_t)n * kvdim * sizeof(float), cudaMemcpyDeviceToHost, ce->st));
    CUDA_TRY(cudaMemcpyAsync(ce->h_pv, ce->v, (size_t)n * kvdim * sizeof(float), cudaMemcpyDeviceToHost, ce->st));
    CUDA_TRY(cudaStreamSynchronize(ce->st));
    for (int g = 0; g < Hkv; g++) {
        int32_t *cand = ce->h_pos_before + (size_t)g * cs;
        int n_live = kv_len(kv, l, g);
        memcpy(cand, kv_positions(kv, l, g), (size_t)n_live * sizeof(int32_t));
        for (int i = 0; i < n; i++) cand[n_live + i] = c->pos0 + i;
    }
    c->q_new = ce->h_pq;
    c->k_new = ce->h_pk;
    c->v_new = ce->h_pv;
    save_offsets(ce, l);
    if (kv_prefill(kv, c, err, errlen) != 0) return -1;
    ce->relayout_pending = layer_moved(ce, l);
    for (int g = 0; g < Hkv; g++) {
        int n_keep = kv_len(kv, l, g);
        if (kv_moves_from_positions(ce->h_pos_before + (size_t)g * cs, ce->h_nlive[g] + n,
                                    kv_positions(kv, l, g), n_keep, ce->slot_of, ce->n_rope,
                                    ce->h_keep + (size_t)g * cs) != 0) {
            snprintf(err, errlen, "policy %s: prefill kept a position that was not a candidate "
                                  "(layer %d head %d)", kv->ops->name, l, g);
            return -1;
        }
        ce->h_nkeep[g] = n_keep;
    }
    return 0;
}

/* Host-assisted decode, KV write: the policy's pre_attn and kv_write run on the host mirror
 * (q/k/v copied back); the device writes the token at the chosen slot, or, when the hook moved
 * other slots too, gathers the region from its old slots and the new token. */
int ce_host_pre_attn(cuda_engine *ce, int l, int pos, char *err, size_t errlen)
{
    const model_config *c = &ce->w->cfg;
    kv_cache *kv = ce->kv;
    const int hd = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads, G = H / Hkv;
    const int qdim = H * hd, kvdim = Hkv * hd, cs = ce->cand_stride;
    float *hq = ce->h_qkv, *hk = hq + qdim, *hv = hk + kvdim;
    CUDA_TRY(cudaMemcpyAsync(hq, ce->q, (size_t)qdim * sizeof(float), cudaMemcpyDeviceToHost, ce->st));
    CUDA_TRY(cudaMemcpyAsync(hk, ce->k, (size_t)kvdim * sizeof(float), cudaMemcpyDeviceToHost, ce->st));
    CUDA_TRY(cudaMemcpyAsync(hv, ce->v, (size_t)kvdim * sizeof(float), cudaMemcpyDeviceToHost, ce->st));
    CUDA_TRY(cudaStreamSynchronize(ce->st));
    /* every region's positions before any hook (a re-laying out hook of head 0 moves the
     * others' too), then the hooks */
    for (int g = 0; g < Hkv; g++) {
        ce->h_nlive[g] = kv_len(kv, l, g);
        memcpy(ce->h_pos_before + (size_t)g * cs, kv_positions(kv, l, g),
               (size_t)ce->h_nlive[g] * sizeof(int32_t));
    }
    save_offsets(ce, l);
    for (int g = 0; g < Hkv; g++) {
        int slot = kv_decode_slot(kv, l, g, pos, hq + (size_t)g * G * hd, hk + (size_t)g * hd,
                                  hv + (size_t)g * hd);
        if (slot < 0 || slot > kv->cap[kv_idx(kv, l, g)]) {
            snprintf(err, errlen, "policy %s: slot %d outside the region (layer %d head %d)",
                     kv->ops->name, slot, l, g);
            return -1;
        }
        kv_write(kv, l, g, slot, pos, hk + (size_t)g * hd, hv + (size_t)g * hd);
    }
    const int moved = layer_moved(ce, l);
    for (int g = 0; g < Hkv; g++) {
        int n0 = ce->h_nlive[g];
        const int32_t *before = ce->h_pos_before + (size_t)g * cs;
        int n1 = kv_len(kv, l, g), ws;
        if (moved) {
            /* the layer was re-partitioned: gather every head (old slots + the new token) */
            memcpy(ce->h_cand, before, (size_t)n0 * sizeof(int32_t));
            ce->h_cand[n0] = pos;
            if (kv_moves_from_positions(ce->h_cand, n0 + 1, kv_positions(kv, l, g), n1, ce->slot_of,
                                        ce->n_rope, ce->h_keep + (size_t)g * cs) != 0) {
                snprintf(err, errlen, "policy %s: pre-attention re-layout not replayable (layer %d head %d)",
                         kv->ops->name, l, g);
                return -1;
            }
            ce->h_nkeep[g] = n1;
            ce->h_slots[g] = -1;
            continue;
        }
        int r = kv_decode_replay(before, n0, pos, kv_positions(kv, l, g), n1, ce->slot_of,
                                 ce->n_rope, ce->h_cand, ce->h_src, &ws);
        if (r < 0) {
            snprintf(err, errlen, "policy %s: pre-attention moves not replayable (layer %d head %d)",
                     kv->ops->name, l, g);
            return -1;
        }
        if (r == 1) {
            /* other slots moved: gather old slots + the new token (chunk row 0 = ce->k/ce->v) */
            if (ce_gather_region(ce, l, g, ce->h_src, n1, n0, err, errlen)) return -1;
            ws = -1;
        }
        ce->h_slots[g] = ws;
    }
    if (moved && ce_gather_layer(ce, l, ce->h_off_before, ce->h_keep, cs, ce->h_nkeep, ce->h_nlive,
                                 err, errlen))
        return -1;
    int i0 = kv_idx(kv, l, 0);
    CUDA_TRY(cudaMemcpyAsync(ce->slot_d, ce->h_slots, (size_t)Hkv * sizeof(int), cudaMemcpyHostToDevice, ce->st));
    CUDA_TRY(cudaMemcpyAsync(ce->len + i0, kv->len + i0, (size_t)Hkv * sizeof(int),
                             cudaMemcpyHostToDevice, ce->st));
    /* the device's positions follow the host's moves where it reads them: the rank rotation of
     * --rope shifted, device decode steps (dp.dev_decode) and the mirror refresh after them */
    if ((ce->dp.rope_shifted || ce->dp.dev_decode) && ce_upload_layer_pos(ce, l, err, errlen)) return -1;
    LAUNCH(launch_kv_write(ce->kc, ce->vc, ce->kv_dt, ce->pos, NULL, ce->off + i0, ce->len + i0,
                           ce->slot_d, ce->k, ce->v, Hkv, hd, pos, ce->st));
    /* h_slots is reused by the next layer: wait for its upload */
    CUDA_TRY(cudaStreamSynchronize(ce->st));
    return 0;
}

/* Host-assisted decode, after attention: the step's probabilities come back, the policy's
 * post_attn (every head) and post_attn_layer run on the host mirror, and the slot moves they
 * made (kv_evict_swap_last, kv_compact) are replayed on the device: new slot i takes the old
 * slot that held the same position (positions are unique within a region). */
int ce_host_post_attn(cuda_engine *ce, int l, int pos, char *err, size_t errlen)
{
    const model_config *c = &ce->w->cfg;
    kv_cache *kv = ce->kv;
    const int H = c->n_heads, Hkv = c->n_kv_heads, G = H / Hkv, i0 = kv_idx(kv, l, 0);
    const int stride = ce->slog_stride, cs = ce->cand_stride;
    const float *probs = NULL;
    if (ce->dp.want_probs) {
        int max_len = 0;
        for (int g = 0; g < Hkv; g++)
            if (kv_len(kv, l, g) > max_len) max_len = kv_len(kv, l, g);
        /* the attention kernel left the probabilities in slog (probs_out) */
        CUDA_TRY(cudaMemcpy2DAsync(ce->h_probs, (size_t)stride * sizeof(float), ce->slog,
                                   (size_t)stride * sizeof(float), (size_t)max_len * sizeof(float),
                                   H, cudaMemcpyDeviceToHost, ce->st));
        CUDA_TRY(cudaStreamSynchronize(ce->st));
        probs = ce->h_probs;
    }
    for (int g = 0; g < Hkv; g++) {
        ce->h_nlive[g] = kv_len(kv, l, g);
        memcpy(ce->h_pos_before + (size_t)g * cs, kv_positions(kv, l, g),
               (size_t)ce->h_nlive[g] * sizeof(int32_t));
    }
    save_offsets(ce, l);
    for (int g = 0; g < Hkv; g++)
        kv_post_attn(kv, l, g, pos, probs ? probs + (size_t)g * G * stride : NULL, stride);
    if (kv->ops->post_attn_layer) kv->ops->post_attn_layer(kv, l, pos, probs, stride);
    if (layer_moved(ce, l)) {
        /* the layer was re-partitioned (ada_*): gather every head into the new layout */
        for (int g = 0; g < Hkv; g++) {
            int n1 = kv_len(kv, l, g);
            if (kv_moves_from_positions(ce->h_pos_before + (size_t)g * cs, ce->h_nlive[g],
                                        kv_positions(kv, l, g), n1, ce->slot_of, ce->n_rope,
                                        ce->h_keep + (size_t)g * cs) != 0) {
                snprintf(err, errlen, "policy %s: a re-laid out slot holds a position that was not "
                                      "cached before its hook (layer %d head %d)", kv->ops->name, l, g);
                return -1;
            }
            ce->h_nkeep[g] = n1;
        }
        return ce_gather_layer(ce, l, ce->h_off_before, ce->h_keep, cs, ce->h_nkeep, ce->h_nlive,
                               err, errlen);
    }
    for (int g = 0; g < Hkv; g++) {
        int n0 = ce->h_nlive[g], n1 = kv_len(kv, l, g);
        const int32_t *before = ce->h_pos_before + (size_t)g * cs, *P = kv_positions(kv, l, g);
        if (n1 == n0 && !memcmp(before, P, (size_t)n0 * sizeof(int32_t))) continue;
        if (kv_moves_from_positions(before, n0, P, n1, ce->slot_of, ce->n_rope, ce->h_src) != 0) {
            snprintf(err, errlen, "policy %s: a slot holds a position that was not cached before "
                                  "its hook (layer %d head %d); not replayable on the device",
                     kv->ops->name, l, g);
            return -1;
        }
        if (ce_gather_region(ce, l, g, ce->h_src, n1, n0, err, errlen)) return -1;
    }
    CUDA_TRY(cudaMemcpyAsync(ce->len + i0, kv->len + i0, (size_t)Hkv * sizeof(int),
                             cudaMemcpyHostToDevice, ce->st));
    if (ce->dp.rope_shifted || ce->dp.dev_decode) return ce_upload_layer_pos(ce, l, err, errlen);
    return 0;
}

/* BUZZ on the device (DEV_POLICY_ROUNDS), the host mirror's side of a step: the device appended
 * the token to every region of layer l (and added the step's probabilities to the scores); the
 * mirror appends it too. Returns 1 when a region of the layer is now over its capacity. */
int ce_rounds_append(cuda_engine *ce, int l, int pos)
{
    kv_cache *kv = ce->kv;
    int over = 0;
    for (int g = 0; g < kv->n_kv_heads; g++) {
        int idx = kv_idx(kv, l, g), slot = kv->len[idx];
        kv->pos[kv->off[idx] + slot] = pos;
        if (kv->score) kv->score[kv->off[idx] + slot] = 0.0f;
        kv->len[idx] = slot + 1;
        over |= kv->len[idx] > kv->cap[idx];
    }
    return over;
}

/* BUZZ after the device's append and score accumulation of layer l: the mirror appends; on a
 * round step (a region over capacity) the layer's scores come back, the policy's post_attn runs
 * on the mirror without probabilities (they are in the scores already), the device replays the
 * moves and gets the mirror's positions, scores and lengths back. Between rounds nothing waits
 * on the host (those steps are graph replays: engine_decode.cu). */
int ce_rounds_post_attn(cuda_engine *ce, int l, int pos, char *err, size_t errlen)
{
    kv_cache *kv = ce->kv;
    const int Hkv = kv->n_kv_heads, cs = ce->cand_stride;
    int over = ce_rounds_append(ce, l, pos);
    if (!over) return 0;
    int i0 = kv_idx(kv, l, 0), i1 = kv_idx(kv, l, Hkv - 1);
    size_t s0 = kv->off[i0], s1 = kv->off[i1] + (size_t)kv->cap[i1] + 1;
    CUDA_TRY(cudaMemcpyAsync(kv->score + s0, ce->score + s0, (s1 - s0) * sizeof(float),
                             cudaMemcpyDeviceToHost, ce->st));
    CUDA_TRY(cudaStreamSynchronize(ce->st));
    for (int g = 0; g < Hkv; g++) {
        ce->h_nlive[g] = kv_len(kv, l, g);
        memcpy(ce->h_pos_before + (size_t)g * cs, kv_positions(kv, l, g),
               (size_t)ce->h_nlive[g] * sizeof(int32_t));
    }
    for (int g = 0; g < Hkv; g++) kv_post_attn(kv, l, g, pos, NULL, ce->slog_stride);
    for (int g = 0; g < Hkv; g++) {
        int n0 = ce->h_nlive[g], n1 = kv_len(kv, l, g);
        const int32_t *before = ce->h_pos_before + (size_t)g * cs, *P = kv_positions(kv, l, g);
        if (n1 > kv->cap[kv_idx(kv, l, g)]) {
            snprintf(err, errlen, "policy %s: %d slots over the capacity %d after its round "
                                  "(layer %d head %d)", kv->ops->name, n1, kv->cap[kv_idx(kv, l, g)], l, g);
            return -1;
        }
        if (n1 == n0 && !memcmp(before, P, (size_t)n0 * sizeof(int32_t))) continue;
        if (kv_moves_from_positions(before, n0, P, n1, ce->slot_of, ce->n_rope, ce->h_src) != 0) {
            snprintf(err, errlen, "policy %s: a slot holds a position that was not cached before "
                                  "its round (layer %d head %d)", kv->ops->name, l, g);
            return -1;
        }
        if (ce_gather_region(ce, l, g, ce->h_src, n1, n0, err, errlen)) return -1;
    }
    return ce_upload_layer_meta(ce, l, err, errlen);
}


/* After decode steps that kept positions, scores and lengths on the device only (the device
 * policies, BUZZ between rounds, the device steps of dp.dev_decode): the host mirror reads them
 * back before a policy's hook or on_prefill uses it, and the lengths it kept by rule must equal
 * the device's. With dp.dev_decode, also the K/V rows the device wrote or moved since the host
 * last held them (rows kv_fresh[i].. of each region), the snap family's query ring, and the
 * per-slot policy state is reset where rows moved (it is recomputed from the rows). */
int ce_refresh_mirror(cuda_engine *ce, char *err, size_t errlen)
{
    kv_cache *kv = ce->kv;
    const int n_lh = kv->n_layers * kv->n_kv_heads, hd = kv->head_dim;
    CUDA_TRY(cudaMemcpyAsync(kv->pos, ce->pos, kv->n_slots * sizeof(int32_t), cudaMemcpyDeviceToHost, ce->st));
    if (ce->score && kv->score)
        CUDA_TRY(cudaMemcpyAsync(kv->score, ce->score, kv->n_slots * sizeof(float), cudaMemcpyDeviceToHost, ce->st));
    CUDA_TRY(cudaMemcpyAsync(ce->h_len, ce->len, (size_t)n_lh * sizeof(int), cudaMemcpyDeviceToHost, ce->st));
    int moved = 0;
    if (ce->rows_stale) {
        for (int i = 0; i < n_lh; i++) {
            size_t from = (size_t)ce->kv_fresh[i], rows = (size_t)kv->cap[i] + 1;
            if (from >= rows) continue;
            moved |= from == 0;
            size_t at = (kv->off[i] + from) * hd * ce->kv_es, bytes = (rows - from) * hd * ce->kv_es;
            CUDA_TRY(cudaMemcpyAsync((char *)kv->k_data + at, (char *)ce->kc + at, bytes, cudaMemcpyDeviceToHost, ce->st));
            CUDA_TRY(cudaMemcpyAsync((char *)kv->v_data + at, (char *)ce->vc + at, bytes, cudaMemcpyDeviceToHost, ce->st));
        }
        if (ce->sstate) /* scissorhands' histories, hashevict's codes (sums, ages): moved and grown with the rows */
            CUDA_TRY(cudaMemcpyAsync(kv->state, ce->sstate, kv->n_slots * ce->sstate_words * sizeof(unsigned long long),
                                     cudaMemcpyDeviceToHost, ce->st));
        if (ce->ss_d.head && ce_ss_copy(ce, 0, err, errlen)) return -1; /* subgen_stream's sketch */
        if (ce->qring)
            CUDA_TRY(cudaMemcpyAsync(ce->h_qring, ce->qring,
                                     (size_t)kv->n_layers * ce->qring_rows * kv->n_heads * hd * sizeof(float),
                                     cudaMemcpyDeviceToHost, ce->st));
    }
    CUDA_TRY(cudaStreamSynchronize(ce->st));
    for (int i = 0; i < n_lh; i++)
        if (ce->h_len[i] != kv->len[i]) {
            snprintf(err, errlen, "the host mirror of the cache lengths is out of step with the device: region %d "
                                  "(layer %d, KV head %d) holds %d slots on the device, %d on the host",
                     i, i / kv->n_kv_heads, i % kv->n_kv_heads, ce->h_len[i], kv->len[i]);
            return -1;
        }
    if (ce->rows_stale) {
        /* slots moved on the device: per-slot state recomputed (l2norm), or taken back above */
        if (moved && !ce->sstate) kv_device_reset_state(kv);
        for (int i = 0; i < n_lh; i++) ce->kv_fresh[i] = kv->cap[i] + 1;
        ce->rows_stale = 0;
    }
    ce->mirror_stale = 0;
    return 0;
}

/* The snap family's query ring, host → device (after a prefill put the chunk's last queries in
 * it; decode steps then write it on the device, host-assisted ones on both sides). */
int ce_upload_qring(cuda_engine *ce, char *err, size_t errlen)
{
    const kv_cache *kv = ce->kv;
    CUDA_TRY(cudaMemcpyAsync(ce->qring, ce->h_qring,
                             (size_t)kv->n_layers * ce->qring_rows * kv->n_heads * kv->head_dim * sizeof(float),
                             cudaMemcpyHostToDevice, ce->st));
    return 0;
}

/* subgen_stream's sketch arrays, host policy ↔ device copy (the same layout, kernels/cuda/ss_sketch.h) */
void ce_ss_arrays(cuda_engine *ce, ce_ss_array a[CE_SS_ARRAYS])
{
    const ss_sketch *h = &ce->ss_h;
    ss_sketch *d = &ce->ss_d;
    const size_t n = (size_t)h->n, nm = n * h->m_max, ns = n * h->s, hd = (size_t)h->d;
    const ce_ss_array t[CE_SS_ARRAYS] = {{h->head, (void **)&d->head, n * sizeof(ss_head)},
                                         {h->rep, (void **)&d->rep, nm * hd * sizeof(float)},
                                         {h->count, (void **)&d->count, nm * sizeof(int64_t)},
                                         {h->samp, (void **)&d->samp, nm * h->t * hd * sizeof(float)},
                                         {h->samp_pos, (void **)&d->samp_pos, nm * h->t * sizeof(int32_t)},
                                         {h->mk, (void **)&d->mk, ns * hd * sizeof(float)},
                                         {h->mv, (void **)&d->mv, ns * hd * sizeof(float)},
                                         {h->mw2, (void **)&d->mw2, ns * sizeof(double)},
                                         {h->mpos, (void **)&d->mpos, ns * sizeof(int32_t)}};
    for (int i = 0; i < CE_SS_ARRAYS; i++) a[i] = t[i];
}

int ce_ss_copy(cuda_engine *ce, int to_dev, char *err, size_t errlen)
{
    ce_ss_array a[CE_SS_ARRAYS];
    ce_ss_arrays(ce, a);
    for (int i = 0; i < CE_SS_ARRAYS; i++)
        CUDA_TRY(cudaMemcpyAsync(to_dev ? *a[i].dev : a[i].host, to_dev ? a[i].host : *a[i].dev, a[i].bytes,
                                 to_dev ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, ce->st));
    return 0;
}
