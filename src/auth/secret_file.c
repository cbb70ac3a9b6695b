#include "auth/secret_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "spaced/log.h"

int secret_file_read(const char *path, const char *what, size_t min, unsigned char *buf, size_t size, size_t *ret_len,
                     char *reason, size_t reason_size)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) {
                int r = -errno;
                snprintf(reason, reason_size, "cannot read %s %s: %s", what, path, strerror(-r));
                return r;
        }
        if (st.st_mode & 077)
                log_warn("secret_file.mode", "path=%s mode=%04o note=\"others than its owner can read %s\"", path,
                         (unsigned)(st.st_mode & 07777), what);
        ssize_t n = read(fd, buf, size);
        unsigned char extra;
        if (n < 0 || ((size_t)n == size && read(fd, &extra, 1) > 0)) {
                snprintf(reason, reason_size, "%s %s is unreadable or longer than %zu bytes", what, path, size);
                return -EINVAL;
        }
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
                n--; /* a line ending is not part of the key */
        if ((size_t)n < min) {
                snprintf(reason, reason_size, "%s %s has %zd bytes: at least %zu are needed", what, path, n, min);
                return -EINVAL;
        }
        *ret_len = (size_t)n;
        return 0;
}
