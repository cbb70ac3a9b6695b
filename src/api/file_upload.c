/* file_upload: a file written into a running sandbox as it arrives (see file_upload.h). */
#include "api/file_upload.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent_protocol/agent_file_data.h"
#include "api/file_request.h"
#include "cleanup.h"
#include "runtime/runtime_registry.h"
#include "spaced/spaced_context.h"
#include "service/policy_gate.h"

struct file_upload {
        int agent; /* the connection the bytes go on; it holds the unnamed file until FILE_COMMIT */
        uint64_t written;
        int write_error;  /* -errno of the first failed write */
        uint8_t *pending; /* AGENT_FILE_CHUNK bytes: the body gathered into whole frames */
        size_t pending_len;
        bool memory;                           /* the target is in the sandbox's memory (tmpfs) */
        uint64_t memory_left;                  /* a memory-backed target: what the sandbox's memory limit leaves */
        const struct btrfs_pool *durable_pool; /* --durability power: synced before the answer */
        char path[PATH_MAX];
};

/* The agent connection's send buffer during an upload. */
#define UPLOAD_SOCKET_BUFFER (4 << 20)

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
        free(u->pending);
        if (u->agent >= 0)
                close(u->agent); /* before FILE_COMMIT: the agent drops the file */
        free(u);
}

int file_upload_begin(struct spaced_context *ctx, const struct sandbox *sb, const struct agent_file_args *a, uint64_t length,
                      struct file_upload **ret, struct space_error *err)
{
        struct agent_file_reply reply = { 0 };
        char msg[512] = "";
        if (policy_gate_file_request(ctx, sb, AGENT_MSG_FILE_CREATE, a, err) < 0)
                return -1;
        int fd = file_agent_connect(&ctx->runtimes, sb, FILE_REQUEST_TIMEOUT_MS, err);
        if (fd < 0)
                return -1;
        _cleanup_close_ int agent = fd;
        int r = agent_files_call(agent, AGENT_MSG_FILE_CREATE, a, AGENT_MSG_FILE_UPLOAD, &reply, msg, sizeof(msg));
        if (r < 0)
                return file_error_from_agent(err, r, msg);
        /* The agent writes the bytes itself, so a memory-backed target's pages count against
         * the sandbox's memory, not spaced's; spaced keeps the upload within what it leaves. */
        uint8_t memory = 0;
        (void)agent_frame_get_u8(&reply.frame, AGENT_F_FILE_MEMORY, &memory);
        agent_file_reply_release(&reply);
        uint64_t memory_left = memory ? memory_headroom(ctx, sb) : UINT64_MAX;
        if (length != UINT64_MAX && length > memory_left)
                return space_error_set(err, SPACE_E_PAYLOAD_TOO_LARGE,
                                       "%s is in the sandbox's memory (tmpfs): %llu bytes do not fit in what its memory limit "
                                       "leaves (%llu MiB)",
                                       a->path, (unsigned long long)length, (unsigned long long)(memory_left >> 20));
        struct file_upload *u = calloc(1, sizeof(*u));
        if (!u || !(u->pending = malloc(AGENT_FILE_CHUNK))) {
                free(u);
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        }
        /* Room for several frames in flight, so that spaced and the agent take turns less
         * often (an unprivileged agent cannot grow its own end; spaced may). Best effort. */
        int sndbuf = UPLOAD_SOCKET_BUFFER;
        (void)setsockopt(agent, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf));
        u->agent = TAKE_FD(agent);
        u->memory = memory != 0;
        u->memory_left = memory_left;
        u->durable_pool = ctx->cfg.durability_power ? &ctx->pool : NULL;
        snprintf(u->path, sizeof(u->path), "%s", a->path);
        *ret = u;
        return 0;
}

/* Sends what is gathered as one frame (the agent wakes once per chunk, not per piece the
 * client's body arrived in). Blocks while the agent's socket is full (it writes as fast as
 * the sandbox's disk takes it); an agent that stops reading ends the upload at the send
 * timeout. */
static int upload_flush(struct file_upload *u)
{
        if (u->write_error || u->pending_len == 0)
                return u->write_error;
        int r = agent_file_data_send(u->agent, u->written - u->pending_len, u->pending, u->pending_len);
        u->pending_len = 0;
        if (r < 0)
                u->write_error = r;
        return r;
}

int file_upload_write(struct file_upload *u, const void *data, size_t len)
{
        const uint8_t *p = data;
        if (u->write_error)
                return -1;
        if (u->written + len > u->memory_left) {
                u->write_error = -ENOMEM;
                return -1;
        }
        while (len > 0) {
                if (u->pending_len == 0 && len >= AGENT_FILE_CHUNK) {
                        size_t whole = len - len % AGENT_FILE_CHUNK;
                        int r = agent_file_data_send(u->agent, u->written, p, whole);
                        if (r < 0) {
                                u->write_error = r;
                                return -1;
                        }
                        u->written += whole;
                        p += whole;
                        len -= whole;
                        continue;
                }
                size_t n = AGENT_FILE_CHUNK - u->pending_len < len ? AGENT_FILE_CHUNK - u->pending_len : len;
                memcpy(u->pending + u->pending_len, p, n);
                u->pending_len += n;
                u->written += n;
                p += n;
                len -= n;
                if (u->pending_len == AGENT_FILE_CHUNK && upload_flush(u) < 0)
                        return -1;
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
        struct agent_file_reply reply = { 0 };
        struct agent_file_entry e;
        size_t cursor = 0;
        char msg[512] = "";
        int r = -1;
        (void)upload_flush(u);
        if (u->write_error == -ENOMEM) {
                space_error_set(err, SPACE_E_PAYLOAD_TOO_LARGE,
                                "%s is in the sandbox's memory (tmpfs): the upload outgrew what its memory limit leaves "
                                "(%llu MiB)",
                                u->path, (unsigned long long)(u->memory_left >> 20));
                goto out;
        }
        if (u->write_error) {
                snprintf(msg, sizeof(msg), "write %s: %s", u->path, strerror(-u->write_error));
                file_error_from_agent(err, u->write_error, msg);
                goto out;
        }
        /* --durability power: the agent syncs the data before it links the file (a tmpfs
         * target has nothing to sync). */
        struct agent_file_args commit = { .sync = u->durable_pool && !u->memory };
        r = agent_files_call(u->agent, AGENT_MSG_FILE_COMMIT, &commit, AGENT_MSG_FILE_ENTRY, &reply, msg, sizeof(msg));
        /* The file's new name, in the pool's next commit: made now. */
        if (r == 0 && commit.sync && (r = btrfs_pool_sync(u->durable_pool)) < 0) {
                agent_file_reply_release(&reply);
                r = space_error_errno(err, r, "%s was written but could not be made durable (sync the pool)", u->path);
                goto out;
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
