/* Encoding and checking of the SSD tier's block files (ssd_file.h). Integers are stored
 * little-endian at fixed offsets: magic (8), version (4), header span (4), fingerprint,
 * tokenizer hash, key, parent (8 each), block size and tensor count (4 each), then per
 * tensor (offset, bytes, checksum) (8 each), the token ids (4 each) and the header's own
 * checksum (8) over everything before it. */
#include "engine/ssd_file.h"

#include <string.h>

static const char MAGIC[8] = {'H', 'R', 'S', 'S', 'D', 'K', 'V', '\n'};
enum { FIXED = 56, PER_TENSOR = 24 };

uint64_t hr_ssd_hash(const void *p, size_t n, uint64_t seed) {
    const uint8_t *b = p;
    uint64_t h = seed ^ (0x9e3779b97f4a7c15ull * (n + 1));
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ (w * 0xff51afd7ed558ccdull)) * 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 29;
    }
    uint64_t w = 0;
    for (size_t k = 0; i + k < n; k++)
        w |= (uint64_t)b[i + k] << (8 * k);
    h = (h ^ (w * 0xff51afd7ed558ccdull)) * 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 32);
}

static size_t align_up(size_t n) { return (n + HR_SSD_ALIGN - 1) / HR_SSD_ALIGN * HR_SSD_ALIGN; }

static size_t raw_bytes(int block_size, int n_tensors) {
    return FIXED + (size_t)n_tensors * PER_TENSOR + (size_t)block_size * 4 + 8;
}

size_t hr_ssd_header_bytes(int block_size, int n_tensors) {
    return align_up(raw_bytes(block_size, n_tensors));
}

size_t hr_ssd_layout(hr_ssd_header *h) {
    size_t at = hr_ssd_header_bytes(h->block_size, h->n_tensors);
    for (int i = 0; i < h->n_tensors; i++) {
        h->offset[i] = at;
        at = align_up(at + h->bytes[i]);
    }
    return at;
}

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void hr_ssd_encode(const hr_ssd_header *h, uint8_t *buf) {
    size_t span = hr_ssd_header_bytes(h->block_size, h->n_tensors);
    memset(buf, 0, span);
    memcpy(buf, MAGIC, 8);
    put32(buf + 8, HR_SSD_VERSION);
    put32(buf + 12, (uint32_t)span);
    put64(buf + 16, h->fingerprint);
    put64(buf + 24, h->tok_hash);
    put64(buf + 32, h->key);
    put64(buf + 40, h->parent);
    put32(buf + 48, (uint32_t)h->block_size);
    put32(buf + 52, (uint32_t)h->n_tensors);
    uint8_t *p = buf + FIXED;
    for (int i = 0; i < h->n_tensors; i++, p += PER_TENSOR) {
        put64(p, h->offset[i]);
        put64(p + 8, h->bytes[i]);
        put64(p + 16, h->checksum[i]);
    }
    for (int i = 0; i < h->block_size; i++, p += 4)
        put32(p, (uint32_t)h->tokens[i]);
    put64(p, hr_ssd_hash(buf, (size_t)(p - buf), 0));
}

hr_err *hr_ssd_header_span(const uint8_t *buf, size_t n, size_t *span) {
    if (n < HR_SSD_ALIGN) return hr_errf("shorter than one header page (%zu bytes)", n);
    if (memcmp(buf, MAGIC, 8)) return hr_errf("not a hearth SSD-cache block (bad magic)");
    if (get32(buf + 8) != HR_SSD_VERSION)
        return hr_errf("format version %u (this hearth reads %d)", get32(buf + 8), HR_SSD_VERSION);
    *span = get32(buf + 12);
    if (*span < HR_SSD_ALIGN || *span % HR_SSD_ALIGN ||
        *span > hr_ssd_header_bytes(HR_SSD_MAX_BLOCK, HR_SSD_MAX_TENSORS))
        return hr_errf("header span %zu is not a valid size", *span);
    return NULL;
}

hr_err *hr_ssd_decode(const uint8_t *buf, size_t n, uint64_t file_bytes, hr_ssd_header *h) {
    size_t span;
    HR_TRY(hr_ssd_header_span(buf, n, &span));
    memset(h, 0, sizeof *h);
    h->block_size = (int)get32(buf + 48);
    h->n_tensors = (int)get32(buf + 52);
    if (h->block_size <= 0 || h->block_size > HR_SSD_MAX_BLOCK || h->n_tensors <= 0 ||
        h->n_tensors > HR_SSD_MAX_TENSORS)
        return hr_errf("block size %d or tensor count %d out of range", h->block_size,
                       h->n_tensors);
    if (hr_ssd_header_bytes(h->block_size, h->n_tensors) != span || n < span)
        return hr_errf("header span %zu does not match its contents", span);
    size_t raw = raw_bytes(h->block_size, h->n_tensors);
    if (get64(buf + raw - 8) != hr_ssd_hash(buf, raw - 8, 0))
        return hr_errf("header checksum mismatch");
    h->fingerprint = get64(buf + 16);
    h->tok_hash = get64(buf + 24);
    h->key = get64(buf + 32);
    h->parent = get64(buf + 40);
    const uint8_t *p = buf + FIXED;
    for (int i = 0; i < h->n_tensors; i++, p += PER_TENSOR) {
        h->offset[i] = get64(p);
        h->bytes[i] = get64(p + 8);
        h->checksum[i] = get64(p + 16);
        if (h->offset[i] % HR_SSD_ALIGN || h->offset[i] < span || h->bytes[i] > file_bytes ||
            h->offset[i] > file_bytes - h->bytes[i])
            return hr_errf("tensor %d (%llu bytes at %llu) lies outside the file (%llu bytes): "
                           "truncated",
                           i, (unsigned long long)h->bytes[i], (unsigned long long)h->offset[i],
                           (unsigned long long)file_bytes);
    }
    h->tokens = (const int32_t *)p; /* 4-byte aligned: FIXED and PER_TENSOR are multiples of 4 */
    return NULL;
}
