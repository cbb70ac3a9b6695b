/* base64: decoding of the standard alphabet (RFC 4648 §4), as the API encodes exec output. */
#pragma once

#include <stddef.h>

/* Decodes len characters of in; padding is optional. Returns -EINVAL for characters outside
 * the alphabet or an impossible length. *ret_data is NUL-terminated for convenience. */
int base64_decode(const char *in, size_t len, unsigned char **ret_data, size_t *ret_len);
