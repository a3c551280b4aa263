/* Small-batch products of GGUF weights with 8-bit activations, the CPU's arithmetic
 * (backend/cpu/qdot.h, whose plain C dots are the reference): x is quantized once per product
 * group to int8 with an f32 scale per 32 elements (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1) or per 256
 * (Q4_K, Q5_K, Q6_K), with the sums of its codes per 16; each block's dot is a run of dp4a in
 * integers (a K-quant super-block's sub-blocks summed in integers across the 8 lanes that share
 * it), scaled into f32 like the CPU's (Q4_1 / Q5_1, which the CPU multiplies in f32, as
 * d * x_d * dot + m * x_d * sum(x's codes) per block), and blocks accumulate in f32 (in another
 * order than the CPU's: results agree to float rounding, not bit for bit).
 * A unit is 32 elements: a block of a 32-element format (its codes one or two 16-byte loads from
 * the planar rows of tensor/qplanes.h), or 16 code bytes of a K-quant super-block (8 units per
 * super-block: Q4_K and Q5_K in their file layout, whose rows are 16-byte aligned, Q6_K planar).
 * A launch takes up to
 * HR_CU_GEMV_FUSE matrices of one format sharing x (q, k, v; gate, up), their rows one after
 * the other; a block of MV_WARPS warps computes R of those rows for T <= HR_CU_MMVQ_MAX_T (8)
 * rows of x (larger batches decode the matrix to f16 for cuBLAS), lane l of warp w taking units
 * l + 32 w + 32 MV_WARPS k; each unit of x it loads serves the R rows. */
#include "backend/cuda/qfields.cuh"
#include "backend/cuda/xq.cuh"

enum { MV_WARPS = 4, MV_R = 4, MV_R_MIN_N = 4096 };

/* One thread per element, a block per 256 of a row (hr_xq_put). */
template <int PER> static __global__ void quantize_k(hr_xq_parts x, const float *xf, long K) {
    HR_PDL_ENTRY();
    __shared__ float wmax[32];
    long e = (long)blockIdx.x * 256 + threadIdx.x, t = blockIdx.y;
    bool in = e < K;
    hr_xq_put<PER>(x, t, K, e, in ? xf[t * K + e] : 0.0f, in, wmax);
}

/* Whether format Q has a block of 32 elements (x per 32), and whether its blocks carry a min
 * m (elements d * q + m: the product adds m * sum(x)). */
template <int Q> static __device__ __forceinline__ constexpr bool per32() {
    return Q != HR_CU_Q4_K && Q != HR_CU_Q5_K && Q != HR_CU_Q6_K;
}

template <int Q> static __device__ __forceinline__ constexpr bool has_m() {
    return Q == HR_CU_Q4_1 || Q == HR_CU_Q5_1;
}

/* A unit's weight bytes: codes (Q8_0: 32 bytes; else 16), and the scale fields. */
template <int Q> struct wunit {
    uint4 c, c2;   /* c2: Q8_0's second half; Q6_K's high bits; Q5_K's qh; Q5_0 / Q5_1: .x qh */
    float d, dmin; /* dmin: the K-quants' (subtracted), or Q4_1 / Q5_1's m (added) */
    int sc_lo, sc_hi, m_lo, m_hi; /* K-quants: the two sub-blocks' scales (and mins) */
};

/* Unit u's weight data from a row of nb units. The 32-element formats: planar (qplanes.h), the
 * codes at 16 u (Q8_0: 32 u), then the planes of qh and scales. Q4_K / Q5_K unit v = u % 8 of
 * its super-block: qs bytes 32 (v / 2) + 16 (v % 2) .. +15, the low nibbles sub-block v / 2 * 2,
 * the high ones the next (Q5_K: their fifth bits, bits v / 2 * 2 and the next of qh bytes
 * 16 (v % 2) .. +15). Q6_K unit v: h = v / 4, c = v / 2 % 2, l0 = 16 (v % 2): low-bit bytes
 * h*64 + c*32 + l0 (low nibbles sub-block 4h + c, high 4h + c + 2), high-bit bytes h*32 + l0. */
template <int Q>
static __device__ __forceinline__ wunit<Q> load_w(const uint8_t *row, long u, long nb) {
    wunit<Q> w;
    if (Q == HR_CU_Q8_0) {
        w.c = *(const uint4 *)(row + 32 * u);
        w.c2 = *(const uint4 *)(row + 32 * u + 16);
        w.d = hr_q_f16(row + 32 * nb + 2 * u);
    } else if (per32<Q>()) {
        bool q5 = Q == HR_CU_Q5_0 || Q == HR_CU_Q5_1;
        const uint8_t *sc = row + (q5 ? 20 : 16) * nb + (has_m<Q>() ? 4 : 2) * u;
        w.c = *(const uint4 *)(row + 16 * u);
        if (q5) w.c2.x = *(const uint32_t *)(row + 16 * nb + 4 * u);
        w.d = hr_q_f16(sc);
        if (has_m<Q>()) w.dmin = hr_q_f16(sc + 2);
    } else if (Q == HR_CU_Q4_K || Q == HR_CU_Q5_K) {
        const uint8_t *b = row + (u >> 3) * (Q == HR_CU_Q4_K ? 144 : 176);
        int v = (int)(u & 7), p = v >> 1;
        w.c = *(const uint4 *)(b + (Q == HR_CU_Q4_K ? 16 : 48) + 32 * p + 16 * (v & 1));
        if (Q == HR_CU_Q5_K) w.c2 = *(const uint4 *)(b + 16 + 16 * (v & 1));
        w.d = hr_q_f16(b);
        w.dmin = hr_q_f16(b + 2);
        hr_q_k4_scale_min(b + 4, 2 * p, &w.sc_lo, &w.m_lo);
        hr_q_k4_scale_min(b + 4, 2 * p + 1, &w.sc_hi, &w.m_hi);
    } else { /* Q6_K */
        long sb = u >> 3, ns = nb / 8;
        int v = (int)(u & 7), h = v >> 2, c = (v >> 1) & 1, hf = v & 1;
        w.c = *(const uint4 *)(row + 128 * sb + 64 * h + 32 * c + 16 * hf);
        w.c2 = *(const uint4 *)(row + 128 * ns + 64 * sb + 32 * h + 16 * hf);
        const int8_t *sc = (const int8_t *)(row + 192 * ns + 16 * sb);
        w.sc_lo = sc[2 * (4 * h + c) + hf];
        w.sc_hi = sc[2 * (4 * h + c + 2) + hf];
        w.d = hr_q_f16(row + 208 * ns + 2 * sb);
    }
    return w;
}

/* A unit's x for one row: the codes its low and high halves multiply (the 32-element formats:
 * elements 0..15 and 16..31 of the block), the scale and the code sums of the halves. */
typedef struct {
    int4 lo, hi;
    float d;
    int s_lo, s_hi;
} xunit;

template <int Q>
static __device__ __forceinline__ xunit load_x(const hr_xq_parts &x, int t, long K, long u) {
    long e_lo, e_hi, di;
    if (per32<Q>()) {
        e_lo = 32 * u, e_hi = e_lo + 16, di = u;
    } else {
        long sb = u >> 3;
        int v = (int)(u & 7);
        if (Q != HR_CU_Q6_K)
            e_lo = 256 * sb + 64 * (v >> 1) + 16 * (v & 1), e_hi = e_lo + 32;
        else
            e_lo = 256 * sb + 128 * (v >> 2) + 32 * ((v >> 1) & 1) + 16 * (v & 1), e_hi = e_lo + 64;
        di = sb;
    }
    const int8_t *q = x.q + (long)t * K;
    const int *s = x.s16 + (long)t * (K / 16);
    xunit r;
    r.lo = *(const int4 *)(q + e_lo);
    r.hi = *(const int4 *)(q + e_hi);
    r.d = x.d[(long)t * (K / 32) + di];
    r.s_lo = s[e_lo / 16];
    r.s_hi = s[e_hi / 16];
    return r;
}

static __device__ __forceinline__ int dot16(uint4 c, int4 x) {
    return __dp4a((int)c.w, x.w,
                  __dp4a((int)c.z, x.z, __dp4a((int)c.y, x.y, __dp4a((int)c.x, x.x, 0))));
}

static __device__ __forceinline__ uint4 nib(uint4 c, int sh) {
    return make_uint4(c.x >> sh & 0x0F0F0F0Fu, c.y >> sh & 0x0F0F0F0Fu, c.z >> sh & 0x0F0F0F0Fu,
                      c.w >> sh & 0x0F0F0F0Fu);
}

/* 5-bit codes: the nibbles n with bit sh of each byte of h (Q5_K's qh) as their fifth bit. */
static __device__ __forceinline__ uint4 five(uint4 n, uint4 h, int sh) {
    return make_uint4(n.x | (h.x >> sh & 0x01010101u) << 4, n.y | (h.y >> sh & 0x01010101u) << 4,
                      n.z | (h.z >> sh & 0x01010101u) << 4, n.w | (h.w >> sh & 0x01010101u) << 4);
}

/* The same with the fifth bits from the low 16 bits of q (Q5_0 / Q5_1's qh: bit i for byte i). */
static __device__ __forceinline__ uint4 five16(uint4 n, uint32_t q) {
    return make_uint4(n.x | hr_q_fifth_bits(q), n.y | hr_q_fifth_bits(q >> 4),
                      n.z | hr_q_fifth_bits(q >> 8), n.w | hr_q_fifth_bits(q >> 12));
}

/* Q6_K's 6-bit codes: 4 low bits (nibbles at sh) and 2 high bits (at hs) of each byte. */
static __device__ __forceinline__ uint4 six(uint4 lo, uint4 hi, int sh, int hs) {
    uint4 n = nib(lo, sh);
    return make_uint4(n.x | (hi.x >> hs & 0x03030303u) << 4, n.y | (hi.y >> hs & 0x03030303u) << 4,
                      n.z | (hi.z >> hs & 0x03030303u) << 4, n.w | (hi.w >> hs & 0x03030303u) << 4);
}

/* A 32-element block's f32 term, as the CPU's per-block f16(w) * d * s (Q4_1 / Q5_1: plus
 * f16(m) * d * sum(x's codes)); s counts Q4_0 / Q5_0's code offsets (8, 16) times x's sums. */
template <int Q>
static __device__ __forceinline__ float block_term(const wunit<Q> &w, const xunit &x, bool ok) {
    int s, xs = x.s_lo + x.s_hi;
    if (Q == HR_CU_Q8_0) {
        s = dot16(w.c, x.lo) + dot16(w.c2, x.hi);
    } else {
        uint4 lo = nib(w.c, 0), hi = nib(w.c, 4);
        if (Q == HR_CU_Q5_0 || Q == HR_CU_Q5_1)
            lo = five16(lo, w.c2.x), hi = five16(hi, w.c2.x >> 16);
        s = dot16(lo, x.lo) + dot16(hi, x.hi);
        if (Q == HR_CU_Q4_0 || Q == HR_CU_Q5_0) s -= (Q == HR_CU_Q4_0 ? 8 : 16) * xs;
    }
    if (!ok) return 0.0f;
    float r = w.d * x.d * (float)s;
    return has_m<Q>() ? r + w.dmin * x.d * (float)xs : r;
}

/* Unit (w, x)'s part of the output. The 32-element formats: block_term. K-quants: the integer
 * sums of the unit (isum, msum), added up over the 8 lanes of its super-block before lane
 * v = 0 adds x.d * (d * isum - dmin * msum); every lane of the warp takes part in those
 * shuffles (ok = 0: a lane past the row adds zeros). */
template <int Q>
static __device__ __forceinline__ float unit_term(const wunit<Q> &w, const xunit &x, bool ok,
                                                  int lane) {
    if (per32<Q>()) return block_term<Q>(w, x, ok);
    int isum, msum = 0;
    if (Q == HR_CU_Q4_K || Q == HR_CU_Q5_K) {
        uint4 lo = nib(w.c, 0), hi = nib(w.c, 4);
        if (Q == HR_CU_Q5_K) { /* the unit's p = v / 2: units follow lanes */
            int p = (lane >> 1) & 3;
            lo = five(lo, w.c2, 2 * p), hi = five(hi, w.c2, 2 * p + 1);
        }
        isum = w.sc_lo * dot16(lo, x.lo) + w.sc_hi * dot16(hi, x.hi);
        msum = w.m_lo * x.s_lo + w.m_hi * x.s_hi;
    } else {
        int c = (lane >> 1) & 1; /* the unit's c: units follow lanes */
        isum = w.sc_lo * (dot16(six(w.c, w.c2, 0, 2 * c), x.lo) - 32 * x.s_lo) +
               w.sc_hi * (dot16(six(w.c, w.c2, 4, 2 * c + 4), x.hi) - 32 * x.s_hi);
    }
    if (!ok) isum = 0, msum = 0;
    for (int o = 1; o < 8; o <<= 1) {
        isum += __shfl_xor_sync(0xffffffffu, isum, o);
        msum += __shfl_xor_sync(0xffffffffu, msum, o);
    }
    if ((lane & 7) || !ok) return 0.0f;
    return Q == HR_CU_Q6_K ? x.d * (w.d * (float)isum)
                           : x.d * (w.d * (float)isum - w.dmin * (float)msum);
}

template <int Q, int T, int R>
static __global__ void mmvq_k(hr_cu_gemv_set g, hr_xq_parts x, long K, long rb) {
    HR_PDL_ENTRY();
    /* units per batch of loads: those of U units are issued before their products */
    constexpr int U = T == 1 ? 2 : 1;
    __shared__ float part[MV_WARPS][R][T];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    long n0 = (long)blockIdx.x * R, N = g.start[g.n], nb = K / 32, stride = 32 * MV_WARPS;
    const uint8_t *rows[R];
#pragma unroll
    for (int r = 0; r < R; r++) { /* rows past N read the last one; their sums are dropped */
        long in;
        int m = hr_set_row(g, n0 + r < N ? n0 + r : N - 1, &in);
        rows[r] = (const uint8_t *)g.w[m] + in * rb;
    }
    float acc[R][T] = {};
    for (long base = 32 * warp; base < nb; base += stride * U) {
        wunit<Q> wu[U][R];
        bool ok[U];
        long uu[U];
#pragma unroll
        for (int k = 0; k < U; k++) {
            long u = base + stride * k + lane;
            ok[k] = u < nb;
            uu[k] = ok[k] ? u : base; /* a repeat of a valid unit, its terms dropped */
#pragma unroll
            for (int r = 0; r < R; r++)
                wu[k][r] = load_w<Q>(rows[r], uu[k], nb);
        }
#pragma unroll
        for (int k = 0; k < U; k++) {
            if (base + stride * k >= nb) break; /* the whole warp: the shuffles stay uniform */
#pragma unroll
            for (int t = 0; t < T; t++) {
                xunit xu = load_x<Q>(x, t, K, uu[k]);
#pragma unroll
                for (int r = 0; r < R; r++)
                    acc[r][t] += unit_term<Q>(wu[k][r], xu, ok[k], lane);
            }
        }
    }
    float s = hr_block_rows_sum<MV_WARPS, R, T>(acc, part);
    if (threadIdx.x < R * T) {
        int r = threadIdx.x / T, t = threadIdx.x % T;
        if (n0 + r < N) *hr_set_out(g, n0 + r, t) = s;
    }
}

template <int Q, int R>
static void mmvq_rows(cudaStream_t s, const hr_cu_gemv_set *g, hr_xq_parts x, int T, long K,
                      long rb) {
    long N = g->start[g->n];
    unsigned grid = (unsigned)((N + R - 1) / R), threads = 32 * MV_WARPS;
    switch (T) {
    case 1: hr_launch(mmvq_k<Q, 1, R>, grid, threads, 0, s, *g, x, K, rb); break;
    case 2: hr_launch(mmvq_k<Q, 2, R>, grid, threads, 0, s, *g, x, K, rb); break;
    case 3: hr_launch(mmvq_k<Q, 3, R>, grid, threads, 0, s, *g, x, K, rb); break;
    case 4: hr_launch(mmvq_k<Q, 4, R>, grid, threads, 0, s, *g, x, K, rb); break;
    case 5: hr_launch(mmvq_k<Q, 5, R>, grid, threads, 0, s, *g, x, K, rb); break;
    case 6: hr_launch(mmvq_k<Q, 6, R>, grid, threads, 0, s, *g, x, K, rb); break;
    case 7: hr_launch(mmvq_k<Q, 7, R>, grid, threads, 0, s, *g, x, K, rb); break;
    default: hr_launch(mmvq_k<Q, 8, R>, grid, threads, 0, s, *g, x, K, rb); break;
    }
}

/* 4 rows per block for launches of 4096+ rows (2 past 4 rows of x: the accumulators take the
 * registers), else 1. */
template <int Q>
static void mmvq_launch(cudaStream_t s, const hr_cu_gemv_set *g, hr_xq_parts x, int T, long K,
                        long rb) {
    if (g->start[g->n] < MV_R_MIN_N)
        mmvq_rows<Q, 1>(s, g, x, T, K, rb);
    else if (T > 4)
        mmvq_rows<Q, 2>(s, g, x, T, K, rb);
    else
        mmvq_rows<Q, MV_R>(s, g, x, T, K, rb);
}

extern "C" int hr_cu_mmvq_per(int q, int planar, long rb) {
    if (rb % 16) return 0;
    switch (q) {
    case HR_CU_Q8_0:
    case HR_CU_Q4_0:
    case HR_CU_Q4_1:
    case HR_CU_Q5_0:
    case HR_CU_Q5_1: return planar ? 32 : 0;
    case HR_CU_Q6_K: return planar ? 256 : 0;
    case HR_CU_Q4_K:
    case HR_CU_Q5_K: return 256;
    default: return 0;
    }
}

extern "C" size_t hr_cu_xq_bytes(int T, long K) { return hr_xq_size(T, K).total; }

extern "C" void hr_cu_quantize_x(cudaStream_t s, void *xq, const float *x, int T, long K, int per) {
    hr_xq_parts p = hr_xq_at(xq, T, K);
    dim3 grid((unsigned)((K + 255) / 256), (unsigned)T);
    if (per == 256)
        hr_launch(quantize_k<256>, grid, 256, 0, s, p, x, K);
    else
        hr_launch(quantize_k<32>, grid, 256, 0, s, p, x, K);
}

extern "C" void hr_cu_mmvq(cudaStream_t s, const hr_cu_gemv_set *g, const void *xq, int q, int T,
                           long K, long rb) {
    hr_xq_parts p = hr_xq_at((void *)xq, T, K);
    switch (q) {
    case HR_CU_Q8_0: mmvq_launch<HR_CU_Q8_0>(s, g, p, T, K, rb); break;
    case HR_CU_Q4_0: mmvq_launch<HR_CU_Q4_0>(s, g, p, T, K, rb); break;
    case HR_CU_Q4_1: mmvq_launch<HR_CU_Q4_1>(s, g, p, T, K, rb); break;
    case HR_CU_Q5_0: mmvq_launch<HR_CU_Q5_0>(s, g, p, T, K, rb); break;
    case HR_CU_Q5_1: mmvq_launch<HR_CU_Q5_1>(s, g, p, T, K, rb); break;
    case HR_CU_Q4_K: mmvq_launch<HR_CU_Q4_K>(s, g, p, T, K, rb); break;
    case HR_CU_Q5_K: mmvq_launch<HR_CU_Q5_K>(s, g, p, T, K, rb); break;
    default: mmvq_launch<HR_CU_Q6_K>(s, g, p, T, K, rb); break;
    }
}
