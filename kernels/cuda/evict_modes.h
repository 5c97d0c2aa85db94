/* kernels/cuda/evict_modes.h — the eviction modes of the device KV-write kernel
 * (launch_evict in select.cu), plain C so the engine's C side (model/device.c) can name them. */
#ifndef LLM_KERNELS_CUDA_EVICT_MODES_H
#define LLM_KERNELS_CUDA_EVICT_MODES_H

/* EV_L2NORM, EV_RANDOM, EV_H2O_EF (h2o --h2o-order evict-first), EV_SH (scissorhands), EV_HASH
 * (hashevict, --hash-accum none and mean): the evict-then-attend modes, and EV_TOVA (layer-wise) only in the decode step's attention kernel
 * (attn_decode.cu), not in launch_evict. */
enum { EV_NONE = 0, EV_LOCAL = 1, EV_STREAMING = 2, EV_H2O = 3, EV_L2NORM = 4, EV_RANDOM = 5, EV_H2O_EF = 6,
       EV_SH = 7, EV_HASH = 8, EV_TOVA = 9, EV_SS = 10, EV_SNAP = 11, EV_SUBGEN = 12,
       EV_ADA = 13 };
/* EV_SS: subgen_stream's window and sketch (POLICIES.md §8.3), its own kernels in place of the
 * decode attention (ss_insert.cu, ss_attend.cu); EV_SNAP: capped snapkv / pyramidkv (§7.6), an
 * append, then a region that reached its capacity re-compressed after the attention
 * (snap_recompress.cu); EV_SUBGEN: capped subgen (§8.2), the same with its k-center
 * (subgen_recompress.cu); EV_ADA: capped ada_snapkv / ada_pyramidkv (§6.2, §7.6), the same with
 * the layer's budget re-split over its heads and its arena re-partitioned (ada_recompress.cu) */

/* the evict-then-attend modes (EV_L2NORM .. EV_HASH, contiguous: one unsigned compare, which
 * keeps attn_step_kernel free of register spills): the victim is chosen before the attention
 * and left out of it */
#define EV_IS_ETE(m) ((unsigned)((m) - EV_L2NORM) <= (unsigned)(EV_HASH - EV_L2NORM))

/* scissorhands' per-slot state on the device: eviction/policy_scissorhands.c sh_slot as bytes,
 * 8 64-bit words: the indicator ring (words 0..6, SH_MAX_HIST 448 bits), then n_push (low 32
 * bits of word 7) and ones (high 32 bits; little-endian, as the host struct) */
#define EV_SH_WORDS 8
#define EV_SH_MAX_HIST 448
/* hashevict's per-slot state: eviction/policy_hashevict.c he_slot, 3 words: the key's code, the
 * --hash-accum mean sum of distances (acc), age (low 32 bits) | valid (high; little-endian, as
 * the host struct); acc and age stay 0 with --hash-accum none */
#define EV_HASH_WORDS 3
#define EV_HASH_MAX_G 32

#endif
