/* GET /v1/audit: the audit log (request_trail.h writes it), oldest first, filtered and
 * paged with the list routes' cursor (api_cursor.h). */
#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_cursor.h"
#include "api/api_json.h"
#include "api/api_render.h"
#include "api/api_routes.h"
#include "service/audit_service.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

static const char *const known_params[] = { "project", "key_id", "action", "target", "since", "until", "limit", "cursor" };

struct unknown_param {
        char name[72];
        bool found;
};

static enum MHD_Result find_unknown(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
        struct unknown_param *u = cls;
        for (size_t i = 0; i < sizeof(known_params) / sizeof(known_params[0]); i++)
                if (strcmp(key, known_params[i]) == 0)
                        return MHD_YES;
        snprintf(u->name, sizeof(u->name), "%s", key);
        u->found = true;
        return MHD_NO;
}

/* An id-like filter: absent, or a name as paths hold them. */
static int name_param(const struct api_request *req, const char *name, const char **ret, struct space_error *err)
{
        const char *v = api_request_query(req, name);
        if (v && !api_json_name_ok(v))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s must be an id ([A-Za-z0-9._-], 1-63 characters)", name);
        *ret = v;
        return 0;
}

static int time_param(const struct api_request *req, const char *name, int64_t *ret, struct space_error *err)
{
        const char *v = api_request_query(req, name);
        if (v && wallclock_parse(v, ret) < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s must be an RFC 3339 time such as 2026-12-01T00:00:00Z",
                                       name);
        return 0;
}

static int parse_filter(const struct api_request *req, struct audit_filter *f, struct space_error *err)
{
        struct unknown_param u = { 0 };
        MHD_get_connection_values(req->conn, MHD_GET_ARGUMENT_KIND, find_unknown, &u);
        if (u.found)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "unknown query parameter %s (GET /v1/audit takes %s)",
                                       u.name, "project, key_id, action, target, since, until, limit, cursor");
        if (name_param(req, "project", &f->project, err) < 0 || name_param(req, "key_id", &f->key_id, err) < 0 ||
            name_param(req, "action", &f->action, err) < 0 || name_param(req, "target", &f->target, err) < 0 ||
            time_param(req, "since", &f->since_ms, err) < 0 || time_param(req, "until", &f->until_ms, err) < 0)
                return -1;
        if (f->since_ms && f->until_ms && f->until_ms <= f->since_ms)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "until must be later than since");
        return 0;
}

static json_t *text_or_null(const char *s)
{
        return s[0] ? json_string(s) : json_null();
}

static json_t *render_row(const struct audit_record *a)
{
        json_t *detail = a->detail[0] ? json_loads(a->detail, 0, NULL) : NULL;
        json_t *j = json_pack("{s:s, s:o, s:s, s:o, s:o, s:o, s:s, s:o, s:s, s:i, s:o, s:o}", "id", a->id, "time",
                              api_render_time(a->created_at_ms), "request_id", a->request_id, "key_id", text_or_null(a->key_id),
                              "project", text_or_null(a->project), "role", text_or_null(a->role), "action", a->action, "target",
                              text_or_null(a->target), "method", a->method, "status", a->status, "error_code",
                              text_or_null(a->error_code), "source", text_or_null(a->source));
        if (detail && !json_is_object(detail)) {
                json_decref(detail);
                detail = NULL;
        }
        if (j)
                json_object_set_new(j, "detail", detail ? detail : json_null());
        else
                json_decref(detail);
        return j;
}

void route_audit_list(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct audit_filter f = { 0 };
        struct api_page page;
        struct audit_record *rows = NULL;
        size_t n = 0;
        /* The route needs key.read (admin and owner keys; the router refuses the rest with
         * 403); which project's rows the caller reads is audit_service_list's to say. */
        if (parse_filter(req, &f, &err) < 0 || api_cursor_parse(req, "audit", &page, &err) < 0 ||
            audit_service_list(req->ctx, &req->principal, &f, &page.store, &rows, &n, &err) < 0)
                return api_response_error(resp, &err);
        size_t shown = api_page_rows(&page, n);
        json_t *arr = json_array();
        for (size_t i = 0; i < shown; i++)
                json_array_append_new(arr, render_row(&rows[i]));
        json_t *next =
                shown ? api_cursor_next(&page, "audit", n, rows[shown - 1].created_at_ms, rows[shown - 1].id) : json_null();
        free(rows);
        api_response_json(resp, 200, json_pack("{s:o, s:o}", "audit", arr, "next_cursor", next));
}
