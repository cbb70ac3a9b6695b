/* The QMP client of the microvm driver (mv_qmp.h). QEMU is the VMM of a hostile guest: a
 * line longer than the bound, a reply that is not one JSON object of the expected shape,
 * a flood of events or silence past the deadline ends the conversation with an error. */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "runtime/microvm/mv_qmp.h"
#include "spaced/wallclock.h"

#define MIGRATE_POLL_US 10000

static int remaining_ms(int64_t deadline_us)
{
        int64_t left = deadline_us - monotonic_now_us();
        return left <= 0 ? 0 : (int)((left + 999) / 1000);
}

/* The next line QEMU sends: *ret_len bytes at *ret_line (in q->buf) without its "\r\n";
 * *ret_used bytes to consume; what follows it stays buffered. */
static int read_line(struct mv_qmp *q, int64_t deadline_us, char **ret_line, size_t *ret_len, size_t *ret_used,
                     struct space_error *err)
{
        for (;;) {
                char *nl = memchr(q->buf, '\n', q->len);
                if (nl) {
                        size_t used = (size_t)(nl - q->buf) + 1, len = used - 1;
                        if (len && q->buf[len - 1] == '\r')
                                len--;
                        *ret_line = q->buf;
                        *ret_len = len;
                        *ret_used = used;
                        return 0;
                }
                if (q->len >= sizeof(q->buf) - 1)
                        return space_error_set(err, SPACE_E_INTERNAL, "QMP: a line longer than %d bytes", MV_QMP_LINE_MAX);
                struct pollfd p = { .fd = q->fd, .events = POLLIN };
                int ms = remaining_ms(deadline_us);
                int r = ms > 0 ? poll(&p, 1, ms) : 0;
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return space_error_errno(err, errno, "QMP: poll");
                if (r == 0)
                        return space_error_set(err, SPACE_E_TIMEOUT, "QMP: QEMU did not answer in time");
                ssize_t n = read(q->fd, q->buf + q->len, sizeof(q->buf) - 1 - q->len);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n < 0)
                        return space_error_errno(err, errno, "QMP: read");
                if (n == 0)
                        return space_error_set(err, SPACE_E_INTERNAL, "QMP: QEMU closed its monitor");
                q->len += (size_t)n;
        }
}

static void consume(struct mv_qmp *q, size_t used)
{
        memmove(q->buf, q->buf + used, q->len - used);
        q->len -= used;
}

/* One JSON object per line, nothing else. */
static json_t *read_message(struct mv_qmp *q, int64_t deadline_us, struct space_error *err)
{
        char *line = NULL;
        size_t len = 0, used = 0;
        if (read_line(q, deadline_us, &line, &len, &used, err) < 0)
                return NULL;
        json_error_t je;
        json_t *m = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je); /* a NUL in it is an error */
        consume(q, used);
        if (!m || !json_is_object(m)) {
                json_decref(m);
                space_error_set(err, SPACE_E_INTERNAL, "QMP: QEMU sent something that is not a JSON object");
                return NULL;
        }
        return m;
}

/* The reply to the command just sent: events before it are skipped (bounded). */
static int read_reply(struct mv_qmp *q, const char *command, int64_t deadline_us, json_t **ret, struct space_error *err)
{
        for (int events = 0; events <= MV_QMP_EVENTS_MAX; events++) {
                json_t *m = read_message(q, deadline_us, err);
                if (!m)
                        return -1;
                json_t *rv = json_object_get(m, "return"), *e = json_object_get(m, "error");
                if (json_is_string(json_object_get(m, "event")) && !rv && !e) {
                        json_decref(m);
                        continue;
                }
                if (rv && !e) {
                        if (ret)
                                *ret = json_incref(rv);
                        json_decref(m);
                        return 0;
                }
                const char *cls = json_string_value(json_object_get(e, "class"));
                const char *desc = json_string_value(json_object_get(e, "desc"));
                if (json_is_object(e) && !rv && cls && desc)
                        space_error_set(err, SPACE_E_INTERNAL, "QMP %s: %.64s: %.400s", command, cls, desc);
                else
                        space_error_set(err, SPACE_E_INTERNAL, "QMP %s: a reply that is neither return nor error", command);
                json_decref(m);
                return -1;
        }
        return space_error_set(err, SPACE_E_INTERNAL, "QMP %s: more than %d events and no reply", command, MV_QMP_EVENTS_MAX);
}

static int send_all(int fd, const char *data, size_t len, int send_fd, struct space_error *err)
{
        char control[CMSG_SPACE(sizeof(int))];
        size_t off = 0;
        while (off < len) {
                struct iovec iov = { .iov_base = (char *)data + off, .iov_len = len - off };
                struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
                if (send_fd >= 0 && off == 0) {
                        memset(control, 0, sizeof(control));
                        msg.msg_control = control;
                        msg.msg_controllen = sizeof(control);
                        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
                        c->cmsg_level = SOL_SOCKET;
                        c->cmsg_type = SCM_RIGHTS;
                        c->cmsg_len = CMSG_LEN(sizeof(int));
                        memcpy(CMSG_DATA(c), &send_fd, sizeof(int));
                }
                ssize_t n = sendmsg(fd, &msg, MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return space_error_errno(err, errno, "QMP: send");
                off += (size_t)n;
        }
        return 0;
}

int mv_qmp_execute(struct mv_qmp *q, const char *command, json_t *arguments, int send_fd, json_t **ret, int timeout_ms,
                   struct space_error *err)
{
        int64_t deadline_us = monotonic_now_us() + (int64_t)timeout_ms * 1000;
        json_t *m = json_pack("{s:s}", "execute", command);
        if (!m || (arguments && json_object_set(m, "arguments", arguments) < 0)) {
                json_decref(m);
                return space_error_errno(err, ENOMEM, "QMP %s", command);
        }
        char *text = json_dumps(m, JSON_COMPACT);
        json_decref(m);
        if (!text)
                return space_error_errno(err, ENOMEM, "QMP %s", command);
        size_t n = strlen(text);
        char line[1024];
        int r = n + 1 < sizeof(line) ? snprintf(line, sizeof(line), "%s\n", text) : -1;
        free(text);
        if (r < 0)
                return space_error_set(err, SPACE_E_INTERNAL, "QMP %s: command too long", command);
        if (send_all(q->fd, line, (size_t)r, send_fd, err) < 0)
                return -1;
        return read_reply(q, command, deadline_us, ret, err);
}

int mv_qmp_attach(struct mv_qmp *q, int fd, int timeout_ms, struct space_error *err)
{
        q->fd = fd;
        q->len = 0;
        int64_t deadline_us = monotonic_now_us() + (int64_t)timeout_ms * 1000;
        json_t *greeting = read_message(q, deadline_us, err);
        if (!greeting)
                return -1;
        bool ok = json_is_object(json_object_get(greeting, "QMP")) && json_object_size(greeting) == 1;
        json_decref(greeting);
        if (!ok)
                return space_error_set(err, SPACE_E_INTERNAL, "QMP: QEMU's greeting is not one");
        return mv_qmp_execute(q, "qmp_capabilities", NULL, -1, NULL, remaining_ms(deadline_us), err);
}

int mv_qmp_connect(struct mv_qmp *q, const char *path, int timeout_ms, struct space_error *err)
{
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        q->fd = -1;
        if (strlen(path) >= sizeof(a.sun_path))
                return space_error_set(err, SPACE_E_INTERNAL, "QMP socket path too long: %s", path);
        memcpy(a.sun_path, path, strlen(path) + 1);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return space_error_errno(err, errno, "QMP socket");
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
                space_error_errno(err, errno, "connect %s", path);
                close(fd);
                return -1;
        }
        if (mv_qmp_attach(q, fd, timeout_ms, err) < 0) {
                mv_qmp_close(q);
                return -1;
        }
        return 0;
}

void mv_qmp_close(struct mv_qmp *q)
{
        if (q->fd >= 0)
                close(q->fd);
        q->fd = -1;
        q->len = 0;
}

/* query-migrate until status says completed; failed, cancelled or anything unknown is an
 * error (with QEMU's error-desc when it gives one). */
static int wait_migration(struct mv_qmp *q, const char *what, int64_t deadline_us, struct space_error *err)
{
        static const char *const going[] = { "none", "setup", "active", "device", "pre-switchover", "wait-unplug", NULL };
        for (;;) {
                json_t *rv = NULL;
                if (mv_qmp_execute(q, "query-migrate", NULL, -1, &rv, remaining_ms(deadline_us), err) < 0)
                        return -1;
                const char *status = json_string_value(json_object_get(rv, "status"));
                const char *desc = json_string_value(json_object_get(rv, "error-desc"));
                bool known = false;
                for (size_t i = 0; status && going[i]; i++)
                        known |= strcmp(status, going[i]) == 0;
                if (status && strcmp(status, "completed") == 0) {
                        json_decref(rv);
                        return 0;
                }
                if (!json_is_object(rv) || !known) {
                        space_error_set(err, SPACE_E_INTERNAL, "QMP: %s %.32s%s%.400s", what,
                                        status ? status : "without a status", desc ? ": " : "", desc ? desc : "");
                        json_decref(rv);
                        return -1;
                }
                json_decref(rv);
                if (remaining_ms(deadline_us) == 0)
                        return space_error_set(err, SPACE_E_TIMEOUT, "QMP: %s did not complete in time", what);
                usleep(MIGRATE_POLL_US);
        }
}

static int migrate_fd(struct mv_qmp *q, const char *command, int fd, int timeout_ms, struct space_error *err)
{
        int64_t deadline_us = monotonic_now_us() + (int64_t)timeout_ms * 1000;
        json_t *a = json_pack("{s:s}", "fdname", "memory-image");
        int r = a ? mv_qmp_execute(q, "getfd", a, fd, NULL, timeout_ms, err) : space_error_errno(err, ENOMEM, "QMP getfd");
        json_decref(a);
        if (r < 0)
                return -1;
        a = json_pack("{s:s}", "uri", "fd:memory-image");
        r = a ? mv_qmp_execute(q, command, a, -1, NULL, remaining_ms(deadline_us), err) : space_error_errno(err, ENOMEM, "QMP");
        json_decref(a);
        if (r < 0)
                return -1;
        return wait_migration(q, strcmp(command, "migrate") == 0 ? "the memory save" : "the memory load", deadline_us, err);
}

int mv_qmp_save(struct mv_qmp *q, int fd, int timeout_ms, struct space_error *err)
{
        return migrate_fd(q, "migrate", fd, timeout_ms, err);
}

int mv_qmp_load(struct mv_qmp *q, int fd, int timeout_ms, struct space_error *err)
{
        return migrate_fd(q, "migrate-incoming", fd, timeout_ms, err);
}
