/* e2b_sandboxes: E2B's control API on space's sandbox lifecycle. Calls that change state
 * submit the usual operation and wait for it, as E2B answers only when it is done. */
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_json.h"
#include "api/api_render.h"
#include "e2b/e2b_keys.h"
#include "e2b/e2b_router.h"
#include "e2b/e2b_routes.h"
#include "e2b/e2b_version.h"
#include "operations/operation_queue.h"
#include "service/sandbox_create_request.h"
#include "service/sandbox_access.h"
#include "service/sandbox_service.h"
#include "operations/sandbox_lifecycle.h"
#include "operations/sandbox_memory.h"
#include "service/snapshot_access.h"
#include "service/template_access.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"
#include "templates/template_ref.h"

#define OP_WAIT_MS 120000
#define DEFAULT_TIMEOUT_S 300
#define MAX_TIMEOUT_S (30LL * 24 * 3600)
#define LIST_LIMIT_DEFAULT 100
#define LIST_LIMIT_MAX 1000

/* --e2b-templates "id=name|name,...": the space template an E2B template id stands for,
 * the first of its names that is ready (the first when none is, so that the error names it).
 * An id not in the map is taken as a space template name, a snapshot id (snap-…) or a
 * snapshot name. */
static void template_for(struct spaced_context *ctx, const char *e2b_id, char *buf, size_t size)
{
        size_t n = strlen(e2b_id);
        snprintf(buf, size, "%s", e2b_id);
        for (const char *p = ctx->cfg.e2b_templates; *p;) {
                size_t len = strcspn(p, ",");
                const char *eq = memchr(p, '=', len);
                if (eq && (size_t)(eq - p) == n && strncmp(p, e2b_id, n) == 0) {
                        const char *alt = eq + 1, *end = p + len;
                        snprintf(buf, size, "%.*s", (int)strcspn(alt, "|,"), alt);
                        while (alt < end) {
                                size_t alen = strcspn(alt, "|,");
                                char name[64];
                                struct template_record t;
                                snprintf(name, sizeof(name), "%.*s", (int)alen, alt);
                                if (template_ref_resolve(ctx, name, &t) == 0) {
                                        bool ready = strcmp(t.state, "ready") == 0;
                                        template_record_release(&t);
                                        if (ready) {
                                                snprintf(buf, size, "%s", name);
                                                return;
                                        }
                                }
                                alt += alen + (alt[alen] == '|');
                        }
                        return;
                }
                p += len + (p[len] == ',');
        }
}

/* The E2B id a space template is known by (the first mapping that names it), else its own
 * name. */
static void e2b_template_of(const struct spaced_context *ctx, const char *space_name, char *buf, size_t size)
{
        size_t n = strlen(space_name);
        snprintf(buf, size, "%s", space_name);
        for (const char *p = ctx->cfg.e2b_templates; *p;) {
                size_t len = strcspn(p, ",");
                const char *eq = memchr(p, '=', len);
                for (const char *alt = eq ? eq + 1 : p + len; alt < p + len;) {
                        size_t alen = strcspn(alt, "|,");
                        if (alen == n && strncmp(alt, space_name, n) == 0) {
                                snprintf(buf, size, "%.*s", (int)(eq - p), p);
                                return;
                        }
                        alt += alen + (alt[alen] == '|');
                }
                p += len + (p[len] == ',');
        }
}

/* E2B knows two states; the transient ones show as what they lead to. */
static const char *e2b_state(enum sandbox_state s)
{
        switch (s) {
        case SANDBOX_PAUSED:
        case SANDBOX_STOPPING:
        case SANDBOX_STOPPED:
                return "paused";
        default:
                return "running";
        }
}

static bool listed(enum sandbox_state s)
{
        return s != SANDBOX_DESTROYING && s != SANDBOX_DESTROYED && s != SANDBOX_FAILED;
}

static json_t *time_or_now(int64_t ms)
{
        return api_render_time(ms > 0 ? ms : wallclock_now_ms());
}

/* The answer of create and connect. */
json_t *e2b_render_created(struct e2b_call *call, const struct sandbox *sb)
{
        char tmpl[64], token[E2B_ENVD_TOKEN_SIZE] = "";
        e2b_template_of(call->req.ctx, sb->template_name, tmpl, sizeof(tmpl));
        e2b_keys_envd_token(call->front->token_secret, sb->id, token, sizeof(token));
        json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:n, s:n}", "sandboxID", sb->id, "templateID", tmpl, "clientID", "space",
                              "envdVersion", E2B_ENVD_VERSION, "envdAccessToken", token, "alias", "domain");
        if (sb->private_ports && e2b_keys_traffic_token(call->front->token_secret, sb->id, token, sizeof(token)) == 0)
                json_object_set_new(j, "trafficAccessToken", json_string(token)); /* e2b_ingress.c wants it */
        explicit_bzero(token, sizeof(token));
        if (call->req.ctx->cfg.e2b_domain[0]) /* getHost(port): <port>-<id>.<domain>, e2b_ingress.h */
                json_object_set_new(j, "domain", json_string(call->req.ctx->cfg.e2b_domain));
        return j;
}

static json_t *render_listed(struct e2b_call *call, const struct sandbox *sb)
{
        char tmpl[64];
        e2b_template_of(call->req.ctx, sb->template_name, tmpl, sizeof(tmpl));
        int64_t end = sb->expires_at_ms > 0 ? sb->expires_at_ms : sb->created_at_ms + sb->timeout_s * 1000;
        json_t *j = json_pack("{s:s, s:s, s:s, s:O, s:s, s:o, s:o, s:s, s:i, s:I, s:i, s:s}", "sandboxID", sb->id, "templateID",
                              tmpl, "clientID", "space", "metadata", sb->metadata, "envdVersion", E2B_ENVD_VERSION, "startedAt",
                              time_or_now(sb->created_at_ms), "endAt", time_or_now(end), "state", e2b_state(sb->state),
                              "cpuCount", sb->resources.cpus < 1 ? 1 : (int)(sb->resources.cpus + 0.5), "memoryMB",
                              (json_int_t)sb->resources.memory_mb, "diskSizeMB", (int)sb->resources.disk_mb, "alias", tmpl);
        return j;
}

static json_t *render_info(struct e2b_call *call, const struct sandbox *sb)
{
        json_t *j = render_listed(call, sb);
        json_object_set_new(j, "allowInternetAccess", json_boolean(sb->network != NULL));
        json_object_set_new(j, "network", json_pack("{s:b}", "allowPublicTraffic", !sb->private_ports));
        const char *domain = call->req.ctx->cfg.e2b_domain;
        json_object_set_new(j, "domain", domain[0] ? json_string(domain) : json_null());
        json_object_set_new(
                j, "lifecycle",
                json_pack("{s:s, s:b}", "onTimeout", strcmp(sb->on_timeout, "pause") == 0 ? "pause" : "kill", "autoResume", 0));
        return j;
}

/* Loads the sandbox of the path; 404 (E2B style) for unknown and destroyed ones. */
static int load(struct e2b_call *call, struct sandbox *sb, struct api_response *resp)
{
        struct space_error err = { 0 };
        int r = sandbox_access_load(call->req.ctx, &call->req.principal, call->sandbox_id, sb, &err);
        if (r == 0 && listed(sb->state))
                return 0;
        if (r == 0)
                sandbox_release(sb);
        if (r < 0 && err.code != SPACE_E_NOT_FOUND)
                e2b_reply_error(resp, 500, "%s", err.message);
        else
                e2b_reply_error(resp, 404, "sandbox %s not found", call->sandbox_id);
        return -1;
}

int e2b_wait_operation(struct spaced_context *ctx, const struct operation *op, struct space_error *err)
{
        struct operation latest;
        int r = operation_queue_wait(ctx->queue, op->id, OP_WAIT_MS, &latest);
        if (r == -ETIMEDOUT)
                return space_error_set(err, SPACE_E_TIMEOUT, "%s of %s is still running after %d s", op->kind, op->target,
                                       OP_WAIT_MS / 1000);
        if (r < 0)
                return space_error_errno(err, r, "wait for %s", op->id);
        if (latest.state == OPERATION_FAILED)
                return space_error_set(err, space_error_code_from_name(latest.error_code), "%s", latest.error_message);
        return 0;
}

static int submit_and_wait(struct spaced_context *ctx, const char *id, enum sandbox_action action, struct space_error *err)
{
        struct operation op;
        if (sandbox_lifecycle_submit(ctx, id, action, &op, err) < 0)
                return -1;
        return e2b_wait_operation(ctx, &op, err);
}

int e2b_body_object(struct e2b_call *call, json_t **ret, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *j = NULL;
        if (call->req.body_len == 0) {
                *ret = json_object();
                return 0;
        }
        json_error_t jerr;
        j = json_loadb(call->req.body, call->req.body_len, 0, &jerr);
        if (!j || !json_is_object(j)) {
                json_decref(j);
                space_error_set(&err, SPACE_E_INVALID_JSON, "body must be a JSON object");
                e2b_reply_space_error(resp, &err);
                return -1;
        }
        *ret = j;
        return 0;
}

int e2b_timeout_field(const json_t *body, long long *ret, struct space_error *err)
{
        json_t *v = json_object_get(body, "timeout");
        if (!v || json_is_null(v))
                return 0;
        return api_json_int(body, "timeout", 0, MAX_TIMEOUT_S, ret, err);
}

/* The E2B body as a create request: templateID is translated (--e2b-templates, snapshot
 * names) here; sandbox_create_request_submit validates and submits as for the v1 API. */
static int parse_create(struct spaced_context *ctx, const struct principal *caller, const json_t *body,
                        struct sandbox_create_request *cr, char *space_template, size_t space_template_size, char *snapshot,
                        size_t snapshot_size, struct space_error *err)
{
        const char *template_id = "base";
        bool auto_pause = false;
        json_t *env = NULL, *metadata = NULL;
        long long timeout_s = DEFAULT_TIMEOUT_S;
        if (api_json_string(body, "templateID", 128, &template_id, err) < 0 || e2b_timeout_field(body, &timeout_s, err) < 0 ||
            api_json_bool(body, "autoPause", &auto_pause, err) < 0 ||
            api_json_string_map(body, "envVars", api_json_env_name_ok, 256, 32768, &env, err) < 0 ||
            api_json_string_map(body, "metadata", api_json_metadata_key_ok, 64, 256, &metadata, err) < 0)
                return -1;
        cr->env = json_incref(env); /* borrowed from body: the request holds its own */
        cr->metadata = json_incref(metadata);
        cr->timeout_s = timeout_s;
        if (e2b_network_for_create(ctx, body, &cr->network, &cr->private_ports, err) < 0)
                return -1;
        snprintf(cr->on_timeout, sizeof(cr->on_timeout), "%s", auto_pause ? "pause" : "destroy");
        if (json_array_size(json_object_get(body, "volumeMounts")) > 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "volume mounts are not supported by space");
        template_for(ctx, template_id, space_template, space_template_size);
        if (!template_ref_ok(space_template))
                return space_error_set(err, SPACE_E_NOT_FOUND, "template %.64s not found", template_id);
        struct template_record t;
        cr->template_ref = space_template;
        if (strncmp(space_template, "snap-", 5) == 0) {
                snprintf(snapshot, snapshot_size, "%s", space_template);
        } else if (template_ref_resolve(ctx, space_template, &t) == 0) {
                template_record_release(&t);
                return 0;
        } else if (e2b_snapshot_by_name(ctx, caller, space_template, snapshot, snapshot_size) < 0) {
                return 0; /* not found: the create says so */
        }
        cr->snapshot_id = snapshot;
        cr->template_ref = NULL;
        return 0;
}

void e2b_sandbox_create(struct e2b_call *call, struct api_response *resp)
{
        struct spaced_context *ctx = call->req.ctx;
        struct space_error err = { 0 };
        json_t *body = NULL;
        struct sandbox_create_request cr;
        struct sandbox sb = { 0 };
        struct operation op;
        char space_template[160], snapshot[32] = "";
        if (e2b_body_object(call, &body, resp) < 0)
                return;
        sandbox_create_request_init(ctx, &cr);
        cr.caller = &call->req.principal;
        if (parse_create(ctx, &call->req.principal, body, &cr, space_template, sizeof(space_template), snapshot, sizeof(snapshot),
                         &err) < 0 ||
            sandbox_create_request_submit(ctx, &cr, &sb, &op, &err) < 0 || e2b_wait_operation(ctx, &op, &err) < 0)
                e2b_reply_space_error(resp, &err);
        else {
                api_response_json(resp, 201, e2b_render_created(call, &sb));
                snprintf(resp->created, sizeof(resp->created), "%s", sb.id);
        }
        sandbox_create_request_release(&cr);
        sandbox_release(&sb);
        json_decref(body);
}

void e2b_sandbox_get(struct e2b_call *call, struct api_response *resp)
{
        struct sandbox sb;
        if (load(call, &sb, resp) < 0)
                return;
        api_response_json(resp, 200, render_info(call, &sb));
        sandbox_release(&sb);
}

/* A query value split as the SDK encodes metadata: "k=v&k2=v2", each part percent-encoded
 * (after the query string's own decoding). */
static void unescape(char *s)
{
        for (char *p = s; *p; p++)
                if (*p == '+')
                        *p = ' ';
        MHD_http_unescape(s);
}

static bool metadata_matches(const char *filter, const json_t *metadata)
{
        if (!filter || !*filter)
                return true;
        char *copy = strdup(filter);
        bool ok = copy != NULL;
        for (char *save = NULL, *pair = copy ? strtok_r(copy, "&", &save) : NULL; ok && pair; pair = strtok_r(NULL, "&", &save)) {
                char *eq = strchr(pair, '=');
                const char *value = "";
                if (eq) {
                        *eq = '\0';
                        value = eq + 1;
                }
                unescape(pair);
                unescape((char *)value);
                const char *have = json_string_value(json_object_get(metadata, pair));
                ok = have && strcmp(have, value) == 0;
        }
        free(copy);
        return ok;
}

/* ?state=running,paused */
static bool state_matches(const char *filter, enum sandbox_state s)
{
        if (!filter || !*filter)
                return true;
        const char *want = e2b_state(s);
        size_t n = strlen(want);
        for (const char *p = filter; *p;) {
                const char *end = strchr(p, ',');
                size_t len = end ? (size_t)(end - p) : strlen(p);
                if (len == n && strncmp(p, want, n) == 0)
                        return true;
                p += len + (end ? 1 : 0);
        }
        return false;
}

static int by_created(const void *a, const void *b)
{
        const struct sandbox *x = a, *y = b;
        if (x->created_at_ms != y->created_at_ms)
                return x->created_at_ms < y->created_at_ms ? -1 : 1;
        return strcmp(x->id, y->id);
}

static int by_created_desc(const void *a, const void *b)
{
        return by_created(b, a);
}

/* Page tokens are "<created ms>_<sandbox id>" of the last sandbox of the previous page;
 * the next page has what sorts after it (in the list's order). */
static bool after_token(const struct sandbox *sb, long long token_ms, const char *token_id, bool desc)
{
        int c = sb->created_at_ms != token_ms ? (sb->created_at_ms > token_ms ? 1 : -1) : strcmp(sb->id, token_id);
        return desc ? c < 0 : c > 0;
}

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
        y -= m <= 2;
        int64_t era = (y >= 0 ? y : y - 399) / 400;
        unsigned yoe = (unsigned)(y - era * 400);
        unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + (int64_t)doe - 719468;
}

/* An RFC 3339 time (2026-12-01T08:00:00.123Z, or with an offset) as unix ms; -1 if malformed. */
static int64_t parse_time(const char *s)
{
        int y, mo, d, h, mi, sec, n = 0;
        if (sscanf(s, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n == 0 || mo < 1 || mo > 12 ||
            d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
                return -1;
        const char *p = s + n;
        int64_t ms = 0;
        if (*p == '.') {
                int64_t scale = 100;
                for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
                        ms += (*p - '0') * scale;
        }
        int64_t offset_s = 0;
        if (*p == '+' || *p == '-') {
                int oh, om, m = 0;
                if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &m) != 2 || p[1 + m] != '\0')
                        return -1;
                offset_s = (*p == '+' ? 1 : -1) * (oh * 3600 + om * 60);
        } else if (!((*p == 'Z' || *p == 'z') && p[1] == '\0')) {
                return -1;
        }
        int64_t t = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + sec - offset_s;
        return t * 1000 + ms;
}

/* ?template= names a template by its E2B id or by the space template's name. */
static bool template_matches(struct e2b_call *call, const char *filter, const struct sandbox *sb)
{
        if (!filter || !*filter || strcmp(filter, sb->template_name) == 0)
                return true;
        char tmpl[64];
        e2b_template_of(call->req.ctx, sb->template_name, tmpl, sizeof(tmpl));
        return strcmp(filter, tmpl) == 0;
}

static void list(struct e2b_call *call, struct api_response *resp, bool paged)
{
        struct spaced_context *ctx = call->req.ctx;
        struct space_error err = { 0 };
        const char *metadata = api_request_query(&call->req, "metadata");
        const char *state = api_request_query(&call->req, "state");
        const char *token = api_request_query(&call->req, "nextToken");
        const char *template = api_request_query(&call->req, "template");
        const char *started_after = api_request_query(&call->req, "startedAfter");
        const char *order = api_request_query(&call->req, "order");
        long long limit = LIST_LIMIT_DEFAULT, token_ms = -1;
        int64_t after_ms = -1;
        char token_id[32] = "";
        if (api_request_query_int(&call->req, "limit", 1, LIST_LIMIT_MAX, &limit, &err) < 0)
                return e2b_reply_space_error(resp, &err);
        /* E2B lists newest first unless asked otherwise. */
        bool desc = !order || !*order || strcmp(order, "desc") == 0;
        if (!desc && strcmp(order, "asc") != 0)
                return e2b_reply_error(resp, 400, "order must be asc or desc");
        if (started_after && *started_after && (after_ms = parse_time(started_after)) < 0)
                return e2b_reply_error(resp, 400, "startedAfter must be an RFC 3339 time, e.g. 2026-01-02T15:04:05Z");
        if (token && *token) {
                char *end;
                token_ms = strtoll(token, &end, 10);
                if (*end != '_' || strlen(end + 1) >= sizeof(token_id))
                        return e2b_reply_error(resp, 400, "nextToken is not one this server gave");
                snprintf(token_id, sizeof(token_id), "%s", end + 1);
        }
        if (!paged && !state)
                state = "running";
        struct sandbox *all = NULL;
        size_t n = 0;
        if (sandbox_service_list(ctx, &call->req.principal, NULL, -1, NULL, &all, &n, &err) < 0)
                return e2b_reply_error(resp, 500, "%s", err.message);
        if (n > 1)
                qsort(all, n, sizeof(*all), desc ? by_created_desc : by_created);
        json_t *arr = json_array();
        const struct sandbox *last = NULL;
        bool more = false;
        for (size_t i = 0; i < n; i++) {
                const struct sandbox *sb = &all[i];
                if (!listed(sb->state) || !state_matches(state, sb->state) || !metadata_matches(metadata, sb->metadata) ||
                    !template_matches(call, template, sb) || (after_ms >= 0 && sb->created_at_ms < after_ms) ||
                    (token_ms >= 0 && !after_token(sb, token_ms, token_id, desc)))
                        continue;
                if (paged && (long long)json_array_size(arr) == limit) {
                        more = true;
                        break;
                }
                json_array_append_new(arr, render_listed(call, sb));
                last = sb;
        }
        if (more && last) {
                char next[64];
                snprintf(next, sizeof(next), "%" PRId64 "_%s", last->created_at_ms, last->id);
                resp->headers = json_pack("{s:s}", "X-Next-Token", next);
        }
        sandbox_array_free(all, n);
        api_response_json(resp, 200, arr);
}

void e2b_sandbox_list(struct e2b_call *call, struct api_response *resp)
{
        list(call, resp, true);
}

void e2b_sandbox_list_v1(struct e2b_call *call, struct api_response *resp)
{
        list(call, resp, false);
}

void e2b_sandbox_kill(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct sandbox sb;
        if (load(call, &sb, resp) < 0)
                return;
        sandbox_release(&sb);
        if (submit_and_wait(call->req.ctx, call->sandbox_id, SANDBOX_ACTION_DESTROY, &err) < 0)
                return e2b_reply_space_error(resp, &err);
        e2b_reply_empty(resp);
}

int e2b_set_timeout(struct e2b_call *call, const char *id, long long timeout_s, bool only_extend, struct space_error *err)
{
        struct sandbox_change c = { .timeout_s = timeout_s, .only_extend = only_extend };
        return sandbox_service_change(call->req.ctx, &call->req.principal, id, &c, NULL, err);
}

void e2b_sandbox_timeout(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        json_t *body = NULL;
        long long timeout_s = -1;
        struct sandbox sb;
        if (e2b_body_object(call, &body, resp) < 0)
                return;
        int r = e2b_timeout_field(body, &timeout_s, &err);
        json_decref(body);
        if (r < 0)
                return e2b_reply_space_error(resp, &err);
        if (timeout_s < 0)
                return e2b_reply_error(resp, 400, "give timeout (seconds)");
        if (load(call, &sb, resp) < 0)
                return;
        bool running = sb.state == SANDBOX_RUNNING;
        sandbox_release(&sb);
        /* E2B's 0 ends the sandbox now (space's timeout_s 0 would be "never"). */
        if (timeout_s == 0 && running) {
                if (sandbox_service_expire_now(call->req.ctx, &call->req.principal, call->sandbox_id, &err) < 0)
                        return e2b_reply_space_error(resp, &err);
                return e2b_reply_empty(resp);
        }
        if (e2b_set_timeout(call, call->sandbox_id, timeout_s, false, &err) < 0)
                return err.code == SPACE_E_INTERNAL ? e2b_reply_error(resp, 500, "store timeout: %s", err.message)
                                                    : e2b_reply_space_error(resp, &err);
        e2b_reply_empty(resp);
}

void e2b_sandbox_pause(struct e2b_call *call, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct sandbox sb;
        if (load(call, &sb, resp) < 0)
                return;
        enum sandbox_state state = sb.state;
        /* E2B's pause keeps memory and files on disk: a hibernation where the sandbox's
         * runtime has memory state (gvisor), else a freeze in place (namespaces). */
        bool to_disk = sandbox_memory_can_hibernate(call->req.ctx, &sb);
        sandbox_release(&sb);
        if (state == SANDBOX_PAUSED || state == SANDBOX_STOPPED)
                return e2b_reply_error(resp, 409, "sandbox %s is already paused", call->sandbox_id);
        struct operation op;
        if ((to_disk ? sandbox_memory_submit_hibernate(call->req.ctx, call->sandbox_id, &op, &err)
                     : sandbox_lifecycle_submit(call->req.ctx, call->sandbox_id, SANDBOX_ACTION_PAUSE, &op, &err)) < 0 ||
            e2b_wait_operation(call->req.ctx, &op, &err) < 0)
                return e2b_reply_space_error(resp, &err);
        /* An E2B paused sandbox waits for its connect: it does not time out meanwhile. */
        if (sandbox_service_clear_expiry(call->req.ctx, &call->req.principal, call->sandbox_id, &err) < 0)
                return e2b_reply_error(resp, 500, "sandbox %s is paused, but its timeout could not be cleared: %s",
                                       call->sandbox_id, err.message);
        e2b_reply_empty(resp);
}

static void resume_or_connect(struct e2b_call *call, struct api_response *resp, bool is_connect)
{
        struct spaced_context *ctx = call->req.ctx;
        struct space_error err = { 0 };
        json_t *body = NULL;
        long long timeout_s = -1;
        struct sandbox sb;
        bool resumed = false;
        if (e2b_body_object(call, &body, resp) < 0)
                return;
        int r = e2b_timeout_field(body, &timeout_s, &err);
        json_decref(body);
        if (r < 0)
                return e2b_reply_space_error(resp, &err);
        if (load(call, &sb, resp) < 0)
                return;
        if (!is_connect && sb.state == SANDBOX_RUNNING) {
                sandbox_release(&sb);
                return e2b_reply_error(resp, 409, "sandbox %s is already running", call->sandbox_id);
        }
        if (sandbox_service_wake(ctx, &sb, &resumed, &err) < 0) {
                sandbox_release(&sb);
                return e2b_reply_space_error(resp, &err);
        }
        sandbox_release(&sb);
        if (timeout_s >= 0 && e2b_set_timeout(call, call->sandbox_id, timeout_s, is_connect, &err) < 0) {
                if (err.code == SPACE_E_NOT_FOUND)
                        return e2b_reply_error(resp, 404, "sandbox %s not found", call->sandbox_id);
                return e2b_reply_error(resp, 500, "store timeout: %s", err.message);
        }
        if (sandbox_access_load(ctx, &call->req.principal, call->sandbox_id, &sb, &err) < 0)
                return e2b_reply_error(resp, 404, "sandbox %s not found", call->sandbox_id);
        api_response_json(resp, resumed ? 201 : 200, e2b_render_created(call, &sb));
        sandbox_release(&sb);
}

void e2b_sandbox_connect(struct e2b_call *call, struct api_response *resp)
{
        resume_or_connect(call, resp, true);
}

void e2b_sandbox_resume(struct e2b_call *call, struct api_response *resp)
{
        resume_or_connect(call, resp, false);
}
