/* secret_file: a key kept in a file the operator made (the approval webhook's signing key,
 * the fleet's node secret): its bytes as they are, less a final line ending, bounded in
 * length, with a warning when others than its owner may read it. */
#pragma once

#include <stddef.h>

/* Reads path (what names it in messages: "the webhook secret") into buf (size bytes at
 * most). 0 with *ret_len, or -errno with reason: unreadable, longer than size, or shorter
 * than min bytes. */
int secret_file_read(const char *path, const char *what, size_t min, unsigned char *buf, size_t size, size_t *ret_len,
                     char *reason, size_t reason_size);
