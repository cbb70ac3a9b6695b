/* api_json: strict readers for request bodies. Each returns 0 (value absent leaves *ret as
 * it was), or -1 with a 400 invalid_request error naming the field. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "spaced/space_error.h"

/* Rejects any member not in allowed (NULL-terminated). */
int api_json_only(const json_t *obj, const char *const allowed[], const char *where, struct space_error *err);
int api_json_string(const json_t *obj, const char *key, size_t max_len, const char **ret, struct space_error *err);
int api_json_int(const json_t *obj, const char *key, long long min, long long max, long long *ret, struct space_error *err);
int api_json_number(const json_t *obj, const char *key, double min, double max, double *ret, struct space_error *err);
int api_json_bool(const json_t *obj, const char *key, bool *ret, struct space_error *err);
/* An object whose values are strings; keys checked by key_ok. *ret borrowed. */
int api_json_string_map(const json_t *obj, const char *key, bool (*key_ok)(const char *), size_t max_entries,
                        size_t max_value_len, json_t **ret, struct space_error *err);
/* A non-empty array of strings; *ret borrowed. */
int api_json_string_array(const json_t *obj, const char *key, size_t max_entries, json_t **ret, struct space_error *err);

bool api_json_env_name_ok(const char *s);
bool api_json_metadata_key_ok(const char *s);
/* Ids and names in paths: [A-Za-z0-9._-]{1,63}, not starting with '.'. */
bool api_json_name_ok(const char *s);
