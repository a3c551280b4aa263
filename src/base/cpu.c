/* cpuid-based feature detection; see cpu.h. */
#include "base/cpu.h"

#include <cpuid.h>
#include <stdlib.h>
#include <string.h>

static hr_cpu_features features;
static hr_cpu_level hw_level;
static int detected, amx_allowed;

/* CPUID leaf 7: EDX bit 22 AMX-BF16, bit 24 AMX-TILE (read directly: not every compiler's
 * __builtin_cpu_supports knows them). Whether the OS grants the tile state is asked when
 * AMX is first used (matmul_amx.c). */
static int has_amx_bf16(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (d >> 22 & 1) && (d >> 24 & 1);
}

/* The features that ride on the AVX-512 level. */
static void set_extras(void) {
    features.avx512bf16 = features.level == HR_CPU_AVX512 && __builtin_cpu_supports("avx512bf16");
    features.amx = features.avx512bf16 && amx_allowed && has_amx_bf16();
    features.avx512vnni = features.level == HR_CPU_AVX512 && __builtin_cpu_supports("avx512vnni");
}

static void detect(void) {
    if (detected) return;
    __builtin_cpu_init();
    hw_level = HR_CPU_GENERIC;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) hw_level = HR_CPU_AVX2;
    if (hw_level == HR_CPU_AVX2 && __builtin_cpu_supports("avx512f") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq"))
        hw_level = HR_CPU_AVX512;
    features.level = hw_level;
    const char *cap = getenv("HEARTH_CPU");
    if (cap && strcmp(cap, "generic") == 0)
        features.level = HR_CPU_GENERIC;
    else if (cap && strcmp(cap, "avx2") == 0 && hw_level >= HR_CPU_AVX2)
        features.level = HR_CPU_AVX2;
    amx_allowed = !cap || strcmp(cap, "avx512");
    set_extras();
    detected = 1;
}

const hr_cpu_features *hr_cpu(void) {
    detect();
    return &features;
}

void hr_cpu_set_level(hr_cpu_level level) {
    detect();
    features.level = level < hw_level ? level : hw_level;
    set_extras();
}

void hr_cpu_set_amx(int allow) {
    detect();
    amx_allowed = allow;
    set_extras();
}

const char *hr_cpu_level_name(hr_cpu_level level) {
    switch (level) {
    case HR_CPU_AVX512: return "avx512";
    case HR_CPU_AVX2: return "avx2";
    default: return "generic";
    }
}
