/* Moving snapshots between hosts: GET /v1/snapshots/{id}/export streams a btrfs send stream
 * (incremental against the snapshot's parent when that is here, so only what changed
 * travels); POST /v1/snapshots/import feeds the request body to btrfs receive as it arrives.
 * The stream carries the snapshot's id (its subvolume's name). */
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
#include "spaced/host_command.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

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
static bool usable_parent(struct spaced_context *ctx, const char *id, char *path, size_t size)
{
        struct snapshot p;
        return id && *id && api_json_name_ok(id) && STORE(ctx, snapshot_get, id, &p) == 0 && strcmp(p.state, "ready") == 0 &&
               btrfs_pool_snapshot_path(&ctx->pool, id, path, size) == 0 && access(path, F_OK) == 0;
}

void route_snapshot_export(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct snapshot snap;
        char path[PATH_MAX], parent_path[PATH_MAX], log_path[PATH_MAX];
        bool full = false;
        const char *id = req->segments[2], *parent = api_request_query(req, "parent");
        if (api_request_query_bool(req, "full", &full, &err) < 0)
                return api_response_error(resp, &err);
        int r = api_json_name_ok(id) ? STORE(req->ctx, snapshot_get, id, &snap) : -ENOENT;
        if (r < 0) {
                if (r == -ENOENT)
                        space_error_set(&err, SPACE_E_NOT_FOUND, "snapshot %.64s not found", id);
                else
                        space_error_errno(&err, r, "load snapshot");
                return api_response_error(resp, &err);
        }
        if (strcmp(snap.state, "ready") != 0) {
                space_error_set(&err, SPACE_E_INVALID_STATE, "snapshot %s is still being taken", id);
                return api_response_error(resp, &err);
        }
        if (parent && !usable_parent(req->ctx, parent, parent_path, sizeof(parent_path))) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "parent %.64s is not a ready snapshot on this host", parent);
                return api_response_error(resp, &err);
        }
        if (!parent && !full && usable_parent(req->ctx, snap.parent_snapshot_id, parent_path, sizeof(parent_path)))
                parent = snap.parent_snapshot_id;
        btrfs_pool_snapshot_path(&req->ctx->pool, id, path, sizeof(path));
        snprintf(log_path, sizeof(log_path), "%s/logs/transfer.log", req->ctx->cfg.state_dir);
        char *argv_full[] = { "btrfs", "send", "-q", path, NULL };
        char *argv_incr[] = { "btrfs", "send", "-q", "-p", parent_path, path, NULL };
        struct send_stream *st = calloc(1, sizeof(*st));
        if (!st || (r = host_command_spawn_piped(parent ? argv_incr : argv_full, true, log_path, &st->fd, &st->pid)) < 0) {
                free(st);
                space_error_errno(&err, st ? r : -ENOMEM, "start btrfs send");
                return api_response_error(resp, &err);
        }
        resp->status = 200;
        resp->stream = (struct api_stream){ .read = send_read, .free = send_free, .cls = st };
        resp->content_type = "application/vnd.btrfs.send-stream";
        /* The parent header is there only for an incremental stream (the importer needs it). */
        resp->headers = json_pack("{s:s, s:s}", "X-Space-Snapshot-Id", id, "X-Space-Sandbox-Id", snap.sandbox_id);
        if (parent)
                json_object_set_new(resp->headers, "X-Space-Parent-Snapshot-Id", json_string(parent));
        log_info("snapshot.export", "snapshot=%s parent=%s", id, parent ? parent : "-");
}

/* ---- import ---- */

struct receive {
        struct spaced_context *ctx;
        int fd;
        pid_t pid;
        bool write_failed;
        char log_path[PATH_MAX];
        char sandbox_id[32], label[128], parent[32];
};

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
        struct receive *rc = calloc(1, sizeof(*rc));
        if (!rc)
                return space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        rc->ctx = req->ctx;
        snprintf(rc->sandbox_id, sizeof(rc->sandbox_id), "%s", sandbox_id ? sandbox_id : "");
        snprintf(rc->label, sizeof(rc->label), "%s", label ? label : "imported");
        snprintf(rc->parent, sizeof(rc->parent), "%s", parent ? parent : "");
        char tag[32], dir[PATH_MAX];
        random_id("", 6, tag, sizeof(tag));
        snprintf(rc->log_path, sizeof(rc->log_path), "%s/logs/import-%s.log", req->ctx->cfg.state_dir, tag);
        snprintf(dir, sizeof(dir), "%s/snapshots", req->ctx->pool.root);
        char *argv[] = { "btrfs", "receive", "-e", dir, NULL };
        int r = host_command_spawn_piped(argv, false, rc->log_path, &rc->fd, &rc->pid);
        if (r < 0) {
                free(rc);
                return space_error_errno(err, r, "start btrfs receive");
        }
        *ret_state = rc;
        return 0;
}

static int import_write(void *state, const char *data, size_t len)
{
        struct receive *rc = state;
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

/* The subvolume btrfs receive made ("At subvol NAME" / "At snapshot NAME"), and the last
 * line it wrote, for error messages. */
static void read_receive_log(const char *path, char *name, size_t name_size, char *last, size_t last_size)
{
        char line[512];
        name[0] = last[0] = '\0';
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\n")] = '\0';
                if (strncmp(line, "At subvol ", 10) == 0)
                        snprintf(name, name_size, "%s", line + 10);
                else if (strncmp(line, "At snapshot ", 12) == 0)
                        snprintf(name, name_size, "%s", line + 12);
                /* stdout is flushed at exit, after stderr: keep the error line, not the last one. */
                if (strncmp(line, "ERROR", 5) == 0 || (line[0] && strncmp(last, "ERROR", 5) != 0))
                        snprintf(last, last_size, "%s", line);
        }
}

static void drop_received(struct receive *rc, const char *name)
{
        char path[PATH_MAX];
        if (name[0] && strchr(name, '/') == NULL && btrfs_pool_snapshot_path(&rc->ctx->pool, name, path, sizeof(path)) == 0) {
                struct snapshot existing;
                if (STORE(rc->ctx, snapshot_get, name, &existing) == -ENOENT)
                        btrfs_pool_subvolume_delete(path);
        }
}

static void import_finish(void *state, struct api_request *req, struct api_response *resp)
{
        struct receive *rc = state;
        struct space_error err = { 0 };
        char name[256], last[512];
        close(rc->fd);
        int status = host_command_wait(rc->pid, rc->write_failed);
        read_receive_log(rc->log_path, name, sizeof(name), last, sizeof(last));
        struct snapshot snap = { 0 };
        if (status != 0) {
                drop_received(rc, name);
                if (strstr(last, "exists"))
                        space_error_set(&err, SPACE_E_ALREADY_EXISTS, "snapshot %s is already here", name[0] ? name : "in the stream");
                else
                        space_error_set(&err, SPACE_E_INVALID_REQUEST, "not a usable btrfs send stream (btrfs receive: %s)",
                                        last[0] ? last : "failed");
        } else if (!api_json_name_ok(name) || strncmp(name, "snap-", 5) != 0) {
                drop_received(rc, name);
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "the stream holds \"%.64s\", not a space snapshot", name);
        } else {
                snprintf(snap.id, sizeof(snap.id), "%s", name);
                snprintf(snap.sandbox_id, sizeof(snap.sandbox_id), "%s", rc->sandbox_id);
                snprintf(snap.state, sizeof(snap.state), "ready");
                snprintf(snap.label, sizeof(snap.label), "%s", rc->label);
                snprintf(snap.kind, sizeof(snap.kind), "filesystem");
                snprintf(snap.parent_snapshot_id, sizeof(snap.parent_snapshot_id), "%s", rc->parent);
                snap.bytes_exclusive = -1;
                snap.created_at_ms = wallclock_now_ms();
                int r = STORE(rc->ctx, insert_batch, NULL, 0, &snap, 1, NULL);
                if (r < 0) {
                        drop_received(rc, name);
                        space_error_errno(&err, r, "store imported snapshot");
                }
        }
        unlink(rc->log_path);
        if (err.code)
                api_response_error(resp, &err);
        else {
                log_info("snapshot.import", "snapshot=%s", snap.id);
                api_response_json(resp, 201, api_render_snapshot(&snap));
        }
        free(rc);
}

static void import_abort(void *state)
{
        struct receive *rc = state;
        char name[256], last[512];
        close(rc->fd);
        host_command_wait(rc->pid, true);
        read_receive_log(rc->log_path, name, sizeof(name), last, sizeof(last));
        drop_received(rc, name);
        unlink(rc->log_path);
        free(rc);
}

const struct api_upload_sink snapshot_import_sink = {
        .begin = import_begin,
        .write = import_write,
        .finish = import_finish,
        .abort = import_abort,
};
