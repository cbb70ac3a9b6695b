/* Moving snapshots between hosts: GET /v1/snapshots/{id}/export streams a btrfs send stream
 * (incremental against the snapshot's parent when that is here, so only what changed
 * travels); POST /v1/snapshots/import checks the request body command by command
 * (send_stream_check) and feeds what passed to btrfs receive, confined to a staging
 * directory of its own (import_confine); the received subvolume is moved into snapshots/
 * only when the whole stream passed and receive succeeded. The stream carries the
 * snapshot's id (its subvolume's name). */
#include <btrfsutil.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api_json.h"
#include "api/api_render.h"
#include "api/api_routes.h"
#include "cleanup.h"
#include "operations/storage_gate.h"
#include "service/snapshot_access.h"
#include "service/snapshot_service.h"
#include "spaced/host_command.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"
#include "storage/import_confine.h"
#include "storage/memory_image.h"
#include "storage/send_stream_check.h"
#include "service/policy_gate.h"

struct send_stream {
        int fd;
        pid_t pid;
        bool reaped;
};

static ssize_t send_read(void *cls, char *buf, size_t max)
{
        struct send_stream *st = cls;
        for (;;) {
                ssize_t n = read(st->fd, buf, max);
                if (n > 0)
                        return n;
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -1;
                st->reaped = true;
                return host_command_wait(st->pid, false) == 0 ? 0 : -1;
        }
}

static void send_free(void *cls)
{
        struct send_stream *st = cls;
        close(st->fd);
        if (!st->reaped)
                host_command_wait(st->pid, true); /* the client left half way */
        free(st);
}

/* Usable as an incremental base: a ready snapshot whose subvolume is here. */
static bool usable_parent(struct api_request *req, const char *id, char *path, size_t size)
{
        struct spaced_context *ctx = req->ctx;
        struct snapshot p;
        struct space_error unseen;
        return id && *id && api_json_name_ok(id) && snapshot_access_load(ctx, &req->principal, id, &p, &unseen) == 0 &&
                strcmp(p.state, "ready") == 0 && btrfs_pool_snapshot_path(&ctx->pool, id, path, size) == 0 &&
                access(path, F_OK) == 0;
}

/* An export's snapshot: named by an id, seen by the caller, and one policy lets out. */
static int export_load(struct api_request *req, const char *id, struct snapshot *snap, struct space_error *err)
{
        if (!api_json_name_ok(id))
                return space_error_set(err, SPACE_E_NOT_FOUND, "snapshot %.64s not found", id);
        if (snapshot_access_load(req->ctx, &req->principal, id, snap, err) < 0)
                return -1;
        return policy_gate_export(req->ctx, snap->project_id, snap->sandbox_id, err);
}

/* Answers 200 with what argv writes to its stdout, streamed (its stderr to the transfer log). */
static int stream_command(struct api_request *req, struct api_response *resp, char **argv, const char *content_type,
                          struct space_error *err)
{
        char log_path[PATH_MAX];
        snprintf(log_path, sizeof(log_path), "%s/logs/transfer.log", req->ctx->cfg.state_dir);
        struct send_stream *st = calloc(1, sizeof(*st));
        int r = 0;
        if (!st || (r = host_command_spawn_piped(argv, true, log_path, &st->fd, &st->pid)) < 0) {
                free(st);
                return space_error_errno(err, st ? r : -ENOMEM, "start %s", argv[0]);
        }
        resp->status = 200;
        resp->stream = (struct api_stream){ .read = send_read, .free = send_free, .cls = st };
        resp->content_type = content_type;
        return 0;
}

void route_snapshot_export(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct snapshot snap;
        char path[PATH_MAX], parent_path[PATH_MAX];
        bool full = false;
        const char *id = req->segments[2], *parent = api_request_query(req, "parent");
        if (api_request_query_bool(req, "full", &full, &err) < 0)
                return api_response_error(resp, &err);
        if (export_load(req, id, &snap, &err) < 0)
                return api_response_error(resp, &err);
        if (strcmp(snap.state, "ready") != 0) {
                space_error_set(&err, SPACE_E_INVALID_STATE, "snapshot %s is still being taken", id);
                return api_response_error(resp, &err);
        }
        struct snapshot seen;
        if (parent &&
            (snapshot_access_load(req->ctx, &req->principal, parent, &seen, &err) < 0 ||
             !usable_parent(req, parent, parent_path, sizeof(parent_path)))) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "parent %.64s is not a ready snapshot on this host", parent);
                return api_response_error(resp, &err);
        }
        if (!parent && !full && usable_parent(req, snap.parent_snapshot_id, parent_path, sizeof(parent_path)))
                parent = snap.parent_snapshot_id;
        btrfs_pool_snapshot_path(&req->ctx->pool, id, path, sizeof(path));
        char *argv_full[] = { "btrfs", "send", "-q", path, NULL };
        char *argv_incr[] = { "btrfs", "send", "-q", "-p", parent_path, path, NULL };
        if (stream_command(req, resp, parent ? argv_incr : argv_full, "application/vnd.btrfs.send-stream", &err) < 0)
                return api_response_error(resp, &err);
        /* The parent header is there only for an incremental stream (the importer needs it). */
        resp->headers = json_pack("{s:s, s:s}", "X-Space-Snapshot-Id", id, "X-Space-Sandbox-Id", snap.sandbox_id);
        if (parent)
                json_object_set_new(resp->headers, "X-Space-Parent-Snapshot-Id", json_string(parent));
        log_info("snapshot.export", "snapshot=%s parent=%s", id, parent ? parent : "-");
}

/* GET /v1/snapshots/{id}/memory: a memory snapshot's image as a tar (its files, at the top),
 * for POST /v1/snapshots/import/memory on the other host before the filesystem's import. */
void route_snapshot_memory_export(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct snapshot snap;
        char image[PATH_MAX];
        const char *id = req->segments[2];
        if (export_load(req, id, &snap, &err) < 0)
                return api_response_error(resp, &err);
        if (strcmp(snap.state, "ready") != 0 || strcmp(snap.kind, "memory") != 0 ||
            memory_image_exists(&req->ctx->pool, id) != 1 || memory_image_path(&req->ctx->pool, id, image, sizeof(image)) < 0) {
                space_error_set(&err, SPACE_E_INVALID_STATE, "snapshot %s has no memory image (a ready memory snapshot has one)",
                                id);
                return api_response_error(resp, &err);
        }
        char *argv[] = { "tar", "--format=ustar", "-C", image, "-cf", "-", ".", NULL };
        if (stream_command(req, resp, argv, "application/x-tar", &err) < 0)
                return api_response_error(resp, &err);
        resp->headers = json_pack("{s:s}", "X-Space-Snapshot-Id", id);
        log_info("snapshot.export_memory", "snapshot=%s", id);
}

/* ---- import ---- */

struct receive {
        struct spaced_context *ctx;
        struct send_stream_check *check;
        int fd;
        pid_t pid;
        bool reaped, write_failed, first_checked;
        struct space_error refusal; /* why the stream was refused before its end */
        char staging[PATH_MAX], log_path[PATH_MAX];
        char sandbox_id[32], label[128], parent[32];
        char project_id[32]; /* the importer's: the snapshot is its project's */
};

static void receive_stop(struct receive *rc, bool kill_first, int *ret_status)
{
        if (rc->fd >= 0)
                close(rc->fd);
        rc->fd = -1;
        int status = -1;
        if (!rc->reaped)
                status = host_command_wait(rc->pid, kill_first);
        rc->reaped = true;
        if (ret_status)
                *ret_status = status;
}

static void receive_free(struct receive *rc)
{
        receive_stop(rc, true, NULL);
        if (rc->staging[0])
                btrfs_pool_subvolume_delete(rc->staging); /* its log and whatever receive made go too */
        send_stream_check_free(rc->check);
        free(rc);
}

/* The UUIDs receive may know the parent by: its own and, for an imported one, the one it
 * was received as. */
static size_t parent_uuids(const char *path, uint8_t (*uuids)[16])
{
        struct btrfs_util_subvolume_info info;
        static const uint8_t zero[16];
        size_t n = 0;
        if (btrfs_util_subvolume_info(path, 0, &info) != BTRFS_UTIL_OK)
                return 0;
        memcpy(uuids[n++], info.uuid, 16);
        if (memcmp(info.received_uuid, zero, 16) != 0)
                memcpy(uuids[n++], info.received_uuid, 16);
        return n;
}

static int import_begin(struct api_request *req, void **ret_state, struct space_error *err)
{
        const char *sandbox_id = api_request_query(req, "sandbox_id"), *label = api_request_query(req, "label"),
                   *parent = api_request_query(req, "parent_snapshot_id");
        json_t *label_check = label ? json_string(label) : NULL; /* NULL when not valid UTF-8 */
        bool label_ok = !label || (label_check && strlen(label) <= 127);
        json_decref(label_check);
        if ((sandbox_id && !api_json_name_ok(sandbox_id)) || (parent && !api_json_name_ok(parent)) || !label_ok)
                return space_error_set(err, SPACE_E_INVALID_REQUEST,
                                       "sandbox_id and parent_snapshot_id must be ids; label at most 127 bytes of UTF-8");
        if (storage_gate_check(req->ctx, STORAGE_GROWS, err) < 0)
                return -1;
        char parent_path[PATH_MAX];
        struct snapshot p = { 0 };
        struct space_error unseen;
        if (parent &&
            (snapshot_access_load(req->ctx, &req->principal, parent, &p, &unseen) < 0 ||
             !usable_parent(req, parent, parent_path, sizeof(parent_path))))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "parent_snapshot_id %s is not a ready snapshot on this host",
                                       parent);
        /* An import joins a sandbox's lineage only as an increment on a snapshot of that
         * sandbox: receive can see no other parent, and the check holds the stream to it. */
        if (sandbox_id && (!parent || strcmp(p.sandbox_id, sandbox_id) != 0))
                return space_error_set(err, SPACE_E_FORBIDDEN,
                                       "sandbox_id %s: an imported snapshot belongs to a sandbox only when it is an incremental "
                                       "stream against one of that sandbox's snapshots (parent_snapshot_id)",
                                       sandbox_id);
        uint8_t uuids[2][16];
        size_t n_uuids = parent ? parent_uuids(parent_path, uuids) : 0;
        if (parent && n_uuids == 0)
                return space_error_set(err, SPACE_E_INTERNAL, "cannot read the subvolume of %s", parent);

        struct receive *rc = calloc(1, sizeof(*rc));
        if (!rc)
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        rc->ctx = req->ctx;
        rc->fd = -1;
        rc->reaped = true;
        snprintf(rc->sandbox_id, sizeof(rc->sandbox_id), "%s", sandbox_id ? sandbox_id : "");
        snprintf(rc->label, sizeof(rc->label), "%s", label ? label : "imported");
        snprintf(rc->parent, sizeof(rc->parent), "%s", parent ? parent : "");
        snprintf(rc->project_id, sizeof(rc->project_id), "%s", req->principal.project_id);
        char tag[32], name[48];
        random_id("", 6, tag, sizeof(tag));
        snprintf(name, sizeof(name), "import-%s", tag);
        char staging[PATH_MAX];
        int r = send_stream_check_new((const uint8_t(*)[16])uuids, n_uuids, &rc->check);
        if (r == 0 && (r = btrfs_pool_staging_path(&req->ctx->pool, name, staging, sizeof(staging))) == 0 &&
            (r = btrfs_pool_subvolume_create(staging)) == 0) {
                snprintf(rc->staging, sizeof(rc->staging), "%s", staging); /* from here on, removed at the end */
                /* receive's log lives in the staging subvolume: it goes with it, also after a crash */
                snprintf(rc->log_path, sizeof(rc->log_path), "%s/receive.log", staging);
        }
        struct import_confine spec = {
                .pool_root = req->ctx->pool.root, .staging_dir = rc->staging, .parent_id = parent, .log_path = rc->log_path
        };
        if (r == 0 && (r = import_confine_spawn(&spec, &rc->fd, &rc->pid)) == 0)
                rc->reaped = false;
        if (r < 0) {
                receive_free(rc);
                return space_error_errno(err, r, "start btrfs receive");
        }
        *ret_state = rc;
        return 0;
}

static bool snapshot_here(struct receive *rc, const char *id)
{
        char path[PATH_MAX];
        return snapshot_service_id_taken(rc->ctx, id) ||
                (btrfs_pool_snapshot_path(&rc->ctx->pool, id, path, sizeof(path)) == 0 && access(path, F_OK) == 0);
}

/* Once the stream's first command is known: what it makes must be new, and an import that
 * names a sandbox must be an increment. */
static int check_first(struct receive *rc)
{
        const char *name = send_stream_check_subvolume(rc->check);
        if (rc->first_checked || !name[0])
                return 0;
        rc->first_checked = true;
        if (snapshot_here(rc, name))
                return space_error_set(&rc->refusal, SPACE_E_ALREADY_EXISTS, "snapshot %s is already here", name);
        if (rc->sandbox_id[0] && !send_stream_check_incremental(rc->check))
                return space_error_set(&rc->refusal, SPACE_E_FORBIDDEN,
                                       "sandbox_id %s: a full stream does not come from that sandbox's lineage", rc->sandbox_id);
        return 0;
}

static int import_write(void *state, const char *data, size_t len)
{
        struct receive *rc = state;
        if (rc->refusal.code)
                return -1;
        if (send_stream_check_feed(rc->check, data, len) < 0) {
                const char *name = send_stream_check_subvolume(rc->check);
                if (name[0] && !rc->first_checked && snapshot_here(rc, name))
                        space_error_set(&rc->refusal, SPACE_E_ALREADY_EXISTS, "snapshot %s is already here", name);
                else
                        space_error_set(&rc->refusal, SPACE_E_INVALID_REQUEST, "refused send stream: %s",
                                        send_stream_check_error(rc->check));
        } else {
                check_first(rc);
        }
        if (rc->refusal.code) {
                receive_stop(rc, true, NULL); /* receive has applied only commands that passed */
                return -1;
        }
        while (len > 0) {
                ssize_t n = write(rc->fd, data, len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        rc->write_failed = true;
                        return -1;
                }
                data += n;
                len -= (size_t)n;
        }
        return 0;
}

/* The last line btrfs receive wrote, or its error line, for messages (printable ASCII only:
 * it quotes paths from the stream, and ends up in JSON). */
static void read_receive_log(const char *path, char *last, size_t last_size)
{
        char line[512];
        last[0] = '\0';
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\n")] = '\0';
                for (char *c = line; *c; c++)
                        if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f)
                                *c = '?';
                /* stdout is flushed at exit, after stderr: keep the error line, not the last one. */
                if (strncmp(line, "ERROR", 5) == 0 || (line[0] && strncmp(last, "ERROR", 5) != 0))
                        snprintf(last, last_size, "%s", line);
        }
}

/* Moves the received subvolume from staging into snapshots/ (never over anything). */
static int publish(struct receive *rc, const char *name, struct space_error *err)
{
        char from[PATH_MAX], to[PATH_MAX];
        struct btrfs_util_subvolume_info info;
        bool ro = false;
        if (snprintf(from, sizeof(from), "%s/recv/%s", rc->staging, name) >= (int)sizeof(from) ||
            btrfs_pool_snapshot_path(&rc->ctx->pool, name, to, sizeof(to)) < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "bad snapshot name");
        if (btrfs_util_subvolume_info(from, 0, &info) != BTRFS_UTIL_OK ||
            btrfs_util_get_subvolume_read_only(from, &ro) != BTRFS_UTIL_OK || !ro)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "btrfs receive did not finish subvolume %s", name);
        /* A read-only subvolume cannot move (its root's ctime would change): writable for the
         * move, read-only again at once. Its received UUID stays, for increments on top of it. */
        int r = btrfs_pool_set_read_only(from, false);
        if (r < 0)
                return space_error_errno(err, r, "make %s writable to move it", name);
        if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) < 0)
                return errno == EEXIST ? space_error_set(err, SPACE_E_ALREADY_EXISTS, "snapshot %s is already here", name)
                                       : space_error_errno(err, -errno, "move %s into snapshots", name);
        r = btrfs_pool_set_read_only(to, true);
        if (r < 0) {
                btrfs_pool_subvolume_delete(to);
                return space_error_errno(err, r, "make %s read-only", name);
        }
        return 0;
}

static void import_finish(void *state, struct api_request *req, struct api_response *resp)
{
        struct receive *rc = state;
        struct space_error err = rc->refusal;
        char last[512];
        const char *name = send_stream_check_subvolume(rc->check);
        if (!err.code && !rc->write_failed && send_stream_check_finish(rc->check) < 0)
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "refused send stream: %s", send_stream_check_error(rc->check));
        int status = -1;
        receive_stop(rc, err.code != 0 || rc->write_failed, &status);
        read_receive_log(rc->log_path, last, sizeof(last));
        struct snapshot snap = { 0 };
        if (!err.code && status != 0) {
                if (name[0] && snapshot_here(rc, name))
                        space_error_set(&err, SPACE_E_ALREADY_EXISTS, "snapshot %s is already here", name);
                else
                        space_error_set(&err, SPACE_E_INVALID_REQUEST, "not a usable btrfs send stream (btrfs receive: %s)",
                                        last[0] ? last : "failed");
        }
        char staged[MEMORY_IMPORT_KEY_SIZE] = "";
        if (!err.code && publish(rc, name, &err) == 0) {
                /* A memory image this project staged for it (memory_import.c) joins it, moved
                 * into place before the row: a crash between leaves an image of no row, which
                 * the next start removes. */
                bool memory = memory_import_key(rc->project_id, name, staged, sizeof(staged)) == 0 &&
                        memory_image_exists(&rc->ctx->pool, staged) == 1;
                int r = memory ? memory_image_adopt(&rc->ctx->pool, staged, name) : 0;
                if (r < 0)
                        space_error_errno(&err, -r, "move the memory image of %s into place", name);
                snprintf(snap.id, sizeof(snap.id), "%s", name);
                snprintf(snap.sandbox_id, sizeof(snap.sandbox_id), "%s", rc->sandbox_id);
                snprintf(snap.project_id, sizeof(snap.project_id), "%s", rc->project_id);
                snprintf(snap.state, sizeof(snap.state), "ready");
                snprintf(snap.label, sizeof(snap.label), "%s", rc->label);
                snprintf(snap.kind, sizeof(snap.kind), "%s", memory ? "memory" : "filesystem");
                if (send_stream_check_incremental(rc->check))
                        snprintf(snap.parent_snapshot_id, sizeof(snap.parent_snapshot_id), "%s", rc->parent);
                snap.bytes_exclusive = -1;
                snap.created_at_ms = wallclock_now_ms();
                if (err.code || snapshot_service_add_imported(rc->ctx, &req->principal, &snap, &err) < 0) {
                        char path[PATH_MAX];
                        if (btrfs_pool_snapshot_path(&rc->ctx->pool, name, path, sizeof(path)) == 0)
                                btrfs_pool_subvolume_delete(path);
                        if (memory)
                                memory_image_remove(&rc->ctx->pool, name);
                }
        }
        if (err.code) {
                log_info("snapshot.import_refused", "code=%s reason=\"%s\"", space_error_code_name(err.code),
                         LOG_ESC(err.message));
                api_response_error(resp, &err);
        } else {
                log_info("snapshot.import", "snapshot=%s", snap.id);
                api_response_json(resp, 201, api_render_snapshot(&snap));
                snprintf(resp->created, sizeof(resp->created), "%s", snap.id);
        }
        receive_free(rc);
}

static void import_abort(void *state)
{
        receive_free(state);
}

const struct api_upload_sink snapshot_import_sink = {
        .begin = import_begin,
        .write = import_write,
        .finish = import_finish,
        .abort = import_abort,
};
