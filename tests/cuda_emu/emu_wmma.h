/* tests/cuda_emu/emu_wmma.h — nvcuda::wmma (the CUDA C++ warp matrix API, <mma.h>) for emu.h:
 * just the 16×16×16 shapes with __half / __nv_bfloat16 inputs and float accumulators that the
 * kernels use (kernels/cuda/attn_prefill.cu), with the documented semantics: load_matrix_sync,
 * mma_sync (d = a·b + c) and store_matrix_sync are called by every lane of a warp with the same
 * arguments, and which elements a lane holds is unspecified — so a kernel may not index a
 * fragment, and it must synchronise the warp (__syncwarp) before lanes read what other lanes'
 * store_matrix_sync wrote.
 *
 * How the emulator keeps those rules checkable: every lane's a / b fragment holds the whole tile
 * (read when that lane calls load_matrix_sync), but an accumulator lane computes, loads and
 * stores only the elements it owns (element e of the 256 by lane e mod 32; the rest are NaN).
 * A missing __syncwarp between a store and a load of another lane's elements then reads stale
 * or NaN data under some of the seeded thread orders (tests/test_cuda_emu.sh runs several).
 * Products of 16-bit inputs are exact in float; each output element sums its 16 products in k
 * order onto c in float (the hardware's order and rounding of that sum are unspecified: tests
 * compare with references within tolerances, never bit for bit). Not provided: other shapes,
 * tf32/int8/fp64 fragments, fragment element access (x[], num_elements). */
#ifndef LLM_CUDA_EMU_WMMA_H
#define LLM_CUDA_EMU_WMMA_H

#include <cmath>
#include <type_traits>

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

inline float emu_wmma_f(float x) { return x; }
inline float emu_wmma_f(__half x) { return __half2float(x); }
inline float emu_wmma_f(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename Use, int M, int N, int K, typename T, typename Layout = void> struct fragment {
    static_assert(M == 16 && N == 16 && K == 16, "emu_wmma: 16x16x16 only");
    static_assert(std::is_same_v<Use, accumulator> ? std::is_same_v<T, float>
                                                   : std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>,
                  "emu_wmma: __half / __nv_bfloat16 inputs, float accumulators");
    float v[256]; /* element (r, c) at v[16 r + c], widened exactly */
};

inline unsigned emu_wmma_lane() { return emu_t.tid.x & 31u; }

template <typename Use, typename T, typename L>
inline void fill_fragment(fragment<Use, 16, 16, 16, T, L> &f, float value)
{
    for (int e = 0; e < 256; e++) f.v[e] = value;
}

/* a: element (r, k) at p[r·ldm + k] (row_major) or p[r + k·ldm] (col_major); b: element (k, n)
 * at p[k·ldm + n] (row_major) or p[k + n·ldm] (col_major). ldm a multiple of 8, p 32-byte
 * aligned, as the hardware requires. */
template <typename Use, typename T, typename L>
inline void load_matrix_sync(fragment<Use, 16, 16, 16, T, L> &f, const T *p, unsigned ldm)
{
    static_assert(!std::is_same_v<Use, accumulator>, "accumulators load with a layout_t");
    if (ldm % 8 || (uintptr_t)p % 32) {
        fprintf(stderr, "emu: wmma::load_matrix_sync: ldm %u / pointer %p not aligned\n", ldm, (const void *)p);
        abort();
    }
    for (int r = 0; r < 16; r++)
        for (int c = 0; c < 16; c++)
            f.v[16 * r + c] = emu_wmma_f(std::is_same_v<L, row_major> ? p[(size_t)r * ldm + c] : p[r + (size_t)c * ldm]);
}

inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &f, const float *p, unsigned ldm, layout_t lay)
{
    if (ldm % 4 || (uintptr_t)p % 32) {
        fprintf(stderr, "emu: wmma::load_matrix_sync (accumulator): ldm %u / pointer %p not aligned\n", ldm, (const void *)p);
        abort();
    }
    const unsigned lane = emu_wmma_lane();
    for (int e = 0; e < 256; e++) {
        int r = e / 16, c = e % 16;
        f.v[e] = (unsigned)e % 32 != lane ? NAN : lay == mem_row_major ? p[(size_t)r * ldm + c] : p[r + (size_t)c * ldm];
    }
}

inline void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f, unsigned ldm, layout_t lay)
{
    if (ldm % 4 || (uintptr_t)p % 32) {
        fprintf(stderr, "emu: wmma::store_matrix_sync: ldm %u / pointer %p not aligned\n", ldm, (const void *)p);
        abort();
    }
    const unsigned lane = emu_wmma_lane();
    for (int e = (int)lane; e < 256; e += 32) {
        int r = e / 16, c = e % 16;
        (lay == mem_row_major ? p[(size_t)r * ldm + c] : p[r + (size_t)c * ldm]) = f.v[e];
    }
}

template <typename T, typename LA, typename LB>
inline void mma_sync(fragment<accumulator, 16, 16, 16, float> &d, const fragment<matrix_a, 16, 16, 16, T, LA> &a,
                     const fragment<matrix_b, 16, 16, 16, T, LB> &b, const fragment<accumulator, 16, 16, 16, float> &c)
{
    const unsigned lane = emu_wmma_lane();
    for (int e = 0; e < 256; e++) {
        if ((unsigned)e % 32 != lane) {
            d.v[e] = NAN;
            continue;
        }
        int r = e / 16, n = e % 16;
        float s = c.v[e];
        for (int k = 0; k < 16; k++) s += a.v[16 * r + k] * b.v[16 * k + n];
        d.v[e] = s;
    }
}
} // namespace wmma
} // namespace nvcuda

#endif
