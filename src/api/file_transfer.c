/* Whole-file transfers, streamed and never buffered whole:
 * GET /v1/sandboxes/{id}/files?path= answers with the file's bytes as the agent sends them
 * (file_download); PUT writes the request body, as it arrives, into a file_upload (an
 * unnamed file the agent made in the target directory, linked into place at the end). A
 * dropped upload leaves nothing. */
#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_routes.h"
#include "api/file_download.h"
#include "api/file_request.h"
#include "api/file_upload.h"
#include "cleanup.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "service/policy_gate.h"

void route_file_download(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct agent_file_args a = { 0 };
        struct file_target t = { 0 };
        struct agent_file_reply reply = { 0 };
        struct agent_file_entry e;
        char msg[512] = "", mode[8];
        size_t cursor = 0;
        _cleanup_close_ int agent = -1; /* stays open: the file's bytes come on it (file_download) */
        if (file_query_path(req, "path", &a.path, &err) < 0 || file_query_user(req, &a.user, &err) < 0 ||
            file_target_load(req, &t, &err) < 0 || policy_gate_file_request(req->ctx, &t.sb, AGENT_MSG_FILE_READ, &a, &err) < 0 ||
            (agent = file_target_connect(&t, FILE_REQUEST_TIMEOUT_MS, &err)) < 0)
                goto fail;
        int r = agent_files_call(agent, AGENT_MSG_FILE_READ, &a, AGENT_MSG_FILE_ENTRY, &reply, msg, sizeof(msg));
        if (r < 0) {
                if (r == -EINVAL || r == -EISDIR)
                        snprintf(msg + strlen(msg), sizeof(msg) - strlen(msg), " (only regular files can be downloaded)");
                file_error_from_agent(&err, r, msg);
                goto fail;
        }
        if (agent_files_next_entry(&reply.frame, &cursor, &e) != 1 || e.type != AGENT_FILE_REGULAR) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "%s is not a regular file", a.path);
                goto fail;
        }
        snprintf(mode, sizeof(mode), "%04o", (unsigned)(e.mode & 07777));
        uint64_t size = e.size, offset = 0, len = size;
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
        r = file_download_respond(TAKE_FD(agent), offset, len, a.path, resp);
        if (r < 0) {
                snprintf(msg, sizeof(msg), "read %s: %s", a.path, strerror(-r));
                file_error_from_agent(&err, r, msg);
                goto fail;
        }
        resp->status = range ? 206 : 200;
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
        struct file_upload *u;
        if (upload_args(req, &a, err) < 0)
                return -1;
        if (file_target_load(req, &t, err) < 0) {
                file_target_release(&t);
                return -1;
        }
        const char *length = MHD_lookup_connection_value(req->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        int r = file_upload_begin(req->ctx, &t.sb, &a, length ? strtoull(length, NULL, 10) : UINT64_MAX, &u, err);
        file_target_release(&t);
        if (r < 0)
                return -1;
        *ret_state = u;
        return 0;
}

static int upload_write(void *state, const char *data, size_t len)
{
        return file_upload_write(state, data, len);
}

static void upload_finish(void *state, struct api_request *req, struct api_response *resp)
{
        struct file_upload *u = state;
        struct space_error err = { 0 };
        struct agent_file_reply reply = { 0 };
        struct agent_file_entry e;
        uint64_t written = file_upload_written(u);
        if (file_upload_commit(u, &reply, &e, &err) < 0)
                return api_response_error(resp, &err);
        log_info("file.upload", "sandbox=%s bytes=%llu", req->segments[2], (unsigned long long)written);
        api_response_json(resp, 201, file_render_entry(&e));
        agent_file_reply_release(&reply);
}

static void upload_abort(void *state)
{
        file_upload_free(state);
}

const struct api_upload_sink file_upload_sink = {
        .begin = upload_begin,
        .write = upload_write,
        .finish = upload_finish,
        .abort = upload_abort,
};
