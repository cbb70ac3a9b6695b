#include "spaced/instance_id.h"

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "spaced/wallclock.h"

static bool valid(const char *s)
{
        size_t n = strlen(s);
        if (n < 2 || n > 31 || s[0] != 'i')
                return false;
        for (size_t i = 1; i < n; i++)
                if (!isxdigit((unsigned char)s[i]))
                        return false;
        return true;
}

int instance_id_load(const char *state_dir, char *buf, size_t size)
{
        char path[PATH_MAX], tmp[PATH_MAX + 8], text[64];
        snprintf(path, sizeof(path), "%s/instance", state_dir);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
                ssize_t n = read(fd, text, sizeof(text) - 1);
                if (n < 0)
                        return -errno;
                text[n] = '\0';
                text[strcspn(text, "\n")] = '\0';
                if (!valid(text))
                        return -EBADMSG;
                snprintf(buf, size, "%s", text);
                return 0;
        }
        if (errno != ENOENT)
                return -errno;
        int r = random_id("i", 6, text, sizeof(text));
        if (r < 0)
                return r;
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        _cleanup_close_ int out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        size_t len = strlen(text);
        if (out < 0 || write(out, text, len) != (ssize_t)len || write(out, "\n", 1) != 1 || fsync(out) < 0 ||
            rename(tmp, path) < 0)
                return -errno;
        snprintf(buf, size, "%s", text);
        return 0;
}
