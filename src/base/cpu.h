/* The CPU feature table, filled once from cpuid. HEARTH_CPU=generic|avx2|avx512 caps
 * what kernels may use (tests run every level on one machine; avx512 turns AMX off). */
#ifndef HR_BASE_CPU_H
#define HR_BASE_CPU_H

typedef enum { HR_CPU_GENERIC = 0, HR_CPU_AVX2 = 1, HR_CPU_AVX512 = 2 } hr_cpu_level;

typedef struct {
    hr_cpu_level level; /* best usable level after the HEARTH_CPU cap */
    int avx512bf16;     /* AVX512_BF16 available (and level == AVX512) */
    int amx;            /* AMX-BF16 tiles present (and avx512bf16, and not capped) */
    int avx512vnni;     /* AVX512_VNNI available (and level == AVX512) */
} hr_cpu_features;

const hr_cpu_features *hr_cpu(void);
const char *hr_cpu_level_name(hr_cpu_level level);
/* Overrides the level (clamped to what the CPU supports); for tests and benchmarks. */
void hr_cpu_set_level(hr_cpu_level level);
/* Allows or forbids AMX (still only where present); for tests and benchmarks. */
void hr_cpu_set_amx(int allow);

#endif
