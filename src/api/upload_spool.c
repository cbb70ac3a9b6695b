#include "api/upload_spool.h"

#include <errno.h>
#include <unistd.h>

int upload_spool_write(struct upload_spool *s, const char *data, size_t len)
{
        s->bytes += len;
        if (s->bytes > s->cap) {
                s->too_large = true;
                return -1;
        }
        while (len > 0) {
                ssize_t n = write(s->fd, data, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        s->write_failed = true;
                        return -1;
                }
                data += n;
                len -= (size_t)n;
        }
        return 0;
}
