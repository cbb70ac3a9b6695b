/* POST /v1/templates (a Spacefile build: the body is the build context as a tar) and
 * POST /v1/templates/import (a rootfs or OCI image archive). Both bodies are streamed to a
 * file under <pool>/builds/<op>/ as they arrive (up to --max-context), then unpacked with
 * rootfs_archive, which refuses or neutralises hostile entries. Bad input is answered with
 * a 4xx once the body is read, and leaves nothing behind. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "operations/storage_gate.h"
#include "api/api_render.h"
#include "api/api_routes.h"
#include "api/upload_spool.h"
#include "cleanup.h"
#include "operations/operation_queue.h"
#include "service/template_access.h"
#include "service/template_service.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"
#include "templates/rootfs_archive.h"
#include "templates/rootfs_path.h"
#include "templates/spacefile.h"
#include "templates/template_build.h"
#include "templates/template_catalog.h"
#include "templates/template_import.h"
#include "templates/template_ref.h"

struct template_upload {
        struct spaced_context *ctx;
        bool import;
        struct upload_spool spool;
        struct operation op;
        struct api_wait wait;
        char row[64];
        char spacefile[256];
        char format[16];
        char dir[PATH_MAX];
        struct principal principal; /* the uploader: a new template is its project's */
};

static void drop_dir(struct template_upload *u)
{
        char parent[PATH_MAX];
        snprintf(parent, sizeof(parent), "%s", u->dir);
        char *slash = strrchr(parent, '/');
        if (!slash)
                return;
        *slash = '\0';
        _cleanup_close_ int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0)
                rootfs_path_remove_at(fd, slash + 1);
}

static void upload_free(struct template_upload *u)
{
        if (u->spool.fd >= 0)
                close(u->spool.fd);
        free(u);
}

/* name=NAME[:TAG] (tag defaults to latest) → the row name; built-ins and presets are taken. */
static int row_from_query(struct spaced_context *ctx, const char *name, char *row, size_t size, struct space_error *err)
{
        char n[64], tag[64];
        if (!name || template_ref_split(name, n, sizeof(n), tag, sizeof(tag)) < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST,
                                       "name=NAME[:TAG] is required: [A-Za-z0-9_.-], at most 63 bytes in all");
        if (template_catalog_is_builtin(n) || template_build_is_preset(ctx, n))
                return space_error_set(err, SPACE_E_ALREADY_EXISTS, "%s is a built-in template; choose another name", n);
        if (snprintf(row, size, "%s:%s", n, tag[0] ? tag : "latest") >= (int)size || !template_ref_ok(row))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "name:tag is longer than 63 bytes");
        return 0;
}

static int upload_begin(struct api_request *req, void **ret_state, struct space_error *err, bool import)
{
        struct template_upload *u = calloc(1, sizeof(*u));
        if (!u)
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        u->spool.fd = -1;
        u->spool.cap = req->ctx->cfg.max_context_bytes;
        u->ctx = req->ctx;
        u->import = import;
        if (storage_gate_check(req->ctx, STORAGE_GROWS, err) < 0)
                goto fail;
        const char *spacefile = api_request_query(req, "spacefile"), *format = api_request_query(req, "format");
        char clean[256];
        if (row_from_query(req->ctx, api_request_query(req, "name"), u->row, sizeof(u->row), err) < 0 ||
            template_access_check(req->ctx, &req->principal, u->row, true, err) < 0 || api_wait_parse(req, &u->wait, err) < 0)
                goto fail;
        u->principal = req->principal;
        if (!import && spacefile && (strlen(spacefile) > 200 || rootfs_path_clean(spacefile, false, clean, sizeof(clean)) < 0)) {
                space_error_set(err, SPACE_E_INVALID_REQUEST, "spacefile must be a relative path inside the context");
                goto fail;
        }
        snprintf(u->spacefile, sizeof(u->spacefile), "%s", spacefile ? spacefile : "Spacefile");
        snprintf(u->format, sizeof(u->format), "%s", format ? format : "rootfs");
        if (import && strcmp(u->format, "rootfs") != 0 && strcmp(u->format, "oci") != 0) {
                space_error_set(err, SPACE_E_INVALID_REQUEST, "format must be rootfs or oci");
                goto fail;
        }
        operation_init(&u->op, "template.build", u->row);
        char path[PATH_MAX + 32];
        template_build_dir(req->ctx, u->op.id, u->dir, sizeof(u->dir));
        snprintf(path, sizeof(path), "%s/upload.tar", u->dir);
        if (mkdir(u->dir, 0700) < 0 || (u->spool.fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
                space_error_errno(err, -errno, "create %s", path);
                drop_dir(u);
                goto fail;
        }
        *ret_state = u;
        return 0;
fail:
        upload_free(u);
        return -1;
}

static int build_begin(struct api_request *req, void **ret_state, struct space_error *err)
{
        return upload_begin(req, ret_state, err, false);
}

static int import_begin(struct api_request *req, void **ret_state, struct space_error *err)
{
        return upload_begin(req, ret_state, err, true);
}

static int upload_write(void *state, const char *data, size_t len)
{
        struct template_upload *u = state;
        return upload_spool_write(&u->spool, data, len);
}

/* The Spacefile must parse and its FROM must name a template here, before anything is queued. */
static int check_spacefile(struct template_upload *u, const char *context, struct space_error *err)
{
        _cleanup_close_ int ctxfd = open(context, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int fd = ctxfd >= 0 ? rootfs_path_open(ctxfd, u->spacefile, O_RDONLY, 0) : -1;
        if (fd < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "the build context has no %s", u->spacefile);
        _cleanup_free_ char *text = malloc(SPACEFILE_MAX_BYTES + 1);
        size_t len = 0;
        ssize_t n;
        while (text && len <= SPACEFILE_MAX_BYTES && (n = read(fd, text + len, SPACEFILE_MAX_BYTES + 1 - len)) > 0)
                len += (size_t)n;
        struct spacefile f;
        struct spacefile_error perr;
        if (!text || spacefile_parse(text, len, &f, &perr) < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s line %u: %s", u->spacefile, perr.line, perr.message);
        struct template_record t;
        int r = template_ref_resolve(u->ctx, f.steps[0].value, &t);
        if (r == 0) {
                if (!template_access_sees(&u->principal, &t))
                        r = -ENOENT; /* another project's: as if it were not here */
                template_record_release(&t);
        }
        if (r < 0)
                space_error_set(err, SPACE_E_NOT_FOUND, "%s line %u: FROM %.64s: no such template", u->spacefile, f.steps[0].line,
                                f.steps[0].value);
        spacefile_release(&f);
        return r == 0 ? 0 : -1;
}

static int submit_build(struct template_upload *u, struct space_error *err)
{
        if (operation_set_params(&u->op, json_pack("{s:s}", "spacefile", u->spacefile), err) < 0)
                return -1;
        if (template_service_submit_build(u->ctx, &u->principal, &u->op, err) < 0)
                return -1;
        log_info("template.build_submitted", "op=%s template=%s bytes=%llu", u->op.id, u->row,
                 (unsigned long long)u->spool.bytes);
        return 0;
}

static void upload_finish(void *state, struct api_request *req, struct api_response *resp)
{
        struct template_upload *u = state;
        struct space_error err = { 0 };
        char tar[PATH_MAX + 32], context[PATH_MAX + 32];
        snprintf(tar, sizeof(tar), "%s/upload.tar", u->dir);
        snprintf(context, sizeof(context), "%s/context", u->dir);
        close(u->spool.fd);
        u->spool.fd = -1;
        int r = -1;
        if (u->spool.too_large)
                space_error_set(&err, SPACE_E_PAYLOAD_TOO_LARGE, "the archive is larger than %llu bytes (--max-context)",
                                (unsigned long long)u->ctx->cfg.max_context_bytes);
        else if (u->spool.write_failed)
                space_error_set(&err, SPACE_E_INTERNAL, "cannot store the upload");
        else if (u->import) {
                struct template_record t;
                if (template_import_publish(u->ctx, u->op.id, tar, u->format, u->row, u->principal.project_id, &t, &err) == 0) {
                        api_response_json(resp, 201, api_render_template(&t));
                        snprintf(resp->created, sizeof(resp->created), "%s", u->row);
                        template_record_release(&t);
                        r = 0;
                }
        } else {
                struct rootfs_archive_options o = { .keep_owner = false, .max_bytes = u->ctx->cfg.max_context_bytes };
                if (mkdir(context, 0755) < 0)
                        space_error_errno(&err, -errno, "mkdir %s", context);
                else if (rootfs_archive_extract(tar, context, &o, NULL, &err) == 0 && check_spacefile(u, context, &err) == 0) {
                        unlink(tar);
                        if (submit_build(u, &err) == 0) {
                                snprintf(resp->created, sizeof(resp->created), "%s", u->row);
                                api_respond_operation(req, resp, &u->op, &u->wait, "template");
                                upload_free(u);
                                return; /* the build owns the directory now */
                        }
                } else if (err.code == SPACE_E_INVALID_REQUEST) {
                        space_error_wrap(&err, "build context");
                }
        }
        if (r < 0)
                api_response_error(resp, &err);
        drop_dir(u);
        upload_free(u);
}

static void upload_abort(void *state)
{
        struct template_upload *u = state;
        drop_dir(u);
        upload_free(u);
}

const struct api_upload_sink template_build_sink = {
        .begin = build_begin,
        .write = upload_write,
        .finish = upload_finish,
        .abort = upload_abort,
};

const struct api_upload_sink template_import_sink = {
        .begin = import_begin,
        .write = upload_write,
        .finish = upload_finish,
        .abort = upload_abort,
};
