/* e2b_history: E2B snapshots and fork on space's snapshots and forks (sandbox_history).
 * space snapshots hold the filesystem only: a sandbox made from one, or forked, starts its
 * processes afresh (docs/e2b.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_json.h"
#include "e2b/e2b_metrics.h"
#include "e2b/e2b_router.h"
#include "e2b/e2b_routes.h"
#include "operations/sandbox_history.h"
#include "service/sandbox_access.h"
#include "service/snapshot_access.h"
#include "service/snapshot_service.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "service/policy_gate.h"

#define LIST_LIMIT_DEFAULT 100
#define LIST_LIMIT_MAX 1000
#define FORK_MAX 16

static json_t *render_snapshot(const struct snapshot *s)
{
        json_t *names = json_array();
        if (s->label[0])
                json_array_append_new(names, json_string(s->label));
        return json_pack("{s:s, s:o, s:s}", "snapshotID", s->id, "names", names, "sandboxID", s->sandbox_id);
}

int e2b_snapshot_by_name(struct spaced_context *ctx, const struct principal *p, const char *name, char *ret_id, size_t size)
{
        struct space_error err;
        struct snapshot snap;
        if (snapshot_service_by_label(ctx, p, name, &snap, &err) < 0)
                return -ENOENT;
        snprintf(ret_id, size, "%s", snap.id);
        return 0;
}

void e2b_snapshot_create(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *body = NULL;
        const char *name = "";
        struct snapshot snap;
        struct operation op;
        if (e2b_body_object(call, &body, resp) < 0)
                return;
        if (api_json_string(body, "name", 127, &name, &err) < 0 ||
            sandbox_history_snapshot(call->req.ctx, call->sandbox_id, name, false, false, &snap, &op, &err) < 0 ||
            e2b_wait_operation(call->req.ctx, &op, &err) < 0) {
                json_decref(body);
                return e2b_reply_space_error(resp, &err);
        }
        json_decref(body);
        if (snapshot_access_load(call->req.ctx, &call->req.principal, snap.id, &snap, &err) < 0)
                return e2b_reply_error(resp, 500, "snapshot %s vanished", snap.id);
        api_response_json(resp, 201, render_snapshot(&snap));
}

/* ?sandboxID=&name=&limit=&nextToken= ; pages as the sandbox list does. */
void e2b_snapshot_list(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        const char *sandbox_id = api_request_query(&call->req, "sandboxID");
        const char *name = api_request_query(&call->req, "name");
        const char *token = api_request_query(&call->req, "nextToken");
        long long limit = LIST_LIMIT_DEFAULT, token_ms = -1;
        char token_id[32] = "";
        if (api_request_query_int(&call->req, "limit", 1, LIST_LIMIT_MAX, &limit, &err) < 0)
                return e2b_reply_space_error(resp, &err);
        if (token && *token) {
                char *end;
                token_ms = strtoll(token, &end, 10);
                if (*end != '_' || strlen(end + 1) >= sizeof(token_id))
                        return e2b_reply_error(resp, 400, "nextToken is not one this server gave");
                snprintf(token_id, sizeof(token_id), "%s", end + 1);
        }
        if (sandbox_id && !api_json_name_ok(sandbox_id))
                return api_response_json(resp, 200, json_array());
        struct snapshot *all = NULL;
        size_t n = 0;
        if (snapshot_service_list(call->req.ctx, &call->req.principal, NULL, sandbox_id && *sandbox_id ? sandbox_id : NULL, NULL,
                                  &all, &n, &err) < 0)
                return e2b_reply_error(resp, 500, "%s", err.message);
        json_t *arr = json_array();
        const struct snapshot *last = NULL;
        bool more = false;
        for (size_t i = 0; i < n; i++) { /* oldest first, as the store gives them */
                const struct snapshot *s = &all[i];
                if (strcmp(s->state, "ready") != 0 || (name && *name && strcmp(s->label, name) != 0))
                        continue;
                if (token_ms >= 0 &&
                    (s->created_at_ms < token_ms || (s->created_at_ms == token_ms && strcmp(s->id, token_id) <= 0)))
                        continue;
                if ((long long)json_array_size(arr) == limit) {
                        more = true;
                        break;
                }
                json_array_append_new(arr, render_snapshot(s));
                last = s;
        }
        if (more && last) {
                char next[64];
                snprintf(next, sizeof(next), "%" PRId64 "_%s", last->created_at_ms, last->id);
                resp->headers = json_pack("{s:s}", "X-Next-Token", next);
        }
        free(all);
        api_response_json(resp, 200, arr);
}

/* DELETE /templates/{id}: only snapshots can be deleted this way (templates are operated
 * with space's own API). */
void e2b_snapshot_delete(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct snapshot snap;
        if (strncmp(call->sandbox_id, "snap-", 5) != 0 ||
            snapshot_access_load(call->req.ctx, &call->req.principal, call->sandbox_id, &snap, &err) < 0)
                return e2b_reply_error(resp, 404, "snapshot %s not found", call->sandbox_id);
        if (sandbox_history_delete_snapshot(call->req.ctx, call->sandbox_id, &err) < 0)
                return e2b_reply_space_error(resp, &err);
        e2b_reply_empty(resp);
}

void e2b_sandbox_fork(struct e2b_call *call, struct api_response *resp)
{
        struct spaced_context *ctx = call->req.ctx;
        struct space_error err = { 0 };
        json_t *body = NULL;
        long long count = 1, timeout_s = -1;
        char(*ids)[32] = NULL;
        struct operation op;
        if (e2b_body_object(call, &body, resp) < 0)
                return;
        int r = api_json_int(body, "count", 1, FORK_MAX, &count, &err);
        if (r == 0)
                r = e2b_timeout_field(body, &timeout_s, &err);
        json_decref(body);
        if (r < 0)
                return e2b_reply_space_error(resp, &err);
        struct sandbox parent = { 0 };
        if (sandbox_access_load(ctx, &call->req.principal, call->sandbox_id, &parent, &err) < 0 ||
            parent.state == SANDBOX_DESTROYED || parent.state == SANDBOX_DESTROYING) {
                if (parent.id[0])
                        sandbox_release(&parent);
                return e2b_reply_error(resp, 404, "sandbox %s not found", call->sandbox_id);
        }
        int gated = policy_gate_fork(ctx, &parent, count, &err);
        sandbox_release(&parent);
        if (gated < 0)
                return e2b_reply_space_error(resp, &err);
        if (sandbox_history_fork(ctx, call->sandbox_id, NULL, (int)count, false, NULL, &ids, &op, &err) < 0)
                return e2b_reply_space_error(resp, &err);
        /* A fork where some children failed is failed as a whole; each answers for itself. */
        struct space_error wait_err = { 0 }, del_err = { 0 };
        e2b_wait_operation(ctx, &op, &wait_err);
        /* E2B's fork leaves no snapshot behind: the one it took is the fork's own, and each
         * child has its own copy by now. Refused (and logged) while the fork still runs; a
         * crash just before leaves it as a v1 fork leaves its snapshot (docs/e2b.md). */
        if (op.snapshot_id[0] && sandbox_history_delete_snapshot(ctx, op.snapshot_id, &del_err) < 0 &&
            del_err.code != SPACE_E_NOT_FOUND)
                log_warn("e2b.fork_snapshot_kept", "sandbox=%s snapshot=%s error=\"%s\"", call->sandbox_id, op.snapshot_id,
                         del_err.message);
        json_t *arr = json_array();
        for (long long i = 0; i < count; i++) {
                struct sandbox sb;
                if (sandbox_access_load(ctx, &call->req.principal, ids[i], &sb, &err) < 0) {
                        json_array_append_new(arr, json_pack("{s:{s:i, s:s}}", "error", "code", 500, "message", "fork vanished"));
                        continue;
                }
                if (sb.state == SANDBOX_RUNNING) {
                        if (timeout_s >= 0)
                                e2b_set_timeout(call, sb.id, timeout_s, false, &err);
                        json_array_append_new(arr, json_pack("{s:o}", "sandbox", e2b_render_created(call, &sb)));
                } else {
                        const char *why = sb.state_reason[0] ? sb.state_reason
                                : wait_err.message[0]        ? wait_err.message
                                                             : "fork failed";
                        json_array_append_new(arr, json_pack("{s:{s:i, s:s}}", "error", "code", 500, "message", why));
                }
                sandbox_release(&sb);
        }
        free(ids);
        api_response_json(resp, 201, arr);
}

/* ?start=&end= (unix seconds): the samples of e2b_metrics in that window. */
void e2b_sandbox_metrics(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        long long start = 0, end = 0;
        if (api_request_query_int(&call->req, "start", 0, INT64_MAX / 1000, &start, &err) < 0 ||
            api_request_query_int(&call->req, "end", 0, INT64_MAX / 1000, &end, &err) < 0)
                return e2b_reply_space_error(resp, &err);
        struct sandbox sb;
        if (sandbox_access_load(call->req.ctx, &call->req.principal, call->sandbox_id, &sb, &err) < 0)
                return e2b_reply_error(resp, 404, "sandbox %s not found", call->sandbox_id);
        if (sb.state == SANDBOX_DESTROYED) {
                sandbox_release(&sb);
                return e2b_reply_error(resp, 404, "sandbox %s not found", call->sandbox_id);
        }
        json_t *series = e2b_metrics_series(call->front->metrics, &sb, start, end);
        sandbox_release(&sb);
        api_response_json(resp, 200, series);
}
