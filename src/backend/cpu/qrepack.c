/* Repacking Q4_0 / Q5_0 / Q8_0 / Q4_K / Q5_K / Q6_K weights into tiles of HR_QROWS interleaved
 * rows, and reading one block of a repacked weight back in its GGUF form (layout: qrepack.h). */
#include "backend/cpu/qrepack.h"

#include <string.h>

#include "tensor/dtype.h"

int hr_qrepack_fits(hr_dtype t, int ndim, int64_t N) {
    return (t == HR_Q4_0 || t == HR_Q5_0 || t == HR_Q8_0 || t == HR_Q4_K || t == HR_Q5_K ||
            t == HR_Q6_K) &&
           ndim == 2 && N >= HR_QROWS;
}

/* The code bytes' XOR: Q8_0's signed codes are kept as unsigned ones. */
static uint8_t code_xor(hr_dtype t) { return t == HR_Q8_0 ? 0x80 : 0; }

/* Bytes of a block's head (its scales) per row; the codes follow the 8 rows' heads. */
static int head_bytes(hr_dtype t) {
    return t == HR_Q4_K || t == HR_Q5_K ? 16 : t == HR_Q6_K ? 18 : t == HR_Q5_0 ? 6 : 2;
}

/* Where a GGUF block's code bytes start: after its head, but Q6_K's head comes last. */
static int code_start(hr_dtype t) { return t == HR_Q6_K ? 0 : head_bytes(t); }

/* Offset within a repacked block of row r's code byte j (after the 8 rows' heads). */
static size_t code_at(hr_dtype t, int r, int j) {
    int c = t == HR_Q6_K ? hr_q6_k_chunk(j / 4) : j / 4;
    return (size_t)(head_bytes(t) * HR_QROWS) + 32 * (size_t)c + 4 * r + j % 4;
}

/* Q4_K's 6-bit scale and min of sub-block j from the 12 GGUF scale bytes s. */
static void q4_k_get(const uint8_t *s, int j, int *sc, int *m) {
    *sc = j < 4 ? s[j] & 63 : (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
    *m = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | (s[j] >> 6) << 4;
}

/* Row r's Q4_K head into a repacked block o: d at 2r, dmin at 16 + 2r, then per sub-block
 * j the scale with the min's low 2 bits on top at 32 + 8j + r, the min's high 4 bits in
 * nibble r / 4 of 96 + 4j + r % 4. */
static void q4_k_head_put(const uint8_t *s, uint8_t *o, int r) {
    memcpy(o + 2 * r, s, 2);
    memcpy(o + 16 + 2 * r, s + 2, 2);
    for (int j = 0; j < 8; j++) {
        int sc, m;
        q4_k_get(s + 4, j, &sc, &m);
        o[32 + 8 * j + r] = (uint8_t)(sc | (m & 3) << 6);
        uint8_t *hi = o + 96 + 4 * j + r % 4;
        *hi = (uint8_t)((*hi & (0xf0 >> 4 * (r / 4))) | (m >> 2) << 4 * (r / 4));
    }
}

/* The inverse: row r's GGUF head (d, dmin, 12 scale bytes) from a repacked block o. */
static void q4_k_head_get(const uint8_t *o, int r, uint8_t *s) {
    int sc[8], m[8];
    for (int j = 0; j < 8; j++) {
        sc[j] = o[32 + 8 * j + r] & 63;
        m[j] = o[32 + 8 * j + r] >> 6 | (o[96 + 4 * j + r % 4] >> 4 * (r / 4) & 15) << 2;
    }
    memcpy(s, o + 2 * r, 2);
    memcpy(s + 2, o + 16 + 2 * r, 2);
    for (int j = 0; j < 4; j++) {
        s[4 + j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        s[8 + j] = (uint8_t)(m[j] | (m[j + 4] >> 4) << 6);
        s[12 + j] = (uint8_t)((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
    }
}

/* Row r's Q6_K head (the 16 int8 scales at 192, d at 208 of GGUF block s) into a repacked
 * block o: d at 2r, scale k at 16 + 8k + r; and back. */
static void q6_k_head_put(const uint8_t *s, uint8_t *o, int r) {
    memcpy(o + 2 * r, s + 208, 2);
    for (int k = 0; k < 16; k++)
        o[16 + 8 * k + r] = s[192 + k];
}

static void q6_k_head_get(const uint8_t *o, int r, uint8_t *s) {
    memcpy(s + 208, o + 2 * r, 2);
    for (int k = 0; k < 16; k++)
        s[192 + k] = o[16 + 8 * k + r];
}

/* Q5_0's fifth bits: bit 4v + k of qh (element 4v + k) to bit 8k + v, so that byte k of
 * code vector v (elements 4v + k, qdot_rows_x86.h) finds its bit at v; and back. */
static uint32_t q5_0_qh_put(uint32_t h) {
    uint32_t o = 0;
    for (int v = 0; v < 8; v++)
        for (int k = 0; k < 4; k++)
            o |= (h >> (4 * v + k) & 1) << (8 * k + v);
    return o;
}

static uint32_t q5_0_qh_get(uint32_t o) {
    uint32_t h = 0;
    for (int v = 0; v < 8; v++)
        for (int k = 0; k < 4; k++)
            h |= (o >> (8 * k + v) & 1) << (4 * v + k);
    return h;
}

/* Row r's Q5_0 head (d, qh) into a repacked block o: d at 2r, qh's bits re-laid at 16 + 4r;
 * and back. */
static void q5_0_head_put(const uint8_t *s, uint8_t *o, int r) {
    uint32_t h;
    memcpy(o + 2 * r, s, 2);
    memcpy(&h, s + 2, 4);
    h = q5_0_qh_put(h);
    memcpy(o + 16 + 4 * r, &h, 4);
}

static void q5_0_head_get(const uint8_t *o, int r, uint8_t *s) {
    uint32_t h;
    memcpy(s, o + 2 * r, 2);
    memcpy(&h, o + 16 + 4 * r, 4);
    h = q5_0_qh_get(h);
    memcpy(s + 2, &h, 4);
}

/* Q4_0 / Q8_0: row r's f16 scale at 2r; and back. */
static void scale_put(const uint8_t *s, uint8_t *o, int r) { memcpy(o + 2 * r, s, 2); }
static void scale_get(const uint8_t *o, int r, uint8_t *s) { memcpy(s, o + 2 * r, 2); }

typedef struct {
    void (*put)(const uint8_t *s, uint8_t *o, int r); /* row r's GGUF head s into block o */
    void (*get)(const uint8_t *o, int r, uint8_t *s); /* and back */
} head_fns;

static head_fns heads(hr_dtype t) {
    if (t == HR_Q4_K || t == HR_Q5_K) return (head_fns){q4_k_head_put, q4_k_head_get};
    if (t == HR_Q6_K) return (head_fns){q6_k_head_put, q6_k_head_get};
    if (t == HR_Q5_0) return (head_fns){q5_0_head_put, q5_0_head_get};
    return (head_fns){scale_put, scale_get};
}

static void repack_tile(hr_dtype t, const uint8_t *src, uint8_t *dst, int64_t nb) {
    int bb = hr_dtype_get(t)->block_bytes, head = head_bytes(t), c0 = code_start(t);
    uint8_t x = code_xor(t);
    head_fns h = heads(t);
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *o = dst + b * HR_QROWS * bb;
        for (int r = 0; r < HR_QROWS; r++) {
            const uint8_t *s = src + (r * nb + b) * bb;
            h.put(s, o, r);
            for (int j = 0; j < bb - head; j++)
                o[code_at(t, r, j)] = s[c0 + j] ^ x;
        }
    }
}

typedef struct {
    hr_dtype t;
    const uint8_t *src;
    uint8_t *dst;
    int64_t N, K;
} repack_ctx;

static void repack_task(void *ctx, int th, int nth) {
    repack_ctx *c = ctx;
    int64_t tiles = c->N / HR_QROWS, nb = c->K / hr_dtype_get(c->t)->block;
    size_t tile_bytes = (size_t)hr_dtype_bytes(c->t, HR_QROWS * c->K);
    for (int64_t i = tiles * th / nth; i < tiles * (th + 1) / nth; i++)
        repack_tile(c->t, c->src + i * tile_bytes, c->dst + i * tile_bytes, nb);
}

void hr_qrepack(hr_pool *pool, hr_dtype t, const void *src, void *dst, int64_t N, int64_t K) {
    repack_ctx c = {t, src, dst, N, K};
    if (pool)
        hr_pool_run(pool, repack_task, &c);
    else
        repack_task(&c, 0, 1);
    size_t done = (size_t)hr_dtype_bytes(t, N / HR_QROWS * HR_QROWS * K);
    memcpy((uint8_t *)dst + done, (const uint8_t *)src + done, hr_dtype_bytes(t, N * K) - done);
}

void hr_qrepack_block(const hr_tensor *w, int64_t row, int64_t blk, uint8_t *out) {
    hr_dtype t = w->dtype;
    int bb = hr_dtype_get(t)->block_bytes, head = head_bytes(t), c0 = code_start(t);
    int64_t nb = w->shape[1] / hr_dtype_get(t)->block;
    const uint8_t *base = w->data;
    if (!w->row_tile || row >= w->shape[0] / HR_QROWS * HR_QROWS) {
        memcpy(out, base + (row * nb + blk) * bb, (size_t)bb);
        return;
    }
    int r = (int)(row % HR_QROWS);
    const uint8_t *o = base + ((row - r) * nb + blk * HR_QROWS) * bb;
    uint8_t x = code_xor(t);
    heads(t).get(o, r, out);
    for (int j = 0; j < bb - head; j++)
        out[c0 + j] = o[code_at(t, r, j)] ^ x;
}
