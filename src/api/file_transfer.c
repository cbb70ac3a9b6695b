/* Whole-file transfers, streamed and never buffered whole:
 * GET /v1/sandboxes/{id}/files?path= answers with the file the agent opened for us
 * (sent with sendfile by libmicrohttpd); PUT writes the request body, as it arrives, into
 * an unnamed file the agent made in the target directory, then asks the agent to link it
 * into place (atomically, with its mode and owner). A dropped upload leaves nothing. */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_routes.h"
#include "api/file_request.h"
#include "cleanup.h"
#include "runtime/cgroup/cgroup_manager.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"

void route_file_download(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct agent_file_args a = { 0 };
        struct file_target t = { 0 };
        struct agent_file_reply reply = { .fd = -1 };
        struct agent_file_entry e;
        struct stat st;
        char msg[512] = "", mode[8];
        size_t cursor = 0;
        int fd = -1;
        if (file_query_path(req, "path", &a.path, &err) < 0 || file_query_user(req, &a.user, &err) < 0 ||
            file_target_load(req, &t, &err) < 0 || (fd = file_target_connect(&t, FILE_REQUEST_TIMEOUT_MS, &err)) < 0)
                goto fail;
        int r = agent_files_call(fd, AGENT_MSG_FILE_READ, &a, AGENT_MSG_FILE_ENTRY, &reply, msg, sizeof(msg));
        close(fd);
        if (r < 0) {
                if (r == -EINVAL || r == -EISDIR)
                        snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), " (only regular files can be downloaded)");
                file_error_from_agent(&err, r, msg);
                goto fail;
        }
        /* Trust what the descriptor is, not what the agent says it is. */
        if (reply.fd < 0 || fstat(reply.fd, &st) < 0 || !S_ISREG(st.st_mode) ||
            agent_files_next_entry(&reply.frame, &cursor, &e) != 1) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "%s is not a regular file", a.path);
                goto fail;
        }
        snprintf(mode, sizeof(mode), "%04o", (unsigned)(st.st_mode & 07777));
        uint64_t size = (uint64_t)st.st_size, offset = 0, len = size;
        int range = file_range_parse(MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_RANGE), size,
                                     &offset, &len);
        if (range < 0) {
                space_error_set(&err, SPACE_E_RANGE_NOT_SATISFIABLE, "the range is beyond the end of %s (%llu bytes)", a.path,
                                (unsigned long long)size);
                agent_file_reply_release(&reply);
                file_target_release(&t);
                api_response_error(resp, &err);
                char total[48];
                snprintf(total, sizeof(total), "bytes */%llu", (unsigned long long)size);
                resp->headers = json_pack("{s:s}", "Content-Range", total);
                return;
        }
        resp->status = range ? 206 : 200;
        resp->file.fd = TAKE_FD(reply.fd);
        resp->file.offset = offset;
        resp->file.size = len;
        resp->file.set = true;
        resp->content_type = "application/octet-stream";
        resp->headers = json_pack("{s:s, s:I, s:I, s:s}", "X-Space-File-Mode", mode, "X-Space-File-Uid", (json_int_t)e.uid,
                                  "X-Space-File-Gid", (json_int_t)e.gid, "Accept-Ranges", "bytes");
        if (range) {
                char value[80];
                snprintf(value, sizeof(value), "bytes %llu-%llu/%llu", (unsigned long long)offset,
                         (unsigned long long)(offset + len - 1), (unsigned long long)size);
                json_object_set_new(resp->headers, "Content-Range", json_string(value));
        }
        agent_file_reply_release(&reply);
        file_target_release(&t);
        return;
fail:
        agent_file_reply_release(&reply);
        file_target_release(&t);
        api_response_error(resp, &err);
}

/* ---- upload ---- */

struct upload {
        int agent;  /* the connection that holds the unnamed file until FILE_COMMIT */
        int fd;     /* the unnamed file */
        uint64_t written;
        int write_error; /* -errno of the first failed write */
        uint64_t memory_left; /* a memory-backed target: what the sandbox's memory limit leaves */
        char path[PATH_MAX];
};

/* Kept free for the sandbox's own processes when an upload goes to its memory. */
#define UPLOAD_MEMORY_RESERVE (16ull << 20)

/* What the sandbox's memory limit leaves for an upload to its tmpfs (whose pages count
 * against it): filling past the limit would wake the OOM killer inside the sandbox. */
static uint64_t memory_headroom(struct api_request *req, const struct sandbox *sb)
{
        struct cgroup_events ev = { 0 };
        uint64_t limit = (uint64_t)sb->resources.memory_mb << 20;
        if (!limit || req->ctx->cgroups->read_events(sb->id, &ev) < 0)
                return UINT64_MAX;
        return ev.memory_bytes + UPLOAD_MEMORY_RESERVE >= limit ? 0 : limit - ev.memory_bytes - UPLOAD_MEMORY_RESERVE;
}

static void upload_free(struct upload *u)
{
        if (u->fd >= 0)
                close(u->fd);
        if (u->agent >= 0)
                close(u->agent); /* before FILE_COMMIT: the agent drops the file */
        free(u);
}

/* ?mode=0644&uid=&gid=&owner=&parents=&user= */
static int upload_args(struct api_request *req, struct agent_file_args *a, struct space_error *err)
{
        const char *mode = api_request_query(req, "mode"), *owner = api_request_query(req, "owner");
        long long uid = -1, gid = -1;
        if (file_query_path(req, "path", &a->path, err) < 0 || file_query_user(req, &a->user, err) < 0 ||
            api_request_query_bool(req, "parents", &a->parents, err) < 0 ||
            api_request_query_int(req, "uid", 0, 0xfffffffe, &uid, err) < 0 ||
            api_request_query_int(req, "gid", 0, 0xfffffffe, &gid, err) < 0)
                return -1;
        if (mode) {
                if (file_mode_parse(mode, &a->mode) < 0)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "mode must be octal, e.g. 0644");
                a->has_mode = true;
        }
        if (owner && !file_user_name_ok(owner))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "owner must be a user name or uid of the sandbox");
        file_owner_args(owner, uid, gid, a);
        return 0;
}

static int upload_begin(struct api_request *req, void **ret_state, struct space_error *err)
{
        struct agent_file_args a = { 0 };
        struct file_target t;
        struct agent_file_reply reply = { .fd = -1 };
        char msg[512] = "";
        if (upload_args(req, &a, err) < 0)
                return -1;
        if (file_target_load(req, &t, err) < 0) {
                file_target_release(&t);
                return -1;
        }
        _cleanup_close_ int agent = file_target_connect(&t, FILE_REQUEST_TIMEOUT_MS, err);
        if (agent < 0) {
                file_target_release(&t);
                return -1;
        }
        int r = agent_files_call(agent, AGENT_MSG_FILE_CREATE, &a, AGENT_MSG_FILE_UPLOAD, &reply, msg, sizeof(msg));
        if (r < 0) {
                file_target_release(&t);
                return file_error_from_agent(err, r, msg);
        }
        /* A regular file to write, or, for a memory-backed target, a pipe the agent empties
         * into it (so the pages count against the sandbox's memory, not spaced's). */
        struct stat st;
        if (reply.fd < 0 || fstat(reply.fd, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISFIFO(st.st_mode))) {
                agent_file_reply_release(&reply);
                file_target_release(&t);
                return space_error_set(err, SPACE_E_INTERNAL, "the agent gave no file to write");
        }
        uint64_t memory_left = S_ISFIFO(st.st_mode) ? memory_headroom(req, &t.sb) : UINT64_MAX;
        file_target_release(&t);
        const char *length = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (length && strtoull(length, NULL, 10) > memory_left) {
                agent_file_reply_release(&reply);
                return space_error_set(err, SPACE_E_PAYLOAD_TOO_LARGE,
                                       "%s is in the sandbox's memory (tmpfs): %s bytes do not fit in what its memory limit leaves "
                                       "(%llu MiB)",
                                       a.path, length, (unsigned long long)(memory_left >> 20));
        }
        struct upload *u = calloc(1, sizeof(*u));
        if (!u) {
                agent_file_reply_release(&reply);
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        }
        u->agent = TAKE_FD(agent);
        u->fd = TAKE_FD(reply.fd);
        u->memory_left = memory_left;
        snprintf(u->path, sizeof(u->path), "%s", a.path);
        agent_file_reply_release(&reply);
        *ret_state = u;
        return 0;
}

static int upload_write(void *state, const char *data, size_t len)
{
        struct upload *u = state;
        if (u->written + len > u->memory_left) {
                u->write_error = -ENOMEM;
                return -1;
        }
        while (len > 0) {
                ssize_t n = write(u->fd, data, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        u->write_error = n < 0 ? -errno : -EIO;
                        return -1;
                }
                data += n;
                len -= (size_t)n;
                u->written += (uint64_t)n;
        }
        return 0;
}

static void upload_finish(void *state, struct api_request *req, struct api_response *resp)
{
        struct upload *u = state;
        struct space_error err = { 0 };
        struct agent_file_reply reply = { .fd = -1 };
        struct agent_file_entry e;
        size_t cursor = 0;
        char msg[512] = "";
        /* EPIPE: the agent stopped taking a pipe upload; its commit answer says why. */
        if (u->write_error == -ENOMEM) {
                space_error_set(&err, SPACE_E_PAYLOAD_TOO_LARGE,
                                "%s is in the sandbox's memory (tmpfs): the upload outgrew what its memory limit leaves "
                                "(%llu MiB)",
                                u->path, (unsigned long long)(u->memory_left >> 20));
                goto fail;
        }
        if (u->write_error && u->write_error != -EPIPE) {
                snprintf(msg, sizeof(msg), "write %s: %s", u->path, strerror(-u->write_error));
                file_error_from_agent(&err, u->write_error, msg);
                goto fail;
        }
        close(TAKE_FD(u->fd));
        int r = agent_files_call(u->agent, AGENT_MSG_FILE_COMMIT, NULL, AGENT_MSG_FILE_ENTRY, &reply, msg, sizeof(msg));
        if (r == 0 && u->write_error) {
                agent_file_reply_release(&reply);
                r = u->write_error; /* cannot happen with a sane agent: it took less than was sent */
                snprintf(msg, sizeof(msg), "write %s: %s", u->path, strerror(-r));
        }
        if (r < 0) {
                file_error_from_agent(&err, r, msg);
                goto fail;
        }
        if (agent_files_next_entry(&reply.frame, &cursor, &e) != 1) {
                space_error_set(&err, SPACE_E_INTERNAL, "the agent sent no entry");
                goto fail;
        }
        log_info("file.upload", "sandbox=%s bytes=%llu", req->segments[2], (unsigned long long)u->written);
        api_response_json(resp, 201, file_render_entry(&e));
        agent_file_reply_release(&reply);
        upload_free(u);
        return;
fail:
        agent_file_reply_release(&reply);
        upload_free(u);
        api_response_error(resp, &err);
}

static void upload_abort(void *state)
{
        upload_free(state);
}

const struct api_upload_sink file_upload_sink = {
        .begin = upload_begin,
        .write = upload_write,
        .finish = upload_finish,
        .abort = upload_abort,
};
