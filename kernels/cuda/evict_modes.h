/* kernels/cuda/evict_modes.h — the eviction modes of the device KV-write kernel
 * (launch_evict in select.cu), plain C so the engine's C side (model/device.c) can name them. */
#ifndef LLM_KERNELS_CUDA_EVICT_MODES_H
#define LLM_KERNELS_CUDA_EVICT_MODES_H

enum { EV_NONE = 0, EV_LOCAL = 1, EV_STREAMING = 2, EV_H2O = 3 };

#endif
