#include "templates/build_log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <unistd.h>

int build_log_path(const char *state_dir, const char *op_id, char *buf, size_t size)
{
        return snprintf(buf, size, "%s/logs/build-%s.log", state_dir, op_id) >= (int)size ? -ENAMETOOLONG : 0;
}

int build_log_open(const char *state_dir, const char *op_id, struct build_log *ret)
{
        char path[4096];
        int r = build_log_path(state_dir, op_id, path, sizeof(path));
        if (r < 0)
                return r;
        int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        FILE *f = fdopen(fd, "a");
        if (!f) {
                r = -errno;
                close(fd);
                return r;
        }
        ret->f = f;
        return 0;
}

void build_log_printf(struct build_log *l, const char *fmt, ...)
{
        if (!l || !l->f)
                return;
        va_list ap;
        va_start(ap, fmt);
        vfprintf(l->f, fmt, ap);
        va_end(ap);
        fputc('\n', l->f);
        fflush(l->f);
}

void build_log_write(struct build_log *l, const void *data, size_t len)
{
        if (!l || !l->f || len == 0)
                return;
        fwrite(data, 1, len, l->f);
        if (((const char *)data)[len - 1] != '\n')
                fputc('\n', l->f);
        fflush(l->f);
}

void build_log_append(struct build_log *l, const void *data, size_t len)
{
        if (!l || !l->f || len == 0)
                return;
        fwrite(data, 1, len, l->f);
        fflush(l->f);
}

void build_log_close(struct build_log *l)
{
        if (l && l->f) {
                fclose(l->f);
                l->f = NULL;
        }
}
