/* kernels/cuda/evict_modes.h — the eviction modes of the device KV-write kernel
 * (launch_evict in select.cu), plain C so the engine's C side (model/device.c) can name them. */
#ifndef LLM_KERNELS_CUDA_EVICT_MODES_H
#define LLM_KERNELS_CUDA_EVICT_MODES_H

/* EV_L2NORM, EV_RANDOM, EV_H2O_EF (evict-then-attend: h2o --h2o-order evict-first) and EV_TOVA
 * (layer-wise) only in the decode step's attention kernel (attn_decode.cu), not in launch_evict. */
enum { EV_NONE = 0, EV_LOCAL = 1, EV_STREAMING = 2, EV_H2O = 3, EV_L2NORM = 4, EV_RANDOM = 5, EV_H2O_EF = 6,
       EV_TOVA = 7 };

/* the evict-then-attend modes (EV_L2NORM .. EV_H2O_EF, contiguous: one unsigned compare, which
 * keeps attn_step_kernel free of register spills): the victim is chosen before the attention
 * and left out of it */
#define EV_IS_ETE(m) ((unsigned)((m) - EV_L2NORM) <= (unsigned)(EV_H2O_EF - EV_L2NORM))

#endif
