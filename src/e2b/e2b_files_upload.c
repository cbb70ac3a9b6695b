/* e2b_files_upload: envd's /files upload as a stream (see e2b_files_upload.h). */
#include "e2b/e2b_files_upload.h"

#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "api/file_request.h"
#include "api/file_upload.h"
#include "api/output_encoding.h"
#include "e2b/e2b_file_meta.h"
#include "e2b/e2b_multipart.h"
#include "e2b/e2b_routes.h"
#include "runtime/runtime_registry.h"
#include "service/sandbox_service.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"

#define INFLATE_CHUNK (64u << 10)

struct e2b_upload {
        struct spaced_context *ctx;
        struct sandbox sb;
        bool loaded;
        char user[65];
        char query_path[PATH_MAX]; /* "" when not given */
        bool signed_url;           /* only query_path may be written, all or nothing */
        int parts;
        bool gzip, z_live, z_end;
        z_stream zs;
        unsigned char *zout;
        struct e2b_multipart *mp;
        struct file_upload *file;  /* the file being written */
        uint64_t bytes;            /* written into files, all parts */
        json_t *out;               /* [{"name", "type", "path", "metadata"?}] */
        struct e2b_file_meta meta; /* from X-Metadata- headers: every file gets it */
        bool made_as_root;         /* the file being written is new, made as root for the user */
        bool failed;
        struct space_error err;
};

static void upload_free(struct e2b_upload *u)
{
        file_upload_free(u->file);
        e2b_multipart_free(u->mp);
        if (u->z_live)
                inflateEnd(&u->zs);
        free(u->zout);
        json_decref(u->out);
        if (u->loaded)
                sandbox_release(&u->sb);
        free(u);
}

static int fail(struct e2b_upload *u, const struct space_error *err)
{
        if (!u->failed && err)
                u->err = *err;
        u->failed = true;
        file_upload_free(u->file);
        u->file = NULL;
        return -1;
}

static int fail_with(struct e2b_upload *u, enum space_error_code code, const char *msg)
{
        struct space_error err = { 0 };
        space_error_set(&err, code, "%s", msg);
        return fail(u, &err);
}

/* Starts the file at path (as given: absolute or relative to the user's home). */
static int file_open(struct e2b_upload *u, const char *given, uint64_t length)
{
        struct space_error err = { 0 };
        char path[PATH_MAX];
        if (e2b_files_resolve(u->user, given, path, sizeof(path), &err) < 0)
                return fail(u, &err);
        const char *agent_user = e2b_files_agent_user(u->user);
        struct agent_file_args a = { .path = path,
                                     .user = agent_user,
                                     .parents = true,
                                     .owner = agent_user,
                                     .meta = u->meta.pairs,
                                     .meta_len = u->meta.len,
                                     .with_meta = true };
        u->made_as_root = false;
        if (file_upload_begin(u->ctx, &u->sb, &a, length, &u->file, &err) == 0)
                return 0;
        /* envd runs as root and gives what it writes to the user: the default user can create
         * files where its own permissions would not let it (outside its home). A new file only:
         * one that is there is replaced only as the user may (excl). */
        struct space_error as_root_err = { 0 };
        a.user = NULL;
        a.excl = true;
        if (!agent_user || err.code != SPACE_E_PERMISSION_DENIED ||
            file_upload_begin(u->ctx, &u->sb, &a, length, &u->file, &as_root_err) < 0)
                return fail(u, &err);
        u->made_as_root = true;
        return 0;
}

static int file_write(struct e2b_upload *u, const char *data, size_t len)
{
        if (file_upload_write(u->file, data, len) == 0) {
                u->bytes += len;
                return 0;
        }
        /* Its commit says why the write failed (and drops the file). */
        struct space_error err = { 0 };
        struct agent_file_reply reply = { 0 };
        struct agent_file_entry e;
        struct file_upload *f = u->file;
        u->file = NULL;
        if (file_upload_commit(f, &reply, &e, &err) == 0) {
                agent_file_reply_release(&reply);
                space_error_set(&err, SPACE_E_INTERNAL, "a write into the sandbox failed");
        }
        return fail(u, &err);
}

static int file_close(struct e2b_upload *u)
{
        struct space_error err = { 0 };
        struct agent_file_reply reply = { 0 };
        struct agent_file_entry e;
        struct file_upload *f = u->file;
        u->file = NULL;
        if (file_upload_commit(f, &reply, &e, &err) < 0) {
                if (u->made_as_root && err.code == SPACE_E_ALREADY_EXISTS)
                        space_error_set(&err, SPACE_E_PERMISSION_DENIED, "a file is there that the user may not replace");
                return fail(u, &err);
        }
        json_t *info = json_pack("{s:o, s:s, s:o}", "name", output_encoding_utf8((const uint8_t *)e.name, e.name_len), "type",
                                 "file", "path", output_encoding_utf8((const uint8_t *)e.path, e.path_len));
        json_t *meta = e2b_file_meta_render_new(e.meta, e.meta_len);
        if (info && meta)
                json_object_set_new(info, "metadata", meta);
        else
                json_decref(meta);
        json_array_append_new(u->out, info);
        agent_file_reply_release(&reply);
        return 0;
}

/* multipart/form-data: each part is a file. The query's path names the first one; a
 * part's filename names it otherwise (the SDK's multi-file writes send no query path).
 * A signed URL covers one path, the query's: its upload is one part written there, and a
 * body with another part is refused whole — the first part is committed only at the end
 * of the body, so a refused body leaves nothing written. */
static int part_begin(void *cls, const char *headers, size_t len)
{
        struct e2b_upload *u = cls;
        char name[PATH_MAX] = "";
        e2b_multipart_filename(headers, len, name, sizeof(name));
        u->parts++;
        if (u->signed_url && (u->parts > 1 || !u->query_path[0]))
                return fail_with(u, SPACE_E_FORBIDDEN,
                                 u->query_path[0] ? "a signed URL writes one file, its path: this body has more parts"
                                                  : "a signed URL without a path writes nothing");
        return file_open(u, u->parts == 1 && u->query_path[0] ? u->query_path : name, UINT64_MAX);
}

static int part_data(void *cls, const char *data, size_t len)
{
        return file_write(cls, data, len);
}

static int part_end(void *cls)
{
        struct e2b_upload *u = cls;
        if (u->signed_url)
                return 0; /* committed by e2b_upload_finish once the body is whole */
        return file_close(u);
}

static const struct e2b_multipart_ops multipart_ops = { .part_begin = part_begin, .part_data = part_data, .part_end = part_end };

/* The body after gzip: into the multipart parser or the one file. */
static int take(struct e2b_upload *u, const char *data, size_t len)
{
        if (!u->mp)
                return file_write(u, data, len);
        int r = e2b_multipart_feed(u->mp, data, len);
        if (r == -ECANCELED || u->failed)
                return fail(u, NULL);
        if (r == -E2BIG)
                return fail_with(u, SPACE_E_INVALID_REQUEST, "a multipart part's headers are too long");
        if (r < 0)
                return fail_with(u, SPACE_E_INVALID_REQUEST, "the multipart body is malformed");
        return 0;
}

struct meta_scan {
        struct e2b_file_meta *meta;
        struct space_error *err;
        int r;
};

static enum MHD_Result meta_header(void *cls, enum MHD_ValueKind kind, const char *name, const char *value)
{
        struct meta_scan *scan = cls;
        (void)kind;
        scan->r = e2b_file_meta_add_header(scan->meta, name, value, scan->err);
        return scan->r < 0 ? MHD_NO : MHD_YES;
}

int e2b_upload_begin(struct e2b_call *call, struct e2b_upload **ret, struct space_error *err)
{
        const char *user = api_request_query(&call->req, "username");
        const char *path = api_request_query(&call->req, "path");
        const char *encoding = e2b_call_header(call, "Content-Encoding");
        const char *length = e2b_call_header(call, MHD_HTTP_HEADER_CONTENT_LENGTH);
        const char *ct = call->req.content_type;
        if (!user || !*user)
                user = call->user;
        if (!file_user_name_ok(user) || strlen(user) >= sizeof(((struct e2b_upload *)0)->user))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "username is not a user name");
        bool gzip = encoding && strcasecmp(encoding, "gzip") == 0;
        if (encoding && !gzip && strcasecmp(encoding, "identity") != 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "Content-Encoding %.32s is not supported (gzip is)",
                                       encoding);
        if (path && strlen(path) >= PATH_MAX)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "path is longer than %d bytes", PATH_MAX - 1);
        struct e2b_upload *u = calloc(1, sizeof(*u));
        if (!u || !(u->out = json_array())) {
                free(u);
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        }
        u->ctx = call->req.ctx;
        struct meta_scan scan = { .meta = &u->meta, .err = err };
        MHD_get_connection_values(call->req.conn, MHD_HEADER_KIND, meta_header, &scan);
        if (scan.r < 0) {
                upload_free(u);
                return -1;
        }
        snprintf(u->user, sizeof(u->user), "%s", user);
        snprintf(u->query_path, sizeof(u->query_path), "%s", path ? path : "");
        u->signed_url = call->signed_url;
        if (sandbox_service_get_running(u->ctx, &call->req.principal, call->sandbox_id, &u->sb, err) < 0) {
                upload_free(u);
                return -1;
        }
        u->loaded = true;
        if (!runtime_registry_for(&u->ctx->runtimes, &u->sb, err)) {
                upload_free(u);
                return -1;
        }
        if (gzip) {
                u->zout = malloc(INFLATE_CHUNK);
                if (!u->zout || inflateInit2(&u->zs, 16 + MAX_WBITS) != Z_OK) {
                        upload_free(u);
                        return space_error_set(err, SPACE_E_INTERNAL, "cannot start gzip decoding");
                }
                u->gzip = u->z_live = true;
        }
        if (ct && strncasecmp(ct, "multipart/form-data", 19) == 0) {
                int r = e2b_multipart_new(ct, &multipart_ops, u, &u->mp);
                if (r < 0) {
                        upload_free(u);
                        if (r == -EINVAL)
                                return space_error_set(err, SPACE_E_INVALID_REQUEST, "multipart/form-data without a boundary");
                        return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
                }
        } else if (file_open(u, path, gzip || !length ? UINT64_MAX : strtoull(length, NULL, 10)) < 0) {
                *err = u->err;
                upload_free(u);
                return -1;
        }
        *ret = u;
        return 0;
}

void e2b_upload_write(struct e2b_upload *u, const char *data, size_t len)
{
        if (u->failed || len == 0)
                return;
        if (!u->gzip) {
                take(u, data, len);
                return;
        }
        if (u->z_end)
                return; /* after the gzip member: ignored */
        u->zs.next_in = (Bytef *)data;
        u->zs.avail_in = (uInt)len;
        while (u->zs.avail_in > 0 && !u->z_end && !u->failed) {
                u->zs.next_out = u->zout;
                u->zs.avail_out = INFLATE_CHUNK;
                int z = inflate(&u->zs, Z_NO_FLUSH);
                if (z != Z_OK && z != Z_STREAM_END && z != Z_BUF_ERROR) {
                        fail_with(u, SPACE_E_INVALID_REQUEST, "the body is not valid gzip");
                        return;
                }
                size_t n = INFLATE_CHUNK - u->zs.avail_out;
                if (n && take(u, (const char *)u->zout, n) < 0)
                        return;
                u->z_end = z == Z_STREAM_END;
                if (z == Z_BUF_ERROR && n == 0)
                        break;
        }
}

/* /files errors: JSON {"code": <status>, "message"}. */
void e2b_upload_finish(struct e2b_upload *u, struct api_response *resp)
{
        if (!u->failed && u->gzip && !u->z_end)
                fail_with(u, SPACE_E_INVALID_REQUEST, "the body is not valid gzip (it ends early)");
        if (!u->failed && u->mp && e2b_multipart_finish(u->mp) < 0)
                fail_with(u, SPACE_E_INVALID_REQUEST,
                          u->parts ? "the multipart body ends before its closing boundary"
                                   : "no file part in the multipart body");
        if (!u->failed && u->mp && u->parts == 0)
                fail_with(u, SPACE_E_INVALID_REQUEST, "no file part in the multipart body");
        if (!u->failed && u->file)
                file_close(u);
        if (u->failed) {
                e2b_files_reply_error(resp, &u->err);
        } else {
                log_info("e2b.upload", "sandbox=%s files=%zu bytes=%llu", u->sb.id, json_array_size(u->out),
                         (unsigned long long)u->bytes);
                api_response_json(resp, 200, json_incref(u->out));
        }
        upload_free(u);
}

void e2b_upload_abort(struct e2b_upload *u)
{
        if (u)
                upload_free(u);
}
