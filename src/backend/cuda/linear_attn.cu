/* Gated DeltaNet kernels (qwen3_next / qwen3_5): the causal depthwise conv1d + silu over each
 * row's tokens, continuing from the row's conv state, and the gated delta rule in its
 * recurrent form for every row length (one block per (row, value head); thread j keeps
 * column j of the dk x dv state in registers). The CPU uses the chunked form for long rows:
 * the two agree to rounding (docs/hybrid.md). */
#include <math.h>

#include "backend/cuda/common.cuh"

enum { MAX_CONV = 16 };

static __global__ void conv_k(hr_cu_meta m, float *x, const void *w, int w_dtype, int channels,
                              int K, float *state, long slot_floats) {
    HR_PDL_ENTRY();
    int ch = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
    if (ch >= channels) return;
    int t0 = m.q_start[r], t1 = m.q_start[r + 1];
    if (t1 == t0) return;
    float *st = state + (long)m.state_slots[r] * slot_floats + (long)ch * (K - 1);
    int fresh = m.pos[t0] == 0;
    float wv[MAX_CONV], win[MAX_CONV];
    for (int j = 0; j < K; j++)
        wv[j] = hr_ld(w, w_dtype, (long)ch * K + j);
    for (int j = 0; j < K - 1; j++)
        win[j] = fresh ? 0.0f : st[j];
    for (int t = t0; t < t1; t++) {
        float *xt = x + (long)t * channels + ch;
        win[K - 1] = *xt;
        float acc = 0;
        for (int j = 0; j < K; j++)
            acc += wv[j] * win[j];
        *xt = acc / (1.0f + expf(-acc));
        for (int j = 0; j < K - 1; j++)
            win[j] = win[j + 1];
    }
    for (int j = 0; j < K - 1; j++)
        st[j] = win[j];
}

extern "C" void hr_cu_conv1d(cudaStream_t s, const hr_cu_meta *m, float *x, const void *w,
                             int w_dtype, int channels, int K, float *state, long slot_floats) {
    if (m->n_rows <= 0 || K > MAX_CONV) return;
    dim3 grid((unsigned)((channels + 127) / 128), (unsigned)m->n_rows);
    hr_launch(conv_k, grid, 128, 0, s, *m, x, w, w_dtype, channels, K, state, slot_floats);
}

static __device__ __forceinline__ float softplus(float x) {
    return x > 20.0f ? x : log1pf(expf(x));
}

template <int DK>
static __global__ void delta_k(hr_cu_meta m, hr_cu_delta p, float *out, float *state,
                               long slot_floats) {
    HR_PDL_ENTRY();
    __shared__ float sq[DK], sk[DK];
    int r = blockIdx.x / p.n_v_heads, h = blockIdx.x % p.n_v_heads;
    int t0 = m.q_start[r], t1 = m.q_start[r + 1];
    if (t1 == t0) return;
    int dk = p.k_dim, dv = p.v_dim, j = threadIdx.x;
    int kh = h / (p.n_v_heads / p.n_k_heads);
    float *S = state + (long)m.state_slots[r] * slot_floats + (long)h * dk * dv;
    int fresh = m.pos[t0] == 0;
    float col[DK];
#pragma unroll
    for (int i = 0; i < DK; i++)
        col[i] = i < dk && j < dv && !fresh ? S[(long)i * dv + j] : 0.0f;
    float A = -expf(hr_ld(p.a_log, p.a_log_dtype, h)), dtb = hr_ld(p.dt_bias, p.dt_bias_dtype, h);
    for (int t = t0; t < t1; t++) {
        long row = (long)t * p.ld + (long)kh * dk, ab = (long)t * p.n_v_heads + h;
        float qs = 0, ks = 0;
        for (int i = j; i < dk; i += blockDim.x) {
            float qv = p.q[row + i], kv = p.k[row + i];
            qs += qv * qv;
            ks += kv * kv;
        }
        qs = hr_block_sum(qs);
        ks = hr_block_sum(ks);
        float qi = 1.0f / sqrtf(qs + 1e-6f) / sqrtf((float)dk), ki = 1.0f / sqrtf(ks + 1e-6f);
        for (int i = j; i < dk; i += blockDim.x) {
            sq[i] = p.q[row + i] * qi;
            sk[i] = p.k[row + i] * ki;
        }
        __syncthreads();
        float decay = expf(A * softplus(p.a[ab] + dtb));
        float beta = 1.0f / (1.0f + expf(-p.b[ab]));
        if (j < dv) {
            float d = 0;
#pragma unroll
            for (int i = 0; i < DK; i++)
                if (i < dk) {
                    col[i] *= decay;
                    d += sk[i] * col[i];
                }
            d = (p.v[(long)t * p.ld + (long)h * dv + j] - d) * beta;
            float o = 0;
#pragma unroll
            for (int i = 0; i < DK; i++)
                if (i < dk) {
                    col[i] += sk[i] * d;
                    o += sq[i] * col[i];
                }
            out[((long)t * p.n_v_heads + h) * dv + j] = o;
        }
        __syncthreads();
    }
    if (j < dv)
#pragma unroll
        for (int i = 0; i < DK; i++)
            if (i < dk) S[(long)i * dv + j] = col[i];
}

extern "C" int hr_cu_gated_delta(cudaStream_t s, const hr_cu_meta *m, const hr_cu_delta *p,
                                 float *out, float *state, long slot_floats) {
    if (p->v_dim > 1024 || p->k_dim > 256) return 0;
    if (m->n_rows <= 0) return 1;
    unsigned blocks = (unsigned)(m->n_rows * p->n_v_heads);
    int threads = (p->v_dim + 31) / 32 * 32;
    if (p->k_dim <= 32)
        hr_launch(delta_k<32>, blocks, threads, 0, s, *m, *p, out, state, slot_floats);
    else if (p->k_dim <= 64)
        hr_launch(delta_k<64>, blocks, threads, 0, s, *m, *p, out, state, slot_floats);
    else if (p->k_dim <= 128)
        hr_launch(delta_k<128>, blocks, threads, 0, s, *m, *p, out, state, slot_floats);
    else
        hr_launch(delta_k<256>, blocks, threads, 0, s, *m, *p, out, state, slot_floats);
    return 1;
}
