/* upload_spool: an upload's body written to a file as it arrives, up to a cap (build
 * contexts, image archives, memory images). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct upload_spool {
        int fd;
        uint64_t bytes, cap;
        bool too_large, write_failed;
};

/* An upload sink's write: 0, or -1 once over the cap (too_large) or when the file cannot
 * take it (write_failed). */
int upload_spool_write(struct upload_spool *s, const char *data, size_t len);
