/* Run-time choice of the SIMD kernel family (simd.h): the widest one the CPU supports, unless
 * LLM_SIMD=scalar|avx2|avx512 (environment, read on first use) or cpu_simd_use() says
 * otherwise. */
#include "kernels/cpu/simd.h"

#include "kernels/kernels.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic(const cpu_simd_ops *) g_active;

const cpu_simd_ops *cpu_simd_find(const char *name)
{
    if (!strcmp(name, "scalar")) return &cpu_simd_scalar;
#ifdef LLM_SIMD_X86
    __builtin_cpu_init();
    if (!strcmp(name, "avx2") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c"))
        return &cpu_simd_avx2;
    if (!strcmp(name, "avx512") && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
        return &cpu_simd_avx512;
#endif
    return NULL;
}

static const cpu_simd_ops *best(void)
{
    const char *env = getenv("LLM_SIMD");
    if (env && *env) {
        const cpu_simd_ops *s = cpu_simd_find(env);
        if (s) return s;
        fprintf(stderr, "llm-run: LLM_SIMD=%s: not supported on this CPU (scalar, avx2, avx512); using the best available\n", env);
    }
    static const char *const order[] = {"avx512", "avx2", "scalar"};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const cpu_simd_ops *s = cpu_simd_find(order[i]);
        if (s) return s;
    }
    return &cpu_simd_scalar;
}

const cpu_simd_ops *cpu_simd(void)
{
    const cpu_simd_ops *s = atomic_load_explicit(&g_active, memory_order_acquire);
    if (!s) {
        s = best();
        atomic_store_explicit(&g_active, s, memory_order_release);
    }
    return s;
}

const char *cpu_simd_name(void) { return cpu_simd()->name; }

int cpu_simd_use(const char *name, char *err, size_t errlen)
{
    const cpu_simd_ops *s = cpu_simd_find(name);
    if (!s) {
        snprintf(err, errlen, "SIMD family '%s': unknown or not supported by this CPU (scalar, avx2, avx512)", name);
        return -1;
    }
    atomic_store_explicit(&g_active, s, memory_order_release);
    return 0;
}
