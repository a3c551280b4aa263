/* The backend layer's own surface: the factory (device names, CUDA absent from this build),
 * and the v2 vtable entries write, sync and mem_info on the CPU backend. */
#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "harness.h"

static void test_factory_devices(void) {
    const char *ok[] = {NULL, "auto", "cpu"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        hr_backend *be = NULL;
        hr_backend_options o = {.device = ok[i], .cpu = {.n_threads = 1}};
        HR_CHECK_OK(hr_backend_create(&o, &be));
        HR_CHECK(be && !strcmp(be->vt->name, "cpu"), "device %s: backend %s",
                 ok[i] ? ok[i] : "NULL", be ? be->vt->name : "none");
        hr_backend_destroy(be);
    }
    hr_backend *be = NULL;
    HR_CHECK_OK(hr_backend_create(NULL, &be)); /* NULL options: auto, defaults */
    HR_CHECK(be && !strcmp(be->vt->name, "cpu"), "NULL options");
    hr_backend_destroy(be);
    be = (hr_backend *)1;
    hr_err *err = hr_backend_create(&(hr_backend_options){.device = "npu"}, &be);
    HR_CHECK(err && strstr(hr_err_msg(err), "unknown device \"npu\""), "npu: %s",
             err ? hr_err_msg(err) : "accepted");
    HR_CHECK(be == NULL, "*out is NULL after an error");
    hr_err_free(err);
    HR_CHECK(hr_backend_device_check("cuda") == NULL, "cuda is a known name");
    err = hr_backend_create(&(hr_backend_options){.device = "cuda"}, &be);
    int gpus = 0;
#ifdef HEARTH_CUDA
    gpus = hr_backend_cuda_devices();
#endif
    if (!hr_backend_cuda_built())
        HR_CHECK(err && strstr(hr_err_msg(err), "built without CUDA"), "cuda: %s",
                 err ? hr_err_msg(err) : "accepted");
    else if (gpus == 0) /* built with CUDA, on a machine without a GPU */
        HR_CHECK(err && strstr(hr_err_msg(err), "no CUDA GPU"), "cuda: %s",
                 err ? hr_err_msg(err) : "accepted");
    else
        HR_CHECK(!err && !strcmp(be->vt->name, "cuda"), "cuda: %s",
                 err ? hr_err_msg(err) : be->vt->name);
    hr_err_free(err);
    hr_backend_destroy(err ? NULL : be);
}

static void test_write_sync_read(void) {
    hr_backend *be;
    HR_CHECK_OK(
        hr_backend_create(&(hr_backend_options){.device = "cpu", .cpu = {.n_threads = 1}}, &be));
    enum { N = 1000 };
    int32_t src[N], back[N];
    for (int i = 0; i < N; i++)
        src[i] = i * 7 - 3;
    void *dev = NULL;
    HR_CHECK_OK(be->vt->alloc(be, sizeof src, &dev));
    HR_CHECK_OK(be->vt->write(be, dev, src, sizeof src));
    src[0] = 12345; /* the host buffer is free once write returns */
    HR_CHECK_OK(be->vt->sync(be));
    HR_CHECK_OK(be->vt->read(be, dev, back, sizeof back));
    HR_CHECK(back[0] == -3 && back[N - 1] == (N - 1) * 7 - 3, "read back %d .. %d", back[0],
             back[N - 1]);
    HR_CHECK_OK(be->vt->write(be, (char *)dev + 4, src, 4)); /* partial, at an offset */
    HR_CHECK_OK(be->vt->read(be, dev, back, 8));
    HR_CHECK(back[0] == -3 && back[1] == 12345, "offset write: %d %d", back[0], back[1]);
    be->vt->free(be, dev);
    hr_backend_destroy(be);
}

static void test_mem_info(void) {
    size_t a = 0, t = 0;
    const char *text = "MemTotal:       24683652 kB\nMemFree:        21942036 kB\n"
                       "MemAvailable:   23712984 kB\nBuffers:          1000 kB\n";
    HR_CHECK(hr_cpu_meminfo_parse(text, &a, &t), "parse failed");
    HR_CHECK(t == 24683652ull * 1024 && a == 23712984ull * 1024, "parsed %zu / %zu", a, t);
    HR_CHECK(!hr_cpu_meminfo_parse("MemTotal: 10 kB\n", &a, &t), "MemAvailable missing must fail");
    HR_CHECK(!hr_cpu_meminfo_parse("", &a, &t), "empty text must fail");
    hr_backend *be;
    HR_CHECK_OK(
        hr_backend_create(&(hr_backend_options){.device = "cpu", .cpu = {.n_threads = 1}}, &be));
    a = t = 0;
    hr_err *err = be->vt->mem_info(be, &a, &t);
    hr_backend_destroy(be);
    HR_CHECK_OK(err);
    HR_CHECK(t >= ((size_t)64 << 20) && a > 0 && a <= t, "mem_info %zu free of %zu", a, t);
}

int main(void) {
    HR_RUN(test_factory_devices);
    HR_RUN(test_write_sync_read);
    HR_RUN(test_mem_info);
    return hr_test_summary();
}
