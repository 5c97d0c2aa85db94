/* Run-time choice of the SIMD kernel family (simd.h): the widest one the CPU supports, unless
 * LLM_SIMD=scalar|avx2|avx512 (environment, read on first use) or cpu_simd_use() says
 * otherwise. */
#include "kernels/cpu/simd.h"

#include "kernels/cpu/prefetch.h"
#include "kernels/cpu/quant.h"
#include "kernels/kernels.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef LLM_SIMD_X86
#include <cpuid.h>
#endif

static _Atomic(const cpu_simd_ops *) g_active;

#ifdef LLM_SIMD_X86
/* F16C (CPUID.1:ECX bit 29): clang's __builtin_cpu_supports has no name for it. */
static int has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c >> 29 & 1);
}
#endif

const cpu_simd_ops *cpu_simd_find(const char *name)
{
    if (!strcmp(name, "scalar")) return &cpu_simd_scalar;
#ifdef LLM_SIMD_X86
    __builtin_cpu_init();
    if (!strcmp(name, "avx2") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        has_f16c())
        return &cpu_simd_avx2;
    if (!strcmp(name, "avx512") && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c())
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

/* ------------------------------------------------- quantized kernels (quant.h) */

static _Atomic(const cpu_quant_ops *) g_quant_pinned;
static atomic_int g_act_bits = 16;

int cpu_quant_act_bits(int bits)
{
    if (bits == 8 || bits == 16) atomic_store_explicit(&g_act_bits, bits, memory_order_release);
    else if (bits != 0) return -1;
    return atomic_load_explicit(&g_act_bits, memory_order_acquire);
}

#ifdef LLM_SIMD_X86
/* AVX-VNNI (CPUID.(EAX=7,ECX=1):EAX bit 4); __builtin_cpu_supports has no name for it in every
 * compiler. The YMM state is enabled by the OS when AVX2 is usable. */
static int has_avxvnni(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 1, &a, &b, &c, &d)) return 0;
    return (a >> 4) & 1;
}
#endif

const cpu_quant_ops *cpu_quant_find(const char *name)
{
    if (!strcmp(name, "scalar")) return &cpu_quant_scalar;
#ifdef LLM_SIMD_X86
    __builtin_cpu_init();
    int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    int avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    if (!strcmp(name, "avx2") && avx2) return &cpu_quant_avx2;
    if (!strcmp(name, "avxvnni") && avx2 && has_avxvnni()) return &cpu_quant_avxvnni;
    if (!strcmp(name, "avx512") && avx512) return &cpu_quant_avx512;
    if (!strcmp(name, "avx512vnni") && avx512 && __builtin_cpu_supports("avx512vnni"))
        return &cpu_quant_avx512vnni;
#endif
    return NULL;
}

const cpu_quant_ops *cpu_quant(void)
{
    static atomic_int env_read;
    if (!atomic_load_explicit(&env_read, memory_order_acquire)) {   /* LLM_QUANT_SIMD pins a table */
        const char *env = getenv("LLM_QUANT_SIMD");
        if (env && *env && cpu_quant_use(env) != 0)
            fprintf(stderr, "llm-run: LLM_QUANT_SIMD=%s: not supported on this CPU (scalar, avx2, avxvnni, avx512, avx512vnni); following the SIMD family\n", env);
        atomic_store_explicit(&env_read, 1, memory_order_release);
    }
    const int w16 = atomic_load_explicit(&g_act_bits, memory_order_acquire) == 16;
    const cpu_quant_ops *q = atomic_load_explicit(&g_quant_pinned, memory_order_acquire);
    if (q) return w16 ? q->w16 : q;
    /* follows the SIMD family (cheap: the lookups below run once per family change at most,
     * the result is cached per family) */
    static _Atomic(const cpu_quant_ops *) cache[3];
    const char *fam = cpu_simd()->name;
    int i = !strcmp(fam, "avx512") ? 2 : !strcmp(fam, "avx2") ? 1 : 0;
    q = atomic_load_explicit(&cache[i], memory_order_acquire);
    if (q) return w16 ? q->w16 : q;
    static const char *const order[3][5] = {
        {"scalar"}, {"avxvnni", "avx2", "scalar"}, {"avx512vnni", "avx512", "avxvnni", "avx2", "scalar"}};
    for (int k = 0; k < 5 && order[i][k] && !q; k++) q = cpu_quant_find(order[i][k]);
    atomic_store_explicit(&cache[i], q, memory_order_release);
    return w16 ? q->w16 : q;
}

int cpu_quant_use(const char *name)
{
    const cpu_quant_ops *q = NULL;
    if (name && !(q = cpu_quant_find(name))) return -1;
    atomic_store_explicit(&g_quant_pinned, q, memory_order_release);
    return 0;
}

/* ------------------------------------------------------------ prefetch distances (prefetch.h) */

/* intel: tuned on a Sapphire Rapids VM (the figures are in each kernel's file); amd: on a
 * Zen 4 VM (bench/cpu.md, session 13), fields left at the intel value where no other was
 * measurably better there. x16k (session 14) was tuned on Zen 4; on an Intel Xeon (Emerald
 * Rapids) VM 12288 is as good as any other distance tried (bench/cpu.md, session 15), so both
 * sets keep it. idle (session 30, a worker's read-ahead of the next decode product) was tried on
 * a Zen 3 VM only: 4-64 KiB all 1.3-2.9% faster two-thread SmolLM2 steps than none, 8-16 KiB
 * best; the intel set takes the same value. x16nta (session 30, the 256-bit x16 kernels'
 * prefetch hint) likewise: tried on Zen 3 only, so the intel set keeps prefetcht1. */
#define PF_INTEL {.x16 = 3072, .x16k = 12288, .q16 = 2048, .q16_l2 = 4096, .q16_256 = 1024, .q8 = 1024, .split = 1024, .split_l2 = 4096, .mv16 = 3072, .mv32 = 3072, .x16nta = 0, .idle = 16384}
static const cpu_prefetch pf_intel = PF_INTEL;
static const cpu_prefetch pf_amd = {.x16 = 1024, .x16k = 12288, .q16 = 2048, .q16_l2 = 4096, .q16_256 = 1024, .q8 = 1024,
                                    .split = 1024, .split_l2 = 4096, .mv16 = 1024, .mv32 = 0, .x16nta = 1,
                                    .idle = 16384};
cpu_prefetch cpu_pf = PF_INTEL;
static const char *pf_name = "intel";

const cpu_prefetch *cpu_prefetch_preset(const char *name)
{
    if (!strcmp(name, "intel")) return &pf_intel;
    if (!strcmp(name, "amd")) return &pf_amd;
    return NULL;
}

const char *cpu_prefetch_name(void) { return pf_name; }

static int *pf_field(cpu_prefetch *p, const char *name, size_t len)
{
    static const struct { const char *name; size_t off; } f[] = {
        {"x16", offsetof(cpu_prefetch, x16)},       {"x16k", offsetof(cpu_prefetch, x16k)},
        {"q16", offsetof(cpu_prefetch, q16)},
        {"q16_l2", offsetof(cpu_prefetch, q16_l2)}, {"q16_256", offsetof(cpu_prefetch, q16_256)},
        {"q8", offsetof(cpu_prefetch, q8)},         {"split", offsetof(cpu_prefetch, split)},
        {"split_l2", offsetof(cpu_prefetch, split_l2)}, {"mv16", offsetof(cpu_prefetch, mv16)},
        {"mv32", offsetof(cpu_prefetch, mv32)},     {"x16nta", offsetof(cpu_prefetch, x16nta)},
        {"idle", offsetof(cpu_prefetch, idle)}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (strlen(f[i].name) == len && !strncmp(f[i].name, name, len)) return (int *)((char *)p + f[i].off);
    return NULL;
}

int cpu_prefetch_set(const char *spec, char *err, size_t errlen)
{
    cpu_prefetch p = cpu_pf;
    const char *name = NULL;
    for (const char *s = spec; *s;) {
        size_t len = strcspn(s, ",");
        const char *eq = memchr(s, '=', len);
        if (!eq) {   /* a set's name */
            char buf[16];
            const cpu_prefetch *q = NULL;
            if (len < sizeof buf) {
                memcpy(buf, s, len);
                buf[len] = 0;
                q = cpu_prefetch_preset(buf);
            }
            if (!q) {
                snprintf(err, errlen, "prefetch: unknown set '%.*s' (intel, amd)", (int)len, s);
                return -1;
            }
            p = *q;
            name = q == &pf_intel ? "intel" : "amd";
        } else {
            int *f = pf_field(&p, s, (size_t)(eq - s));
            char *end;
            long v = strtol(eq + 1, &end, 10);
            if (!f || end != s + len || end == eq + 1 || v < 0 || v > 65536) {
                snprintf(err, errlen, "prefetch: bad '%.*s' (x16, x16k, q16, q16_l2, q16_256, q8, split, split_l2, mv16, mv32, x16nta, idle = 0..65536)",
                         (int)len, s);
                return -1;
            }
            *f = (int)v;
            name = "custom";
        }
        s += len;
        if (*s == ',') s++;
    }
    cpu_pf = p;
    if (name) pf_name = name;
    return 0;
}

void cpu_prefetch_describe(char *buf, size_t n)
{
    snprintf(buf, n, "%s: x16=%d x16k=%d q16=%d q16_l2=%d q16_256=%d q8=%d split=%d split_l2=%d mv16=%d mv32=%d x16nta=%d idle=%d", pf_name,
             cpu_pf.x16, cpu_pf.x16k, cpu_pf.q16, cpu_pf.q16_l2, cpu_pf.q16_256, cpu_pf.q8, cpu_pf.split, cpu_pf.split_l2, cpu_pf.mv16,
             cpu_pf.mv32, cpu_pf.x16nta, cpu_pf.idle);
}

/* Before main: the set for this CPU's vendor (cpuid leaf 0), or LLM_PREFETCH's. */
__attribute__((constructor)) static void prefetch_init(void)
{
#ifdef LLM_SIMD_X86
    unsigned a, b, c, d;
    if (__get_cpuid(0, &a, &b, &c, &d) && b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u) {   /* "AuthenticAMD" */
        cpu_pf = pf_amd;
        pf_name = "amd";
    }
#endif
    const char *env = getenv("LLM_PREFETCH");
    char err[160];
    if (env && *env && cpu_prefetch_set(env, err, sizeof err) != 0)
        fprintf(stderr, "llm-run: LLM_PREFETCH=%s: %s; using the %s set\n", env, err, pf_name);
}
