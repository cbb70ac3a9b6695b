/* output_encoding: command output bytes as JSON strings — lossy UTF-8 (invalid sequences
 * become U+FFFD) or base64. */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

json_t *output_encoding_utf8(const uint8_t *data, size_t len);
json_t *output_encoding_base64(const uint8_t *data, size_t len);
