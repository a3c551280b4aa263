/* The backend factory: the one place a backend is chosen by device name ("cpu", "cuda",
 * "auto"). Verbs and the engine reach it through hr_model_open; docs/backend-v2.md. */
#include <string.h>

#include "backend/backend.h"

#ifndef HEARTH_NO_CUDA_REASON
#define HEARTH_NO_CUDA_REASON "nvcc not found at build time"
#endif

int hr_backend_cuda_built(void) {
#ifdef HEARTH_CUDA
    return 1;
#else
    return 0;
#endif
}

hr_err *hr_backend_device_check(const char *device) {
    if (!device || !strcmp(device, "auto") || !strcmp(device, "cpu") || !strcmp(device, "cuda"))
        return NULL;
    return hr_errf("unknown device \"%s\" (cpu, cuda or auto)", device);
}

/* auto: CUDA when this build has it and a GPU is present; the CPU otherwise. */
static const char *resolve(const char *device) {
    if (device && strcmp(device, "auto")) return device;
#ifdef HEARTH_CUDA
    if (hr_backend_cuda_devices() > 0) return "cuda";
#endif
    return "cpu";
}

/* The GGUF block formats the CUDA backend reads (its qmatmul.cu kernels). */
static int cuda_reads(hr_dtype t) {
    switch (t) {
    case HR_Q8_0:
    case HR_Q4_0:
    case HR_Q4_1:
    case HR_Q5_0:
    case HR_Q5_1:
    case HR_Q4_K:
    case HR_Q5_K:
    case HR_Q6_K: return 1;
    default: return 0;
    }
}

const char *hr_backend_device_for(const char *device, hr_dtype weights) {
    int quantized = (hr_dtype_get(weights)->quantized && !cuda_reads(weights)) || weights == HR_U32;
    return (!device || !strcmp(device, "auto")) && quantized ? "cpu" : device;
}

hr_err *hr_backend_caps_of(const char *device, hr_backend_caps *caps) {
    HR_TRY(hr_backend_device_check(device));
    const char *dev = resolve(device);
    if (!strcmp(dev, "cpu")) {
        *caps = (hr_backend_caps){(1u << HR_F32) | (1u << HR_BF16) | (1u << HR_F16) |
                                      (1u << HR_Q8_0) | (1u << HR_Q4_0),
                                  HR_F32, HR_BF16, 0};
        return NULL;
    }
#ifdef HEARTH_CUDA
    /* the CUDA backend stores bf16 KV (the fast default) or f32 (--exact) */
    *caps = (hr_backend_caps){(1u << HR_F32) | (1u << HR_BF16), HR_F32, HR_BF16, 1};
    return NULL;
#else
    return hr_errf("device cuda: this hearth was built without CUDA (" HEARTH_NO_CUDA_REASON ")");
#endif
}

hr_err *hr_backend_create(const hr_backend_options *o, hr_backend **out) {
    *out = NULL;
    static const hr_backend_options none = {0};
    if (!o) o = &none;
    HR_TRY(hr_backend_device_check(o->device));
    const char *dev = resolve(o->device);
    if (!strcmp(dev, "cpu")) return hr_backend_cpu_create(&o->cpu, out);
#ifdef HEARTH_CUDA
    return hr_backend_cuda_create(o, out);
#else
    return hr_errf("device cuda: this hearth was built without CUDA (" HEARTH_NO_CUDA_REASON ")");
#endif
}
