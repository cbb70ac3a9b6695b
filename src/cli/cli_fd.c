#include "cli/cli_fd.h"

#include <errno.h>
#include <unistd.h>

int cli_fd_write_all(int fd, const void *data, size_t len)
{
        const char *p = data;
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                p += n;
                len -= (size_t)n;
        }
        return 0;
}

ssize_t cli_fd_read(int fd, void *buf, size_t max)
{
        for (;;) {
                ssize_t n = read(fd, buf, max);
                if (n >= 0)
                        return n;
                if (errno != EINTR)
                        return -errno;
        }
}
