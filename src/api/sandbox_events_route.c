/* GET /v1/sandboxes/events: the sandboxes the caller sees, and then their changes, as
 * Server-Sent Events (docs/api.md, "Sandbox events").
 *
 * First one `event: sandbox` per sandbox listed (as GET /v1/sandboxes lists them: destroyed
 * ones are not), then `event: synced` ({"count"}); from then on `event: sandbox` for one
 * that appeared or changed (its state, head snapshot, or anything else that moves its
 * updated_at) and `event: removed` ({"id"}) for one no longer listed (destroyed, or gone).
 * spaced looks every 500 ms, through sandbox_service_list with the caller who opened the
 * stream, so it never shows what that caller may not list. The stream ends after
 * STREAM_MAX_S: a client reconnects (authenticated again: a revoked key gets 401) and
 * starts from a full list again, so there is no event id to resume from. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/api_json.h"
#include "api/api_routes.h"
#include "service/sandbox_service.h"
#include "spaced/spaced_context.h"

#define TICK_MS 500
#define STREAM_MAX_S 300
#define PAGE_ROWS 1000

/* What tells one version of a sandbox from the next. */
struct seen {
        char id[32];
        int64_t updated_at_ms;
        int state;
        char head[32];
};

struct sandbox_events {
        struct spaced_context *ctx;
        struct principal caller;
        char project[64]; /* "" : the caller's own (or all, for the platform) */
        struct seen *seen;
        size_t n_seen;
        bool synced;
        int ticks;
        int idle;
        int keepalive_ticks;
        char *out;
        size_t out_len, out_off;
};

static int out_add(struct sandbox_events *st, const char *text)
{
        size_t n = strlen(text);
        char *grown = realloc(st->out, st->out_len + n + 1);
        if (!grown)
                return -1;
        st->out = grown;
        memcpy(st->out + st->out_len, text, n + 1);
        st->out_len += n;
        return 0;
}

/* Steals data. */
static int add_event(struct sandbox_events *st, const char *event, json_t *data)
{
        char *text = data ? json_dumps(data, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        json_decref(data);
        char head[64];
        snprintf(head, sizeof(head), "event: %s\ndata: ", event);
        int r = text && out_add(st, head) == 0 && out_add(st, text) == 0 && out_add(st, "\n\n") == 0 ? 0 : -1;
        free(text);
        return r;
}

static int seen_cmp(const void *a, const void *b)
{
        return strcmp(((const struct seen *)a)->id, ((const struct seen *)b)->id);
}

/* Every sandbox the caller lists now, all pages, sorted by id into *ret (also the rows). */
static int list_now(struct sandbox_events *st, struct sandbox **ret_rows, size_t *ret_n)
{
        struct space_error err = { 0 };
        struct sandbox *all = NULL;
        size_t n = 0;
        char after_id[32] = "";
        int64_t after_ms = 0;
        for (;;) {
                struct store_page page = { .after_ms = after_ms, .after_id = after_id[0] ? after_id : NULL, .limit = PAGE_ROWS };
                struct sandbox *rows = NULL;
                size_t got = 0;
                if (sandbox_service_list(st->ctx, &st->caller, st->project[0] ? st->project : NULL, -1, &page, &rows, &got,
                                         &err) < 0) {
                        sandbox_array_free(all, n);
                        return -1;
                }
                struct sandbox *grown = got ? realloc(all, (n + got) * sizeof(*all)) : all;
                if (got && !grown) {
                        sandbox_array_free(rows, got);
                        sandbox_array_free(all, n);
                        return -1;
                }
                all = grown;
                memcpy(all + n, rows, got * sizeof(*rows));
                n += got;
                free(rows); /* the rows' members now belong to all */
                if (got < PAGE_ROWS)
                        break;
                after_ms = all[n - 1].created_at_ms;
                snprintf(after_id, sizeof(after_id), "%s", all[n - 1].id);
        }
        *ret_rows = all;
        *ret_n = n;
        return 0;
}

/* One look: events for what appeared, changed or went since the last one. */
static int look(struct sandbox_events *st)
{
        struct sandbox *rows = NULL;
        size_t n = 0;
        if (list_now(st, &rows, &n) < 0)
                return -1;
        struct seen *now = calloc(n ? n : 1, sizeof(*now));
        if (!now) {
                sandbox_array_free(rows, n);
                return -1;
        }
        for (size_t i = 0; i < n; i++) {
                snprintf(now[i].id, sizeof(now[i].id), "%s", rows[i].id);
                now[i].updated_at_ms = rows[i].updated_at_ms;
                now[i].state = (int)rows[i].state;
                snprintf(now[i].head, sizeof(now[i].head), "%s", rows[i].head_snapshot_id);
        }
        int r = 0;
        for (size_t i = 0; i < n && r == 0; i++) {
                const struct seen *was = bsearch(&now[i], st->seen, st->n_seen, sizeof(*st->seen), seen_cmp);
                if (!was || was->updated_at_ms != now[i].updated_at_ms || was->state != now[i].state ||
                    strcmp(was->head, now[i].head) != 0)
                        r = add_event(st, "sandbox", api_sandbox_json(st->ctx, &rows[i]));
        }
        qsort(now, n, sizeof(*now), seen_cmp);
        for (size_t i = 0; i < st->n_seen && r == 0; i++)
                if (!bsearch(&st->seen[i], now, n, sizeof(*now), seen_cmp))
                        r = add_event(st, "removed", json_pack("{s:s}", "id", st->seen[i].id));
        if (r == 0 && !st->synced) {
                r = add_event(st, "synced", json_pack("{s:I}", "count", (json_int_t)n));
                st->synced = true;
        }
        sandbox_array_free(rows, n);
        free(st->seen);
        st->seen = now;
        st->n_seen = n;
        return r;
}

static ssize_t events_read(void *cls, char *buf, size_t max)
{
        struct sandbox_events *st = cls;
        for (;;) {
                if (st->out_off < st->out_len) {
                        size_t n = st->out_len - st->out_off < max ? st->out_len - st->out_off : max;
                        memcpy(buf, st->out + st->out_off, n);
                        st->out_off += n;
                        if (st->out_off == st->out_len)
                                st->out_off = st->out_len = 0;
                        return (ssize_t)n;
                }
                if (atomic_load(&st->ctx->shutting_down) || st->ticks * TICK_MS >= STREAM_MAX_S * 1000)
                        return 0;
                size_t before = st->out_len;
                if (look(st) < 0)
                        return -1; /* the connection is cut: the client sees a stream cut short */
                if (st->out_len > before) {
                        st->idle = 0;
                        continue;
                }
                if (++st->idle >= st->keepalive_ticks) {
                        st->idle = 0;
                        if (out_add(st, ": keepalive\n\n") < 0)
                                return -1;
                        continue;
                }
                st->ticks++;
                nanosleep(&(struct timespec){ .tv_nsec = TICK_MS * 1000L * 1000L }, NULL);
        }
}

static void events_free(void *cls)
{
        struct sandbox_events *st = cls;
        free(st->seen);
        free(st->out);
        free(st);
}

void route_sandbox_events(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        const char *project = api_request_query(req, "project");
        long long keepalive_s = 15;
        if (api_request_query_int(req, "keepalive_s", 1, 300, &keepalive_s, &err) < 0)
                return api_response_error(resp, &err);
        if (project && (!api_json_name_ok(project) || strlen(project) >= 64)) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "project is not a valid id");
                return api_response_error(resp, &err);
        }
        /* The first look is made here, so a project the caller may not see is a 404 answer
         * rather than a stream that ends at once. */
        struct sandbox_events *st = calloc(1, sizeof(*st));
        if (!st) {
                space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                return api_response_error(resp, &err);
        }
        st->ctx = req->ctx;
        st->caller = req->principal;
        st->keepalive_ticks = (int)(keepalive_s * 1000 / TICK_MS);
        snprintf(st->project, sizeof(st->project), "%s", project ? project : "");
        struct store_page probe = { .limit = 1 };
        struct sandbox *rows = NULL;
        size_t n = 0;
        if (sandbox_service_list(req->ctx, &req->principal, project, -1, &probe, &rows, &n, &err) < 0) {
                events_free(st);
                return api_response_error(resp, &err);
        }
        sandbox_array_free(rows, n);
        resp->status = 200;
        resp->stream = (struct api_stream){ .read = events_read, .free = events_free, .cls = st };
        resp->content_type = "text/event-stream";
        resp->headers = json_pack("{s:s}", "Cache-Control", "no-store");
}
