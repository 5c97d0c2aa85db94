/* The rounding of Ada-KV's per-head budgets (POLICIES.md §6.2) and the give-back of a reference
 * split's excess, shared by the host (eviction/snap_alloc.c: snap_ada_allocate, ada_plan) and the
 * device (kernels/cuda/ada_recompress.cu), so that both backends make the same split from the
 * same counts by construction. Plain C, also compiled as CUDA __host__ __device__ code. The
 * double products and sums are single IEEE roundings in both (__dmul_rn / __dadd_rn on the
 * device, where nvcc would otherwise fuse them into an FMA; the host builds are ISO C/C++,
 * which do not contract). */
#ifndef LLM_KERNELS_CUDA_ADA_SPLIT_H
#define LLM_KERNELS_CUDA_ADA_SPLIT_H

#include <math.h>

#ifdef __CUDACC__ /* (the emulator, tests/cuda_emu, compiles kernels as host C++: plain inline) */
#define ADA_HD __host__ __device__
#else
#define ADA_HD
#endif
#ifdef __CUDA_ARCH__
#define ADA_MUL(a, b) __dmul_rn((a), (b))
#define ADA_ADD(a, b) __dadd_rn((a), (b))
#else
#define ADA_MUL(a, b) ((a) * (b))
#define ADA_ADD(a, b) ((a) + (b))
#endif

/* budgets[g] of H heads from counts[g] (head g's entries in the layer's global top-`total`),
 * n[g] (head g's prefix length), oma = 1 − α:
 *  - reference (AdaKV's code): round half to even (rint) of c_g·oma + add, add = floor(α·base);
 *  - exact: b_g = oma·c_g + add, add = α·total/H; floors (+1e-9 against a b_g a rounding below
 *    an integer), then +1 for the `total − Σ` largest remainders (ties: the lower head; each head
 *    at most one), so Σ B_g = total;
 * then each clamped to [0, n[g]]. frac: scratch of H doubles (exact mode). */
static inline ADA_HD void ada_round_budgets(const int *counts, const int *n, int H, int total, double oma, double add,
                                            int reference, double *frac, int *budgets)
{
    if (reference) {
        for (int g = 0; g < H; g++) budgets[g] = (int)rint(ADA_ADD(ADA_MUL((double)counts[g], oma), add));
    } else {
        int sum = 0;
        for (int g = 0; g < H; g++) {
            const double b = ADA_ADD(ADA_MUL(oma, (double)counts[g]), add);
            budgets[g] = (int)floor(b + 1e-9);
            frac[g] = b - budgets[g];
            sum += budgets[g];
        }
        for (int rem = total - sum; rem > 0; rem--) {
            int best = -1;
            for (int g = 0; g < H; g++)
                if (frac[g] > -1.0 && (best < 0 || frac[g] > frac[best])) best = g;
            if (best < 0) break;
            budgets[best]++;
            frac[best] = -2.0; /* each head gets at most one */
        }
    }
    for (int g = 0; g < H; g++) {
        if (budgets[g] > n[g]) budgets[g] = n[g];
        if (budgets[g] < 0) budgets[g] = 0;
    }
}

/* Σ budgets above `total` (reference rounding can give three heads 10.7, 10.7, 8.6 → 31 > 30,
 * and the arena holds exactly the uniform split): the excess taken back one entry at a time from
 * the largest budget, ties to the higher head (head 0 gets leftovers first, so it gives last). */
static inline ADA_HD void ada_give_back_excess(int *budgets, int H, int total)
{
    int over = -total;
    for (int g = 0; g < H; g++) over += budgets[g];
    for (; over > 0; over--) {
        int big = 0;
        for (int g = 1; g < H; g++)
            if (budgets[g] >= budgets[big]) big = g;
        budgets[big]--;
    }
}

#endif
