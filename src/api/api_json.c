#include "api/api_json.h"

#include <ctype.h>
#include <math.h>
#include <string.h>

int api_json_only(const json_t *obj, const char *const allowed[], const char *where, struct space_error *err)
{
        const char *key;
        json_t *v;
        json_object_foreach((json_t *)obj, key, v)
        {
                bool ok = false;
                for (const char *const *a = allowed; *a && !ok; a++)
                        ok = strcmp(*a, key) == 0;
                if (!ok)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "unknown field %s%s%s", where, where[0] ? "." : "",
                                               key);
        }
        return 0;
}

int api_json_string(const json_t *obj, const char *key, size_t max_len, const char **ret, struct space_error *err)
{
        json_t *v = json_object_get(obj, key);
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "field %s must be a string", key);
        if (json_string_length(v) > max_len || strlen(json_string_value(v)) != json_string_length(v))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "field %s must be at most %zu bytes without NUL", key,
                                       max_len);
        *ret = json_string_value(v);
        return 0;
}

int api_json_int(const json_t *obj, const char *key, long long min, long long max, long long *ret, struct space_error *err)
{
        json_t *v = json_object_get(obj, key);
        if (!v || json_is_null(v))
                return 0;
        double d = json_is_integer(v) ? (double)json_integer_value(v) : json_is_real(v) ? json_real_value(v) : NAN;
        if (isnan(d) || d != floor(d))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "field %s must be an integer", key);
        if (d < (double)min || d > (double)max)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "field %s must be between %lld and %lld", key, min, max);
        *ret = (long long)d;
        return 0;
}

int api_json_number(const json_t *obj, const char *key, double min, double max, double *ret, struct space_error *err)
{
        json_t *v = json_object_get(obj, key);
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_number(v))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "field %s must be a number", key);
        double d = json_number_value(v);
        if (!(d >= min && d <= max))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "field %s must be between %g and %g", key, min, max);
        *ret = d;
        return 0;
}

int api_json_bool(const json_t *obj, const char *key, bool *ret, struct space_error *err)
{
        json_t *v = json_object_get(obj, key);
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_boolean(v))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "field %s must be true or false", key);
        *ret = json_is_true(v);
        return 0;
}

int api_json_string_map(const json_t *obj, const char *key, bool (*key_ok)(const char *), size_t max_entries,
                        size_t max_value_len, json_t **ret, struct space_error *err)
{
        json_t *v = json_object_get(obj, key);
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_object(v))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "field %s must be an object of strings", key);
        if (json_object_size(v) > max_entries)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "field %s has more than %zu entries", key, max_entries);
        const char *k;
        json_t *val;
        json_object_foreach(v, k, val)
        {
                if (!key_ok(k))
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "field %s has an invalid key \"%.64s\"", key, k);
                if (!json_is_string(val) || json_string_length(val) > max_value_len ||
                    strlen(json_string_value(val)) != json_string_length(val))
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s.%s must be a string of at most %zu bytes", key,
                                               k, max_value_len);
        }
        *ret = v;
        return 0;
}

int api_json_string_array(const json_t *obj, const char *key, size_t max_entries, json_t **ret, struct space_error *err)
{
        json_t *v = json_object_get(obj, key);
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > max_entries)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "field %s must be a non-empty array of at most %zu strings",
                                       key, max_entries);
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e)
        {
                if (!json_is_string(e) || strlen(json_string_value(e)) != json_string_length(e))
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s[%zu] must be a string without NUL", key, i);
        }
        *ret = v;
        return 0;
}

bool api_json_env_name_ok(const char *s)
{
        if (!s || !(*s == '_' || isalpha((unsigned char)*s)) || strlen(s) > 255)
                return false;
        for (const char *p = s; *p; p++)
                if (!(*p == '_' || isalnum((unsigned char)*p)))
                        return false;
        return true;
}

bool api_json_metadata_key_ok(const char *s)
{
        size_t n = s ? strlen(s) : 0;
        if (n == 0 || n > 63)
                return false;
        for (const char *p = s; *p; p++)
                if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '.' || *p == '-'))
                        return false;
        return true;
}

bool api_json_name_ok(const char *s)
{
        return api_json_metadata_key_ok(s) && s[0] != '.';
}
