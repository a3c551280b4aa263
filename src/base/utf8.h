/* UTF-8 code points: decode one from valid UTF-8, encode one (1-4 bytes). */
#ifndef HR_BASE_UTF8_H
#define HR_BASE_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Decodes the code point starting at s (which must be valid UTF-8); returns its length. */
size_t hr_utf8_decode(const char *s, uint32_t *cp);
/* Writes cp as UTF-8 into out (room for 4 bytes); returns the bytes written. */
size_t hr_utf8_encode(uint32_t cp, char *out);

#endif
