#include "api/key_request.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "api/api_json.h"

#define EXPIRY_MAX_S (10LL * 365 * 24 * 3600)

/* "YYYY-MM-DDTHH:MM:SSZ", optionally with milliseconds: the form api_render_time writes. */
static int parse_time(const char *s, int64_t *ret_ms)
{
        struct tm tm = { 0 };
        int ms = 0, n = 0;
        if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec,
                   &n) != 6 ||
            n != 19)
                return -1;
        const char *rest = s + n;
        if (rest[0] == '.') {
                int m = 0;
                if (sscanf(rest, ".%3d%n", &ms, &m) != 1 || m != 4)
                        return -1;
                rest += m;
        }
        if (strcmp(rest, "Z") != 0 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
            tm.tm_min > 59 || tm.tm_sec > 60)
                return -1;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        time_t t = timegm(&tm);
        if (t == (time_t)-1)
                return -1;
        *ret_ms = (int64_t)t * 1000 + ms;
        return 0;
}

int key_request_parse(const json_t *body, int64_t now_ms, struct key_spec *ret, struct space_error *err)
{
        static const char *const fields[] = { "name", "project", "role", "permissions", "expires_at", "expires_in_s", NULL };
        struct key_spec spec = { 0 };
        const char *role = NULL, *expires_at = NULL;
        long long in_s = 0;
        json_t *perms = NULL;
        if (api_json_only(body, fields, "", err) < 0 || api_json_string(body, "name", 63, &spec.name, err) < 0 ||
            api_json_string(body, "project", 31, &spec.project_id, err) < 0 ||
            api_json_string(body, "role", 16, &role, err) < 0 || api_json_string(body, "expires_at", 40, &expires_at, err) < 0 ||
            api_json_int(body, "expires_in_s", 1, EXPIRY_MAX_S, &in_s, err) < 0)
                return -1;
        if (!spec.name || !api_json_metadata_key_ok(spec.name))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "name is required: 1-63 of [A-Za-z0-9._-]");
        if (role && principal_role_from_name(role, &spec.role) < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "role must be admin, owner, developer or viewer");
        if (json_object_get(body, "permissions") && !json_is_null(json_object_get(body, "permissions"))) {
                if (api_json_string_array(body, "permissions", 32, &perms, err) < 0)
                        return -1;
                size_t i;
                json_t *v;
                json_array_foreach(perms, i, v)
                {
                        uint32_t bit;
                        if (permission_from_name(json_string_value(v), &bit) < 0)
                                return space_error_set(err, SPACE_E_INVALID_REQUEST, "unknown permission \"%.40s\"",
                                                       json_string_value(v));
                        spec.permissions |= bit;
                }
        }
        if (expires_at && in_s)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "give expires_at or expires_in_s, not both");
        if (expires_at) {
                if (parse_time(expires_at, &spec.expires_at_ms) < 0)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST,
                                               "expires_at must be an RFC 3339 UTC time (2030-01-31T12:00:00Z)");
                if (spec.expires_at_ms <= now_ms || spec.expires_at_ms > now_ms + EXPIRY_MAX_S * 1000)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "expires_at must be in the next 10 years");
        }
        if (in_s)
                spec.expires_at_ms = now_ms + in_s * 1000;
        *ret = spec;
        return 0;
}
