/* The SSD tier's file format (docs/ssd-cache.md): one file per prefix-cache block, named by
 * the block's key. A header page (or more) carries the magic, format version, model
 * fingerprint, tokenizer hash, block size, the block's parent key and token ids, and one
 * (offset, bytes, checksum) entry per tensor (each KV layer's K and V of the block), and ends
 * with a checksum of itself (hybrid models: a block with a recurrent-state snapshot also has
 * each state layer's conv window and delta matrix); the tensors follow, each at a 4096-byte aligned
 * offset so a restore reads them straight into an aligned staging buffer (O_DIRECT-friendly). */
#ifndef HR_ENGINE_SSD_FILE_H
#define HR_ENGINE_SSD_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"
#include "model/config.h"

enum {
    HR_SSD_VERSION = 1,
    HR_SSD_ALIGN = 4096,
    HR_SSD_MAX_TENSORS =
        2 * HR_MAX_LAYERS,   /* K and V per KV layer, conv and delta per state layer */
    HR_SSD_MAX_BLOCK = 4096, /* largest block size a file may claim */
};

typedef struct {
    uint64_t fingerprint, tok_hash; /* model (weights, config, numerics, backend) and tokenizer */
    uint64_t key, parent;           /* the block's prefix-cache key and its parent's (0: first) */
    int block_size, n_tensors;
    const int32_t *tokens;               /* (block_size) the block's token ids */
    uint64_t offset[HR_SSD_MAX_TENSORS]; /* from the start of the file, HR_SSD_ALIGN-aligned */
    uint64_t bytes[HR_SSD_MAX_TENSORS];
    uint64_t checksum[HR_SSD_MAX_TENSORS]; /* hr_ssd_hash of each tensor's bytes */
} hr_ssd_header;

/* A 64-bit checksum of n bytes (word-at-a-time multiply-mix; not cryptographic). */
uint64_t hr_ssd_hash(const void *p, size_t n, uint64_t seed);
/* Bytes of the encoded header of a file with block_size tokens and n_tensors tensors, rounded
 * up to HR_SSD_ALIGN: where the first tensor starts. */
size_t hr_ssd_header_bytes(int block_size, int n_tensors);
/* Sets h's offsets from its bytes (tensors in order, each aligned) and returns the file size. */
size_t hr_ssd_layout(hr_ssd_header *h);
/* Writes h into buf (hr_ssd_header_bytes of it, zero padded), its checksum last. */
void hr_ssd_encode(const hr_ssd_header *h, uint8_t *buf);
/* Bytes the header starting with these first bytes (at least HR_SSD_ALIGN) says it spans, or
 * an error when they are not a hearth SSD-tier header of this version. */
hr_err *hr_ssd_header_span(const uint8_t *buf, size_t n, size_t *span);
/* Parses and checks a header of n bytes (its span): magic, version, sizes, offsets inside
 * file_bytes, and its checksum. h->tokens points into buf. */
hr_err *hr_ssd_decode(const uint8_t *buf, size_t n, uint64_t file_bytes, hr_ssd_header *h);

#endif
