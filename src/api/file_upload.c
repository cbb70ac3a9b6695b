/* file_upload: a file written into a running sandbox as it arrives (see file_upload.h). */
#include "api/file_upload.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/file_request.h"
#include "cleanup.h"
#include "runtime/runtime_registry.h"
#include "spaced/spaced_context.h"

struct file_upload {
        int agent; /* the connection that holds the unnamed file until FILE_COMMIT */
        int fd;    /* the unnamed file, or the agent's pipe into it */
        uint64_t written;
        int write_error;      /* -errno of the first failed write */
        uint64_t memory_left; /* a memory-backed target: what the sandbox's memory limit leaves */
        const struct btrfs_pool *durable_pool; /* --durability power: synced before the answer */
        mode_t fd_mode;
        char path[PATH_MAX];
};

/* Kept free for the sandbox's own processes when an upload goes to its memory. */
#define UPLOAD_MEMORY_RESERVE (16ull << 20)

/* What the sandbox's memory limit leaves for an upload to its tmpfs (whose pages count
 * against it): filling past the limit would wake the OOM killer inside the sandbox. */
static uint64_t memory_headroom(struct spaced_context *ctx, const struct sandbox *sb)
{
        struct runtime_stats ev;
        uint64_t limit = (uint64_t)sb->resources.memory_mb << 20;
        const struct runtime_driver *d = runtime_registry_find(&ctx->runtimes, sb->runtime);
        if (!limit || !d || d->ops->stats(d, sb, &ev) < 0)
                return UINT64_MAX;
        return ev.memory_bytes + UPLOAD_MEMORY_RESERVE >= limit ? 0 : limit - ev.memory_bytes - UPLOAD_MEMORY_RESERVE;
}

void file_upload_free(struct file_upload *u)
{
        if (!u)
                return;
        if (u->fd >= 0)
                close(u->fd);
        if (u->agent >= 0)
                close(u->agent); /* before FILE_COMMIT: the agent drops the file */
        free(u);
}

int file_upload_begin(struct spaced_context *ctx, const struct sandbox *sb, const struct agent_file_args *a, uint64_t length,
                      struct file_upload **ret, struct space_error *err)
{
        struct agent_file_reply reply = { .fd = -1 };
        char msg[512] = "";
        int fd = file_agent_connect(&ctx->runtimes, sb, FILE_REQUEST_TIMEOUT_MS, err);
        if (fd < 0)
                return -1;
        _cleanup_close_ int agent = fd;
        int r = agent_files_call(agent, AGENT_MSG_FILE_CREATE, a, AGENT_MSG_FILE_UPLOAD, &reply, msg, sizeof(msg));
        if (r < 0)
                return file_error_from_agent(err, r, msg);
        /* A regular file to write, or, for a memory-backed target, a pipe the agent empties
         * into it (so the pages count against the sandbox's memory, not spaced's). */
        struct stat st;
        if (reply.fd < 0 || fstat(reply.fd, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) {
                agent_file_reply_release(&reply);
                return space_error_set(err, SPACE_E_INTERNAL, "the agent gave no file to write");
        }
        uint64_t memory_left = S_ISFIFO(st.st_mode) ? memory_headroom(ctx, sb) : UINT64_MAX;
        if (length != UINT64_MAX && length > memory_left) {
                agent_file_reply_release(&reply);
                return space_error_set(err, SPACE_E_PAYLOAD_TOO_LARGE,
                                       "%s is in the sandbox's memory (tmpfs): %llu bytes do not fit in what its memory limit "
                                       "leaves (%llu MiB)",
                                       a->path, (unsigned long long)length, (unsigned long long)(memory_left >> 20));
        }
        struct file_upload *u = calloc(1, sizeof(*u));
        if (!u) {
                agent_file_reply_release(&reply);
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        }
        u->agent = TAKE_FD(agent);
        u->fd_mode = st.st_mode;
        u->fd = TAKE_FD(reply.fd);
        u->memory_left = memory_left;
        u->durable_pool = ctx->cfg.durability_power ? &ctx->pool : NULL;
        snprintf(u->path, sizeof(u->path), "%s", a->path);
        agent_file_reply_release(&reply);
        *ret = u;
        return 0;
}

int file_upload_write(struct file_upload *u, const void *data, size_t len)
{
        const char *p = data;
        if (u->write_error)
                return -1;
        if (u->written + len > u->memory_left) {
                u->write_error = -ENOMEM;
                return -1;
        }
        while (len > 0) {
                ssize_t n = write(u->fd, p, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        u->write_error = n < 0 ? -errno : -EIO;
                        return -1;
                }
                p += n;
                len -= (size_t)n;
                u->written += (uint64_t)n;
        }
        return 0;
}

uint64_t file_upload_written(const struct file_upload *u)
{
        return u->written;
}

int file_upload_commit(struct file_upload *u, struct agent_file_reply *ret_reply, struct agent_file_entry *ret_entry,
                       struct space_error *err)
{
        struct agent_file_reply reply = { .fd = -1 };
        struct agent_file_entry e;
        size_t cursor = 0;
        char msg[512] = "";
        int r = -1;
        /* EPIPE: the agent stopped taking a pipe upload; its commit answer says why. */
        if (u->write_error == -ENOMEM) {
                space_error_set(err, SPACE_E_PAYLOAD_TOO_LARGE,
                                "%s is in the sandbox's memory (tmpfs): the upload outgrew what its memory limit leaves "
                                "(%llu MiB)",
                                u->path, (unsigned long long)(u->memory_left >> 20));
                goto out;
        }
        if (u->write_error && u->write_error != -EPIPE) {
                snprintf(msg, sizeof(msg), "write %s: %s", u->path, strerror(-u->write_error));
                file_error_from_agent(err, u->write_error, msg);
                goto out;
        }
        if (u->durable_pool && !S_ISFIFO(u->fd_mode) && fdatasync(u->fd) < 0) {
                snprintf(msg, sizeof(msg), "sync %s: %s", u->path, strerror(errno));
                r = file_error_from_agent(err, -errno, msg);
                goto out;
        }
        close(TAKE_FD(u->fd));
        r = agent_files_call(u->agent, AGENT_MSG_FILE_COMMIT, NULL, AGENT_MSG_FILE_ENTRY, &reply, msg, sizeof(msg));
        /* The file's new name, in the pool's next commit: made now (a tmpfs target has none to make). */
        if (r == 0 && u->durable_pool && !S_ISFIFO(u->fd_mode) && (r = btrfs_pool_sync(u->durable_pool)) < 0) {
                agent_file_reply_release(&reply);
                r = space_error_errno(err, r, "%s was written but could not be made durable (sync the pool)", u->path);
                goto out;
        }
        if (r == 0 && u->write_error) {
                agent_file_reply_release(&reply);
                r = u->write_error; /* cannot happen with a sane agent: it took less than was sent */
                snprintf(msg, sizeof(msg), "write %s: %s", u->path, strerror(-r));
        }
        if (r < 0) {
                file_error_from_agent(err, r, msg);
                goto out;
        }
        if (agent_files_next_entry(&reply.frame, &cursor, &e) != 1) {
                agent_file_reply_release(&reply);
                r = space_error_set(err, SPACE_E_INTERNAL, "the agent sent no entry");
                goto out;
        }
        *ret_reply = reply;
        *ret_entry = e;
        r = 0;
out:
        file_upload_free(u);
        return r < 0 ? -1 : 0;
}
