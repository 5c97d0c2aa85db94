/* The device engine's decode step (model/cuda/cuda_engine.h, cuda_engine_decode): one token
 * through every layer, same order as model/forward.c engine_decode, five kernels per layer
 * (six with --rope shifted):
 *   1. RMSNorm + q/k/v GEMVs + biases + RoPE + K/V rounded to the cache's dtype (+ appended to
 *      the cache, device policies) — kernels/cuda/gemv.cu GV_QKV
 *   2. attention over the live slots (split over the length), its statistics, the device
 *      policies' eviction and the length update — kernels/cuda/attn_decode.cu
 *      (--rope shifted: one more before it, the rank rotation of the live keys, and with an
 *      evict-then-attend policy the eviction in that kernel instead — select.cu
 *      launch_ete_shifted: its victim changes the older keys' ranks); subgen_stream (EV_SS):
 *      two kernels instead, its window/sketch update and its estimator (ss_insert.cu,
 *      ss_attend.cu, POLICIES.md §8.3); capped snapkv / pyramidkv / subgen (EV_SNAP,
 *      EV_SUBGEN): one more after it, the re-compression of a region the append filled
 *      (snap_recompress.cu, subgen_recompress.cu, §7.6); capped ada_* (EV_ADA): one more too,
 *      the re-split of a layer with a filled region over its heads (ada_recompress.cu, §6.2)
 *   3. o-proj (+ bias) + residual — GV_ADD
 *   4. RMSNorm + gate/up GEMVs + SwiGLU — GV_SWIGLU
 *   5. down-proj + residual — GV_ADD
 * plus the embedding, the final RMSNorm + LM head, the argmax, the step parameters' copy in
 * (token, position, logit scales) and the next token's copy out. The token and the position are
 * read from device memory, so for the policies that run on the device (full, local, streaming,
 * h2o; BUZZ between rounds) the whole step is captured once as a CUDA graph (one per "logits
 * row wanted or not") and replayed every step: one graph launch and ONE host synchronisation per
 * token, the sampled id coming back (and the logits row when asked). The host keeps its mirror
 * of the lengths by rule (the device policies grow every region by one and evict back to
 * capacity; cuda_engine_prefill checks it against the device when it next reads the mirror).
 * Host-assisted policies (DEV_POLICY_HOST: their hooks run on the host every layer) and BUZZ's
 * round steps launch the same kernels one by one with the host's work in between (documented
 * exceptions to the one-sync rule: tests/test_cuda_emu.sh measures them). A host-assisted policy
 * with dp.dev_decode runs its decode steps as device steps instead (the prefill-only family
 * while no region is full: an append, the mirror appends by rule and its K/V rows and query ring
 * are brought back before the host next needs them, ce_refresh_mirror; capped snapkv / pyramidkv
 * / subgen on every step, a filled region's length going to its target by rule; capped ada_*
 * on every step, a re-split layer's lengths, capacities and targets carried back behind the
 * token in the same copy, kv_device_ada_recompressed). LLM_CUDA_GRAPH=0
 * launches the graph's kernels directly. */
#include "model/cuda/engine.cuh"

/* A device step of this policy appends in every region (the re-compressions of EV_SNAP /
 * EV_SUBGEN after it are not the attention kernel's eviction) */
static int ce_appends(const cuda_engine *ce)
{
    return ce->dp.evict == EV_NONE || ce->dp.evict == EV_SNAP || ce->dp.evict == EV_SUBGEN || ce->dp.evict == EV_ADA;
}

/* Enqueues one decode step for the token and position in ce->h_step. hooks: run the host
 * policies' work in between (DEV_POLICY_HOST; BUZZ's rounds) — 0 only for a graph capture of a
 * device step, which then contains no host wait. */
/* The fields the two capped re-compressions (snap_rc_args, ada_rc_args: kernels_cuda.cuh) take
 * alike, for layer l whose heads' entries start at i0: the cache, the ring of this layer's
 * queries, the step, and the scratch (the rest is zeroed). */
template <typename A>
static void rc_common_args(A *r, const cuda_engine *ce, int l, size_t i0, int hd, int Hkv, int H, int G, float scale)
{
    memset(r, 0, sizeof *r);
    r->kc = ce->kc, r->vc = ce->vc, r->kv_dt = ce->kv_dt, r->head_dim = hd, r->n_kv_heads = Hkv;
    r->n_heads = H, r->G = G, r->pos = ce->pos, r->score = ce->score;
    r->off = ce->off + i0, r->len = ce->len + i0, r->cap = ce->cap + i0, r->target = ce->snap_target_d + i0;
    r->step = ce->step_d, r->q_ring = ce->qring + (size_t)l * ce->qring_rows * H * hd, r->q_ring_rows = ce->qring_rows;
    r->scale = scale;
    r->scratch = ce->rc_scratch, r->map = ce->rc_map, r->stride = (size_t)ce->max_cap + 1;
}

static int enqueue_step(cuda_engine *ce, int hooks, int want_logits, char *err, size_t errlen)
{
    const model_config *c = &ce->w->cfg;
    kv_cache *kv = ce->kv;
    const int dim = c->hidden_size, hd = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads, G = H / Hkv;
    const int V = c->vocab_size, n_lh = kv->n_layers * kv->n_kv_heads, pos = ce->h_step[1];
    const float scale = 1.0f / sqrtf((float)hd);
    const int device = !ce->host_step, shifted = ce->dp.rope_shifted;
    CUDA_TRY(cudaMemcpyAsync(ce->step_d, ce->h_step, (size_t)(2 + n_lh) * sizeof(int), cudaMemcpyHostToDevice,
                             ce->st));
    LAUNCH(launch_embed(ce->embed.data, ce->embed.dt, ce->step_d, 1, dim, ce->x, ce->st));
    for (int l = 0; l < c->n_layers; l++) {
        const dlayer *dl = &ce->layers[l];
        const int i0 = kv_idx(kv, l, 0);
        gv_args a;
        memset(&a, 0, sizeof a);
        a.m[0] = cu_of(dl->wq), a.m[1] = cu_of(dl->wk), a.m[2] = cu_of(dl->wv);
        a.nm = 3;
        a.epi = GV_QKV;
        a.x = ce->x;
        a.norm_w = dl->attn_norm;
        a.eps = c->rms_norm_eps;
        a.y[0] = ce->q, a.y[1] = ce->k, a.y[2] = ce->v;
        a.qkv.bias[0] = dl->bq, a.qkv.bias[1] = dl->bk, a.qkv.bias[2] = dl->bv;
        a.qkv.cos_t = shifted ? NULL : ce->rope_cos;
        a.qkv.sin_t = shifted ? NULL : ce->rope_sin;
        a.qkv.step = ce->step_d;
        a.qkv.head_dim = hd;
        a.qkv.kv_dt = ce->kv_dt;
        if (device) { /* appended at slot len[g]; the attention kernel counts it and grows len */
            a.qkv.kc = ce->kc, a.qkv.vc = ce->vc, a.qkv.pos = ce->pos, a.qkv.score = ce->score;
            a.qkv.off = ce->off + i0, a.qkv.len = ce->len + i0;
        }
        LAUNCH(launch_gemv(&a, ce->gemv_blocks, ce->st));
        if (!device && ce_host_pre_attn(ce, l, pos, err, errlen)) return -1;
        /* --rope shifted: the live keys (the new one included) rotated by rank into ce->kr; an
         * evict-then-attend policy's device step evicts first (its victim changes the ranks of
         * the keys older than it), in the same kernel, and the attention then evicts nothing */
        const void *katt = ce->kc;
        int k_dt = ce->kv_dt;
        const int ete_shifted = shifted && device && EV_IS_ETE(ce->dp.evict);
        if (ete_shifted) {
            ete_shift_args es;
            memset(&es, 0, sizeof es);
            es.kc = ce->kc, es.vc = ce->vc, es.kv_dt = ce->kv_dt, es.head_dim = hd, es.n_kv_heads = Hkv;
            es.kr = ce->kr, es.pos = ce->pos;
            /* l2norm's norms, h2o's scores, scissorhands' prefill scores (moved with their slots;
             * hashevict: whatever the array holds, moved too) */
            es.score = ce->dp.evict == EV_RANDOM ? NULL : ce->score;
            es.off = ce->off + i0, es.len = ce->len + i0, es.cap = ce->cap + i0, es.step = ce->step_d;
            es.evict = ce->dp.evict, es.n_sink = ce->dp.n_sink, es.n_recent = ce->dp.n_recent;
            es.mean = ce->dp.mean, es.layer = l, es.seed = ce->dp.seed;
            es.cos_t = ce->rope_cos, es.sin_t = ce->rope_sin;
            es.sstate = ce->sstate, es.sh_hist = ce->dp.sh_hist;
            es.q = ce->q, es.G = G;
            es.he_R = ce->he_R ? ce->he_R + (size_t)l * ce->dp.he_bits * hd : NULL;
            es.he_bits = ce->dp.he_bits, es.he_probe = ce->dp.he_probe;
            LAUNCH(launch_ete_shifted(&es, ce->st));
        } else if (shifted) {
            LAUNCH(launch_rope_live(ce->kr, ce->kc, ce->kv_dt, ce->pos, ce->off + i0, ce->len + i0, device, Hkv, hd,
                                    ce->rope_cos, ce->rope_sin, ce->max_cap + 1, ce->st));
        }
        if (shifted) {
            katt = ce->kr;
            k_dt = CU_F32;
        }
        const float *hs = NULL;
        if (ce->dp.logit_scale) {
            if (device) hs = ce->hscale_d + i0; /* filled for every layer before the step */
            else if (!(hs = ce_head_scales(ce, l, 0, scale, err, errlen))) return -1;
        }
        if (device && ce->dp.evict == EV_SS) {
            /* subgen_stream (§8.3): the window slot that leaves goes into the sketch and the new
             * token takes it (or appends), then the estimator over window and sketch */
            ss_step_args ss;
            memset(&ss, 0, sizeof ss);
            ss.kc = ce->kc, ss.vc = ce->vc, ss.kv_dt = ce->kv_dt, ss.head_dim = hd, ss.n_kv_heads = Hkv;
            ss.layer = l, ss.pos = ce->pos, ss.score = ce->score;
            ss.off = ce->off + i0, ss.len = ce->len + i0, ss.cap = ce->cap + i0, ss.seed = ce->dp.seed;
            ss.sk = ce->ss_d, ss.cw = ce->ss_cw, ss.mwt = ce->ss_mwt;
            ss.q = ce->q, ss.out = ce->att, ss.G = G, ss.scale = scale;
            ss.scratch = ce->ss_scratch, ss.scratch_stride = ce->ss_stride;
            LAUNCH(launch_ss_insert(&ss, ce->st));
            LAUNCH(launch_ss_attend(&ss, ce->st));
        } else if (ce->dp.host_attend && !device) {
            /* a host step: the policy's own attention (subgen_stream, §8.3) on the host mirror's
             * K/V and state, with the query ce_host_pre_attn copied back (h_qkv) */
            for (int g = 0; g < Hkv; g++)
                kv->ops->attend(kv, l, g, ce->h_qkv + (size_t)g * G * hd, scale, ce->h_att + (size_t)g * G * hd);
            CUDA_TRY(cudaMemcpyAsync(ce->att, ce->h_att, (size_t)H * hd * sizeof(float), cudaMemcpyHostToDevice,
                                     ce->st));
        } else {
            attn_step_args s;
            memset(&s, 0, sizeof s);
            s.q = ce->q;
            s.kc = katt, s.k_dt = k_dt, s.vc = ce->vc, s.v_dt = ce->kv_dt;
            s.off = ce->off + i0, s.len = ce->len + i0, s.cap = ce->cap + i0, s.ring = ce->ring + i0;
            s.n_extra = device && !ete_shifted; /* ete_shifted: len already counts the new token */
            s.n_heads = H, s.G = G, s.head_dim = hd, s.scale = scale, s.head_scale = hs;
            s.split_len = ce->split_len, s.n_split = ce->n_split;
            s.part_acc = ce->part_acc, s.part_ml = ce->part_ml;
            s.slog = ce->dp.want_probs ? ce->slog : NULL, s.slog_stride = ce->slog_stride;
            /* the probabilities: to the host (host steps), left in slog for tova's layer-wise
             * choice, or added to the scores (h2o, BUZZ) */
            s.probs_out = ce->dp.want_probs && (!device || ce->dp.evict == EV_TOVA);
            s.score = device && ce->dp.want_probs && ce->dp.evict != EV_TOVA && ce->dp.evict != EV_SH ? ce->score
                                                                                                     : NULL;
            /* l2norm's key norms; scissorhands' scores (the prefill column sums its next
             * prefill ranks by: only moved with their slots, zeroed for the new token) */
            s.knorm = !ete_shifted && (ce->dp.evict == EV_L2NORM || ce->dp.evict == EV_SH) ? ce->score : NULL;
            s.ev_part = ce->ev_part, s.layer = l, s.seed = ce->dp.seed;
            /* 0 for ROUNDS; ete_shifted: evicted already (scissorhands keeps its mode: the
             * histories are pushed after the attention, which finds no region over capacity) */
            s.evict = device && (!ete_shifted || ce->dp.evict == EV_SH) && !ce_appends(ce) ? ce->dp.evict : EV_NONE;
            s.n_sink = ce->dp.n_sink, s.n_recent = ce->dp.n_recent, s.mean = ce->dp.mean;
            s.score_set = ce->dp.score_set;
            s.sstate = ce->sstate, s.sh_hist = ce->dp.sh_hist;
            s.he_R = ce->he_R ? ce->he_R + (size_t)l * ce->dp.he_bits * hd : NULL;
            s.he_bits = ce->dp.he_bits, s.he_probe = ce->dp.he_probe;
            s.step = ce->step_d;
            s.kw = ce->kc, s.vw = ce->vc, s.kv_dt = ce->kv_dt, s.pos = ce->pos;
            s.rope_cos = shifted ? ce->rope_cos : NULL, s.rope_sin = shifted ? ce->rope_sin : NULL;
            s.out = ce->att, s.lse = ce->lse, s.counter = ce->counter_d;
            if (ce->qring) s.q_ring = ce->qring + (size_t)l * ce->qring_rows * H * hd, s.q_ring_rows = ce->qring_rows;
            LAUNCH(launch_attn_step(&s, ce->st));
        }
        if (device && ce->dp.evict == EV_SNAP) {
            /* capped snapkv / pyramidkv (§7.6): a region the append filled is re-compressed from
             * the ring (which the attention has just given this step's queries) */
            snap_rc_args r;
            rc_common_args(&r, ce, l, i0, hd, Hkv, H, G, scale);
            r.w = ce->snap.w, r.kernel = ce->snap.kernel, r.pool_avg = ce->snap.pool_avg, r.gqa_max = ce->snap.gqa_max;
            LAUNCH(launch_snap_recompress(&r, ce->st));
        } else if (device && ce->dp.evict == EV_ADA) {
            /* capped ada_* (§6.2): a layer with a region the append filled is re-split over its
             * heads and re-partitioned; its lengths, capacities, targets go to the copy back */
            const kv_ada_capped *ad = &ce->ada[l];
            ada_rc_args r;
            rc_common_args(&r, ce, l, i0, hd, Hkv, H, G, scale);
            r.w = ad->c.w, r.kernel = ad->c.kernel, r.pool_avg = ad->c.pool_avg, r.gqa_max = ad->c.gqa_max;
            r.base = ad->base, r.arena = ad->arena, r.cap_max = ad->cap_max, r.keep_max = ad->keep_max;
            r.slack = ad->slack, r.alloc_ref = ad->alloc_ref;
            r.oma = ad->oma, r.a_share = ad->a_share, r.a_floor = ad->a_floor;
            r.rep_len = ce->next_d + 1 + i0, r.rep_cap = r.rep_len + n_lh, r.rep_target = r.rep_cap + n_lh;
            LAUNCH(launch_ada_recompress(&r, ce->st));
        } else if (device && ce->dp.evict == EV_SUBGEN) {
            /* capped subgen (§8.2): a region past its capacity goes back to C' by k-center */
            subgen_rc_args r;
            memset(&r, 0, sizeof r);
            r.kc = ce->kc, r.vc = ce->vc, r.kv_dt = ce->kv_dt, r.head_dim = hd, r.n_kv_heads = Hkv;
            r.pos = ce->pos, r.score = ce->score, r.off = ce->off + i0, r.len = ce->len + i0, r.cap = ce->cap + i0;
            r.target = ce->sg_target, r.recent = ce->sg_recent;
            r.dist = (double *)ce->rc_scratch, r.map = ce->rc_map, r.stride = (size_t)ce->max_cap + 1;
            LAUNCH(launch_subgen_recompress(&r, ce->st));
        }
        if (hooks && ce->dp.mode == DEV_POLICY_ROUNDS && ce_rounds_post_attn(ce, l, pos, err, errlen)) return -1;
        if (hooks && ce->host_step && ce_host_post_attn(ce, l, pos, err, errlen)) return -1;
        /* o-proj (+ bias) + residual; RMSNorm + gate/up + SwiGLU; down-proj + residual */
        if (ce_linear(ce, ce->x, ce->att, &dl->wo, 1, dl->bo, 1, err, errlen)) return -1;
        memset(&a, 0, sizeof a);
        a.m[0] = cu_of(dl->gate), a.m[1] = cu_of(dl->up);
        a.nm = 2;
        a.epi = GV_SWIGLU;
        a.x = ce->x;
        a.norm_w = dl->ffn_norm;
        a.eps = c->rms_norm_eps;
        a.y[0] = ce->hb;
        LAUNCH(launch_gemv(&a, ce->gemv_blocks, ce->st));
        if (ce_linear(ce, ce->x, ce->hb, &dl->down, 1, NULL, 1, err, errlen)) return -1;
    }
    /* final RMSNorm + LM head, the greedy choice, the copies back */
    gv_args a;
    memset(&a, 0, sizeof a);
    a.m[0] = cu_of(ce->lm_head);
    a.nm = 1;
    a.epi = GV_STORE;
    a.x = ce->x;
    a.norm_w = ce->final_norm;
    a.eps = c->rms_norm_eps;
    a.y[0] = ce->logits;
    LAUNCH(launch_gemv(&a, ce->gemv_blocks, ce->st));
    LAUNCH(launch_argmax(ce->logits, V, ce->next_d, ce->st));
    /* the token (EV_ADA device steps: and every region's length, capacity, target) */
    CUDA_TRY(cudaMemcpyAsync(ce->h_next, ce->next_d, (size_t)(device ? ce->next_words : 1) * sizeof(int),
                             cudaMemcpyDeviceToHost, ce->st));
    if (want_logits)
        CUDA_TRY(cudaMemcpyAsync(ce->h_logits, ce->logits, (size_t)V * sizeof(float), cudaMemcpyDeviceToHost, ce->st));
    return 0;
}

/* The device step as a CUDA graph (once per want_logits). */
static int capture_step(cuda_engine *ce, int want_logits, char *err, size_t errlen)
{
    cudaGraph_t g = NULL;
    CUDA_TRY(cudaStreamBeginCapture(ce->st, cudaStreamCaptureModeThreadLocal));
    int rc = enqueue_step(ce, 0, want_logits, err, errlen);
    cudaError_t e = cudaStreamEndCapture(ce->st, &g);
    if (rc) {
        if (g) cudaGraphDestroy(g);
        return -1;
    }
    CUDA_TRY(e);
    e = cudaGraphInstantiate(&ce->graph[want_logits], g, 0);
    cudaGraphDestroy(g);
    CUDA_TRY(e);
    return 0;
}

extern "C" int cuda_engine_decode(cuda_engine *ce, int token, int pos, float *logits, int *next, char *err,
                                  size_t errlen)
{
    const model_config *c = &ce->w->cfg;
    kv_cache *kv = ce->kv;
    const int n_lh = kv->n_layers * kv->n_kv_heads, want = logits != NULL;
    const float scale = 1.0f / sqrtf((float)c->head_dim);
    /* the device writes and scores the token (DEVICE and ROUNDS, and HOST's device steps:
     * dp.dev_decode), or the host hooks do (HOST) */
    int host_step = ce->dp.mode == DEV_POLICY_HOST;
    if (host_step && (ce->dp.dev_decode == DEV_DECODE_ALWAYS ||
                      (ce->dp.dev_decode == DEV_DECODE_QUIET && kv_decode_quiet(kv) == 1)))
        host_step = 0;
    /* a host step after device steps: the mirror's positions, rows, ring first */
    if (host_step && (ce->mirror_stale || ce->rows_stale) && ce_refresh_mirror(ce, err, errlen)) return -1;
    ce->host_step = host_step;
    const int device_policy = !host_step;
    if (device_policy && ce->sstate && ce->sstate_dirty) {
        /* scissorhands: the prompt tokens' first history entry, hashevict: the codes (and the
         * stashed --hash-accum mean sums and ages of the prompt), on the host; then every slot's
         * state to the device (once after each prefill) */
        kv_device_prepare_decode(kv);
        CUDA_TRY(cudaMemcpyAsync(ce->sstate, kv->state, kv->n_slots * ce->sstate_words * sizeof(unsigned long long),
                                 cudaMemcpyHostToDevice, ce->st));
        ce->sstate_dirty = 0;
    }
    if (host_step && ce->sstate) ce->sstate_dirty = 1; /* the hooks change the mirror's histories */
    if (device_policy && ce->ss_d.head && ce->ss_dirty) { /* subgen_stream: the host's sketch (once after each prefill) */
        if (ce_ss_copy(ce, 1, err, errlen)) return -1;
        ce->ss_dirty = 0;
    }
    if (host_step && ce->ss_d.head) ce->ss_dirty = 1; /* its hooks feed the mirror's sketch */
    if (device_policy && ce->ada && ce->ada_dirty) { /* ada_*: the targets of the last split */
        CUDA_TRY(cudaMemcpyAsync(ce->snap_target_d, ce->snap.target, (size_t)n_lh * sizeof(int),
                                 cudaMemcpyHostToDevice, ce->st));
        ce->ada_dirty = 0;
    }
    int round = 0;
    for (int i = 0; i < n_lh; i++) {
        if (device_policy && kv->len[i] + 1 > kv->cap[i] + 1) {
            snprintf(err, errlen, "KV cache region %d is over its capacity %d", i, kv->cap[i]);
            return -1;
        }
        round |= kv->len[i] + 1 > kv->cap[i]; /* BUZZ: a region over capacity after the append */
    }
    if (pos < 0 || pos >= ce->n_rope) {
        snprintf(err, errlen, "position %d beyond the run's %d (prompt + max new tokens)", pos, ce->n_rope - 1);
        return -1;
    }
    ce->h_step[0] = token;
    ce->h_step[1] = pos;
    if (ce->dp.logit_scale && device_policy) /* every layer's scales at len + 1 keys, before the step */
        for (int i = 0; i < n_lh; i++) ce->h_hscale[i] = scale * kv->ops->logit_scale(kv, kv->len[i] + 1);
    const int graph = ce->use_graphs && (!ce->dp.host_attend || !host_step) &&
                      (ce->dp.mode == DEV_POLICY_DEVICE || (ce->dp.mode == DEV_POLICY_ROUNDS && !round) ||
                       (ce->dp.mode == DEV_POLICY_HOST && !host_step));
    if (graph) {
        if (!ce->graph[want] && capture_step(ce, want, err, errlen)) return -1;
        CUDA_TRY(cudaGraphLaunch(ce->graph[want], ce->st));
    } else if (enqueue_step(ce, 1, want, err, errlen)) {
        return -1;
    }
    CUDA_TRY(cudaStreamSynchronize(ce->st)); /* the step's one wait: the next token (and logits) */
    *next = ce->h_next[0];
    if (logits) memcpy(logits, ce->h_logits, (size_t)c->vocab_size * sizeof(float));
    const int appends = ce_appends(ce);
    if (ce->dp.mode == DEV_POLICY_HOST && !host_step) {
        if (appends) {
            /* an append everywhere: the mirror appends too (positions, the policy's bookkeeping);
             * the new rows stay on the device until ce_refresh_mirror. EV_SNAP, EV_SUBGEN: a
             * region the append filled was re-compressed on the device (its rows moved): its
             * target length by rule */
            for (int i = 0; i < n_lh; i++)
                if (ce->kv_fresh[i] > kv->len[i]) ce->kv_fresh[i] = kv->len[i];
            for (int l = 0; l < kv->n_layers; l++) {
                const int i0 = kv_idx(kv, l, 0);
                kv_device_append(kv, l, pos);
                if (ce->dp.evict == EV_ADA) {
                    /* the re-split layers' lengths, capacities, targets came back with the token */
                    const int *r = ce->h_next + 1 + i0;
                    if (kv_device_ada_recompressed(kv, l, r, r + n_lh, r + 2 * n_lh, ce->kv_fresh + i0) != 0) {
                        snprintf(err, errlen,
                                 "layer %d: the re-split's capacities exceed the layer's arena (the budgets sum "
                                 "over H_kv * base: --ada-alloc reference rounding)", l);
                        return -1;
                    }
                } else if (ce->dp.evict != EV_NONE) {
                    kv_device_recompressed(kv, l, ce->kv_fresh + i0);
                }
            }
        } else {
            for (int i = 0; i < n_lh; i++) ce->kv_fresh[i] = 0; /* slots moved on the device */
        }
        ce->rows_stale = 1;
    }
    if (ce->dp.mode == DEV_POLICY_DEVICE || (ce->dp.mode == DEV_POLICY_HOST && !host_step && !appends))
        for (int i = 0; i < n_lh; i++) { /* every region grew by one and was evicted back to capacity */
            kv->len[i]++;
            if (kv->len[i] > kv->cap[i] && ce->dp.evict != EV_NONE) {
                kv->len[i] = kv->cap[i];
                kv->evictions++;
            }
        }
    if (ce->dp.mode == DEV_POLICY_ROUNDS && graph) /* a step without a round: the mirror appends */
        for (int l = 0; l < kv->n_layers; l++) ce_rounds_append(ce, l, pos);
    if (device_policy) ce->mirror_stale = 1;
    kv_sample_stats(kv);
    return 0;
}
