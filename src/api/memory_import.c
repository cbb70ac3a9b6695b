/* POST /v1/snapshots/import/memory?snapshot_id=ID: the memory image of a memory snapshot, as
 * GET /v1/snapshots/{id}/memory gave it (a tar), staged for the import of the same
 * snapshot's filesystem (POST /v1/snapshots/import) that follows. The body is written to
 * pool/memory/<key>.tar.partial as it arrives (up to --max-context), unpacked by
 * rootfs_archive (which refuses paths outside, links out, devices) into the key's partial
 * image, which must then hold only a checkpoint image's regular files
 * (memory_image_check_files), and moved into place under the key
 * import-<project>-<snapshot id>: only that project's filesystem import of that id adopts it
 * (snapshot_transfer.c), and a staged image nothing adopted goes at the next start (no row
 * owns it). Bad input is a 4xx that leaves nothing behind. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api_json.h"
#include "api/api_routes.h"
#include "api/upload_spool.h"
#include "operations/storage_gate.h"
#include "service/snapshot_service.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "storage/memory_image.h"
#include "templates/rootfs_archive.h"

struct memory_upload {
        struct spaced_context *ctx;
        struct upload_spool spool;
        char snapshot_id[32], key[MEMORY_IMPORT_KEY_SIZE], partial[PATH_MAX], tar[PATH_MAX];
};

int memory_import_key(const char *project_id, const char *snapshot_id, char *buf, size_t size)
{
        return snprintf(buf, size, "import-%s-%s", project_id, snapshot_id) >= (int)size ? -ENAMETOOLONG : 0;
}

static void upload_drop(struct memory_upload *u)
{
        if (u->spool.fd >= 0)
                close(u->spool.fd);
        if (u->tar[0])
                unlink(u->tar);
        if (u->key[0])
                memory_image_remove(&u->ctx->pool, u->key);
        free(u);
}

static int upload_begin(struct api_request *req, void **ret_state, struct space_error *err)
{
        /* An image is the client's bytes that runsc restore parses inside the gVisor sentry:
         * a trusted operator's choice, off unless spaced is told so. */
        if (!req->ctx->cfg.memory_import)
                return space_error_set(err, SPACE_E_FORBIDDEN,
                                       "imports of memory images are off on this server (spaced --memory-import on): "
                                       "import the snapshot's filesystem alone, or ask the operator");
        const char *id = api_request_query(req, "snapshot_id");
        if (!id || strncmp(id, "snap-", 5) != 0 || !api_json_name_ok(id) || strlen(id) >= 32)
                return space_error_set(err, SPACE_E_INVALID_REQUEST,
                                       "snapshot_id=snap-… (the exported snapshot's id) is required");
        if (storage_gate_check(req->ctx, STORAGE_GROWS, err) < 0)
                return -1;
        if (snapshot_service_id_taken(req->ctx, id))
                return space_error_set(err, SPACE_E_ALREADY_EXISTS, "snapshot %s is already here", id);
        struct memory_upload *u = calloc(1, sizeof(*u));
        if (!u)
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        u->ctx = req->ctx;
        u->spool.fd = -1;
        u->spool.cap = req->ctx->cfg.max_context_bytes;
        snprintf(u->snapshot_id, sizeof(u->snapshot_id), "%s", id);
        char key[MEMORY_IMPORT_KEY_SIZE], image[PATH_MAX] = "";
        int r = memory_import_key(req->principal.project_id, id, key, sizeof(key));
        if (r == 0 && (r = memory_image_begin(&req->ctx->pool, key, u->partial, sizeof(u->partial))) == 0) {
                snprintf(u->key, sizeof(u->key), "%s", key); /* from here on, removed on failure */
                r = memory_image_path(&req->ctx->pool, key, image, sizeof(image));
        }
        if (r == 0 && snprintf(u->tar, sizeof(u->tar), "%s.tar.partial", image) >= (int)sizeof(u->tar))
                r = -ENAMETOOLONG;
        if (r == 0 && (u->spool.fd = open(u->tar, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
                r = -errno;
        if (r < 0) {
                upload_drop(u);
                return space_error_errno(err, -r, "stage the memory image of %s", id);
        }
        *ret_state = u;
        return 0;
}

static int upload_write(void *state, const char *data, size_t len)
{
        struct memory_upload *u = state;
        return upload_spool_write(&u->spool, data, len);
}

static void upload_finish(void *state, struct api_request *req, struct api_response *resp)
{
        struct memory_upload *u = state;
        struct space_error err = { 0 };
        struct rootfs_archive_options o = { .max_bytes = u->ctx->cfg.max_context_bytes };
        struct rootfs_archive_stats stats = { 0 };
        (void)req;
        close(u->spool.fd);
        u->spool.fd = -1;
        int r;
        if (u->spool.too_large)
                space_error_set(&err, SPACE_E_PAYLOAD_TOO_LARGE, "the archive is larger than %llu bytes (--max-context)",
                                (unsigned long long)u->ctx->cfg.max_context_bytes);
        else if (u->spool.write_failed)
                space_error_set(&err, SPACE_E_INTERNAL, "cannot store the upload");
        else if (rootfs_archive_extract(u->tar, u->partial, &o, &stats, &err) < 0)
                ; /* err says why */
        else if (stats.skipped || memory_image_check_files(u->partial) < 0)
                space_error_set(&err, SPACE_E_INVALID_REQUEST,
                                "not a memory image: the archive must hold only checkpoint.img (and pages_meta.img, "
                                "pages.img), or memory.img and machine, regular files at its top");
        else if ((r = memory_image_commit(&u->ctx->pool, u->key)) < 0)
                space_error_errno(&err, -r, "store the memory image of %s", u->snapshot_id);
        unlink(u->tar);
        u->tar[0] = '\0';
        if (err.code) {
                log_info("snapshot.import_memory_refused", "snapshot=%s code=%s reason=\"%s\"", u->snapshot_id,
                         space_error_code_name(err.code), LOG_ESC(err.message));
                api_response_error(resp, &err);
                upload_drop(u);
                return;
        }
        log_info("snapshot.import_memory_staged", "snapshot=%s bytes=%llu", u->snapshot_id, (unsigned long long)stats.bytes);
        api_response_json(
                resp, 201,
                json_pack("{s:s, s:I, s:b}", "snapshot_id", u->snapshot_id, "bytes", (json_int_t)stats.bytes, "staged", 1));
        u->key[0] = '\0'; /* staged: kept for the filesystem import */
        upload_drop(u);
}

static void upload_abort(void *state)
{
        upload_drop(state);
}

const struct api_upload_sink memory_import_sink = {
        .begin = upload_begin,
        .write = upload_write,
        .finish = upload_finish,
        .abort = upload_abort,
};
