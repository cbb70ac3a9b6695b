/* e2b_envd_files: envd's filesystem.Filesystem service (Stat, ListDir, MakeDir, Move,
 * Remove) and its /files download (the upload is e2b_files_upload.c), on the agent's file operations (the same ones
 * space's files API uses, docs/api.md "Files"). Paths that are not absolute are taken
 * relative to the user's home, as envd does; operations run with that user's permissions. */
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_protocol/agent_files_client.h"
#include "api/api_render.h"
#include "api/file_download.h"
#include "api/file_request.h"
#include "api/output_encoding.h"
#include "cleanup.h"
#include "e2b/e2b_connect.h"
#include "e2b/e2b_file_meta.h"
#include "e2b/e2b_routes.h"
#include "runtime/runtime_registry.h"
#include "service/policy_gate.h"
#include "service/sandbox_service.h"
#include "spaced/spaced_context.h"

#define FILES_TIMEOUT_MS 30000
#define ENVD_DIR_BLOCK 4096u

/* A connection to the agent of the call's running sandbox, for the request (type, a) that
 * the sandbox's policies allow. */
static int agent_connect(struct e2b_call *call, enum agent_msg_type type, const struct agent_file_args *a,
                         struct space_error *err)
{
        struct sandbox sb;
        if (sandbox_service_get_running(call->req.ctx, &call->req.principal, call->sandbox_id, &sb, err) < 0)
                return -1;
        if (policy_gate_file_request(call->req.ctx, &sb, type, a, err) < 0) {
                sandbox_release(&sb);
                return -1;
        }
        int fd = file_agent_connect(&call->req.ctx->runtimes, &sb, FILES_TIMEOUT_MS, err);
        sandbox_release(&sb);
        return fd;
}

const char *e2b_files_agent_user(const char *user)
{
        return !user || !*user || strcmp(user, "root") == 0 ? NULL : user;
}

int e2b_files_resolve(const char *user, const char *path, char *buf, size_t size, struct space_error *err)
{
        if (!path || !*path)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "path is required");
        int n;
        if (path[0] == '/')
                n = snprintf(buf, size, "%s", path);
        else if (!e2b_files_agent_user(user))
                n = snprintf(buf, size, "/root/%s", path);
        else
                n = snprintf(buf, size, "/home/%s/%s", user, path);
        if (n < 0 || (size_t)n >= size)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "path is too long");
        return file_path_check("path", buf, strlen(buf), err);
}

static const char *type_name(uint8_t t)
{
        switch (t) {
        case AGENT_FILE_REGULAR:
                return "FILE_TYPE_FILE";
        case AGENT_FILE_DIRECTORY:
                return "FILE_TYPE_DIRECTORY";
        case AGENT_FILE_SYMLINK:
                return "FILE_TYPE_SYMLINK";
        default:
                return "FILE_TYPE_UNSPECIFIED";
        }
}

/* "-rw-r--r--", as Go's fs.FileMode prints it. */
static void permissions(const struct agent_file_entry *e, char buf[11])
{
        static const char rwx[] = "rwxrwxrwx";
        buf[0] = e->type == AGENT_FILE_DIRECTORY ? 'd' : e->type == AGENT_FILE_SYMLINK ? 'L' : '-';
        for (int i = 0; i < 9; i++)
                buf[1 + i] = e->mode & (1u << (8 - i)) ? rwx[i] : '-';
        buf[10] = '\0';
}

/* EntryInfo in protobuf JSON: int64 size as a string, the mode as a number. */
/* envd reports a link's target as an absolute path: a relative one is taken from the
 * link's directory, "." and ".." resolved lexically ("/.." stays "/"). */
static json_t *link_target(const struct agent_file_entry *e)
{
        char joined[2 * PATH_MAX + 2], out[PATH_MAX];
        if (e->link_len > 0 && e->link[0] == '/')
                return output_encoding_utf8((const uint8_t *)e->link, e->link_len);
        const char *slash = memrchr(e->path, '/', e->path_len);
        int dir_len = slash ? (int)(slash - e->path) : 0;
        snprintf(joined, sizeof(joined), "%.*s/%.*s", dir_len, e->path, (int)e->link_len, e->link);
        size_t n = 0;
        for (char *save = NULL, *part = strtok_r(joined, "/", &save); part; part = strtok_r(NULL, "/", &save)) {
                if (strcmp(part, ".") == 0)
                        continue;
                if (strcmp(part, "..") == 0) {
                        while (n > 0 && out[--n] != '/')
                                ;
                        continue;
                }
                size_t len = strlen(part);
                if (n + 1 + len >= sizeof(out)) /* longer than a path: as the link says */
                        return output_encoding_utf8((const uint8_t *)e->link, e->link_len);
                out[n++] = '/';
                memcpy(out + n, part, len);
                n += len;
        }
        if (n == 0)
                out[n++] = '/';
        return output_encoding_utf8((const uint8_t *)out, n);
}

json_t *e2b_files_render_entry(const struct agent_file_entry *e)
{
        char size[24], perms[11];
        /* envd's sandboxes are on ext4, where a directory's size is whole 4 KiB blocks (an
         * empty one 4096); btrfs says the length of its names (0 when empty). Code written
         * against E2B sees ext4's figure. */
        uint64_t bytes = e->size;
        if (e->type == AGENT_FILE_DIRECTORY)
                bytes = bytes <= ENVD_DIR_BLOCK ? ENVD_DIR_BLOCK : (bytes + ENVD_DIR_BLOCK - 1) / ENVD_DIR_BLOCK * ENVD_DIR_BLOCK;
        snprintf(size, sizeof(size), "%llu", (unsigned long long)bytes);
        permissions(e, perms);
        json_t *j = json_pack("{s:o, s:s, s:o, s:s, s:i, s:s, s:o, s:o, s:o}", "name",
                              output_encoding_utf8((const uint8_t *)e->name, e->name_len), "type", type_name(e->type), "path",
                              output_encoding_utf8((const uint8_t *)e->path, e->path_len), "size", size, "mode",
                              (int)(e->mode & 07777), "permissions", perms, "owner",
                              e->owner ? output_encoding_utf8((const uint8_t *)e->owner, e->owner_len) : json_string(""), "group",
                              e->group ? output_encoding_utf8((const uint8_t *)e->group, e->group_len) : json_string(""),
                              "modifiedTime", api_render_time((int64_t)e->mtime_ms));
        if (j && e->has_link)
                json_object_set_new(j, "symlinkTarget", link_target(e));
        json_t *meta = e2b_file_meta_render_new(e->meta, e->meta_len);
        if (j && meta)
                json_object_set_new(j, "metadata", meta);
        else
                json_decref(meta);
        return j;
}

/* One agent call for a unary method: reply in *ret (caller releases). */
static int agent_call(struct e2b_call *call, enum agent_msg_type type, const struct agent_file_args *a, enum agent_msg_type want,
                      struct agent_file_reply *ret, struct space_error *err)
{
        char msg[512] = "";
        int fd = agent_connect(call, type, a, err);
        if (fd < 0)
                return -1;
        int r = agent_files_call(fd, type, a, want, ret, msg, sizeof(msg));
        close(fd);
        return r < 0 ? file_error_from_agent(err, r, msg) : 0;
}

/* The request's "path" field (or another), resolved. */
static int message_path(struct e2b_call *call, const json_t *msg, const char *field, char *buf, size_t size,
                        struct space_error *err)
{
        return e2b_files_resolve(call->user, json_string_value(json_object_get(msg, field)), buf, size, err);
}

/* Calls type on the message's path and answers {"entry"} (or {} when want is FILE_DONE). */
static void entry_method(struct e2b_call *call, struct api_response *resp, enum agent_msg_type type, struct agent_file_args *a,
                         enum agent_msg_type want, json_t *msg)
{
        struct space_error err = { 0 };
        struct agent_file_reply reply = { 0 };
        struct agent_file_entry e;
        size_t cursor = 0;
        a->user = e2b_files_agent_user(call->user);
        if (agent_call(call, type, a, want, &reply, &err) < 0) {
                e2b_connect_reply_error(resp, &err);
        } else if (want == AGENT_MSG_FILE_DONE) {
                e2b_connect_reply(resp, json_object());
        } else if (agent_files_next_entry(&reply.frame, &cursor, &e) != 1) {
                space_error_set(&err, SPACE_E_INTERNAL, "the agent sent no entry");
                e2b_connect_reply_error(resp, &err);
        } else {
                e2b_connect_reply(resp, json_pack("{s:o}", "entry", e2b_files_render_entry(&e)));
        }
        agent_file_reply_release(&reply);
        json_decref(msg);
}

void e2b_fs_stat(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *msg = NULL;
        char path[PATH_MAX];
        struct agent_file_args a = { .path = path, .with_meta = true };
        if (e2b_connect_request(&call->req, &msg, &err) < 0 || message_path(call, msg, "path", path, sizeof(path), &err) < 0) {
                json_decref(msg);
                return e2b_connect_reply_error(resp, &err);
        }
        entry_method(call, resp, AGENT_MSG_FILE_STAT, &a, AGENT_MSG_FILE_ENTRY, msg);
}

void e2b_fs_list_dir(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *msg = NULL;
        char path[PATH_MAX];
        struct agent_file_args a = { .path = path, .depth = 1, .with_meta = true };
        struct agent_file_reply reply = { 0 };
        if (e2b_connect_request(&call->req, &msg, &err) < 0 || message_path(call, msg, "path", path, sizeof(path), &err) < 0)
                goto fail;
        json_int_t depth = json_integer_value(json_object_get(msg, "depth"));
        if (depth > 0)
                a.depth = depth > AGENT_FILE_DEPTH_MAX ? AGENT_FILE_DEPTH_MAX : (uint32_t)depth;
        a.user = e2b_files_agent_user(call->user);
        if (agent_call(call, AGENT_MSG_FILE_LIST, &a, AGENT_MSG_FILE_ENTRIES, &reply, &err) < 0)
                goto fail;
        json_t *entries = json_array();
        struct agent_file_entry e;
        size_t cursor = 0;
        while (agent_files_next_entry(&reply.frame, &cursor, &e) == 1)
                json_array_append_new(entries, e2b_files_render_entry(&e));
        e2b_connect_reply(resp, json_pack("{s:o}", "entries", entries));
        agent_file_reply_release(&reply);
        json_decref(msg);
        return;
fail:
        agent_file_reply_release(&reply);
        json_decref(msg);
        e2b_connect_reply_error(resp, &err);
}

/* envd makes missing parents and says already_exists when the directory is there. envd
 * runs as root and gives what it makes to the user, so the default user can make directories
 * where its own permissions would not let it (outside its home): made as root, owned by the
 * user. What is there already is only looked at. */
void e2b_fs_make_dir(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *msg = NULL;
        char path[PATH_MAX];
        const char *user = e2b_files_agent_user(call->user);
        struct agent_file_args a = { .path = path };
        struct agent_file_reply reply = { 0 };
        struct agent_file_entry e;
        size_t cursor = 0;
        int r = e2b_connect_request(&call->req, &msg, &err) < 0 ? -1 : message_path(call, msg, "path", path, sizeof(path), &err);
        json_decref(msg);
        if (r < 0)
                return e2b_connect_reply_error(resp, &err);
        if (agent_call(call, AGENT_MSG_FILE_STAT, &a, AGENT_MSG_FILE_ENTRY, &reply, &err) == 0) {
                agent_file_reply_release(&reply);
                space_error_set(&err, SPACE_E_ALREADY_EXISTS, "%s already exists", path);
                return e2b_connect_reply_error(resp, &err);
        }
        a = (struct agent_file_args){ .path = path, .user = user, .owner = user, .parents = true, .with_meta = true };
        r = agent_call(call, AGENT_MSG_FILE_MKDIR, &a, AGENT_MSG_FILE_ENTRY, &reply, &err);
        if (r < 0 && user && err.code == SPACE_E_PERMISSION_DENIED) {
                a.user = NULL;
                r = agent_call(call, AGENT_MSG_FILE_MKDIR, &a, AGENT_MSG_FILE_ENTRY, &reply, &err);
        }
        if (r == 0 && agent_files_next_entry(&reply.frame, &cursor, &e) == 1)
                e2b_connect_reply(resp, json_pack("{s:o}", "entry", e2b_files_render_entry(&e)));
        else if (r == 0)
                e2b_connect_reply_error(resp, (space_error_set(&err, SPACE_E_INTERNAL, "the agent sent no entry"), &err));
        else
                e2b_connect_reply_error(resp, &err);
        agent_file_reply_release(&reply);
}

void e2b_fs_move(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *msg = NULL;
        char src[PATH_MAX], dst[PATH_MAX];
        struct agent_file_args a = { .path = src, .dest = dst, .with_meta = true };
        if (e2b_connect_request(&call->req, &msg, &err) < 0 || message_path(call, msg, "source", src, sizeof(src), &err) < 0 ||
            message_path(call, msg, "destination", dst, sizeof(dst), &err) < 0) {
                json_decref(msg);
                return e2b_connect_reply_error(resp, &err);
        }
        entry_method(call, resp, AGENT_MSG_FILE_MOVE, &a, AGENT_MSG_FILE_ENTRY, msg);
}

/* envd removes like os.RemoveAll: directories with what is in them, and a path that is not
 * there (nor its parent) is no error. Only the agent's ENOENT counts as "not there": a
 * sandbox that is gone is still not_found. */
void e2b_fs_remove(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *msg = NULL;
        char path[PATH_MAX], why[512] = "";
        struct agent_file_args a = { .path = path, .recursive = true, .user = e2b_files_agent_user(call->user) };
        struct agent_file_reply reply = { 0 };
        int r = e2b_connect_request(&call->req, &msg, &err) < 0 ? -1 : message_path(call, msg, "path", path, sizeof(path), &err);
        json_decref(msg);
        if (r < 0)
                return e2b_connect_reply_error(resp, &err);
        int fd = agent_connect(call, AGENT_MSG_FILE_REMOVE, &a, &err);
        if (fd < 0)
                return e2b_connect_reply_error(resp, &err);
        r = agent_files_call(fd, AGENT_MSG_FILE_REMOVE, &a, AGENT_MSG_FILE_DONE, &reply, why, sizeof(why));
        close(fd);
        agent_file_reply_release(&reply);
        if (r < 0 && r != -ENOENT) {
                file_error_from_agent(&err, r, why);
                return e2b_connect_reply_error(resp, &err);
        }
        e2b_connect_reply(resp, json_object());
}

/* ---- /files ---- */

void e2b_files_reply_error(struct api_response *resp, const struct space_error *err)
{
        unsigned status = e2b_connect_http_status(err->code);
        if (err->code == SPACE_E_UNAVAILABLE)
                status = 502; /* what envd's proxy says for a sandbox that is not running */
        else if (err->code == SPACE_E_PAYLOAD_TOO_LARGE)
                status = 507; /* envd's "not enough space" */
        e2b_reply_error(resp, status, "%s", err->message);
}

/* ?path=&username= */
static int files_query(struct e2b_call *call, char *path, size_t size, const char **ret_user, struct space_error *err)
{
        const char *user = api_request_query(&call->req, "username");
        if (!user || !*user)
                user = call->user;
        if (!file_user_name_ok(user))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "username is not a user name");
        *ret_user = user;
        return e2b_files_resolve(user, api_request_query(&call->req, "path"), path, size, err);
}

void e2b_files_download(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        char path[PATH_MAX], msg[512] = "";
        const char *user = NULL;
        struct agent_file_reply reply = { 0 };
        struct agent_file_entry e;
        size_t cursor = 0;
        if (files_query(call, path, sizeof(path), &user, &err) < 0)
                return e2b_files_reply_error(resp, &err);
        struct agent_file_args a = { .path = path, .user = e2b_files_agent_user(user) };
        int fd = agent_connect(call, AGENT_MSG_FILE_READ, &a, &err);
        if (fd < 0)
                return e2b_files_reply_error(resp, &err);
        int r = agent_files_call(fd, AGENT_MSG_FILE_READ, &a, AGENT_MSG_FILE_ENTRY, &reply, msg, sizeof(msg));
        if (r < 0) {
                close(fd);
                file_error_from_agent(&err, r, msg);
                return e2b_files_reply_error(resp, &err);
        }
        if (agent_files_next_entry(&reply.frame, &cursor, &e) != 1 || e.type != AGENT_FILE_REGULAR) {
                close(fd);
                agent_file_reply_release(&reply);
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "%s is not a regular file", path);
                return e2b_files_reply_error(resp, &err);
        }
        /* The file's bytes come on the same connection (taken). */
        r = file_download_respond(fd, 0, e.size, path, resp);
        agent_file_reply_release(&reply);
        if (r < 0) {
                snprintf(msg, sizeof(msg), "read %s: %s", path, strerror(-r));
                file_error_from_agent(&err, r, msg);
                return e2b_files_reply_error(resp, &err);
        }
        resp->status = 200;
        resp->content_type = "application/octet-stream";
}
