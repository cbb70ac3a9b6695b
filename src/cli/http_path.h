/* http_path: builds the path-and-query part of an API URL, percent-encoding every segment and
 * query value that came from the user. Errors are sticky: check http_path_error() (or let
 * cli_request() do it) once at the end. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct http_path {
        char *buf;
        size_t len;
        size_t cap;
        bool has_query;
        int error; /* 0 or -errno from the first failed step */
};

/* Starts the path with a literal that needs no escaping, e.g. "/v1/sandboxes". */
void http_path_init(struct http_path *p, const char *literal);
/* Appends "/" and the escaped segment; an empty segment is -EINVAL. */
void http_path_segment(struct http_path *p, const char *segment);
/* Appends "?name=value" or "&name=value", both escaped. */
void http_path_query(struct http_path *p, const char *name, const char *value);
/* The path, or NULL if a step failed. */
const char *http_path_string(const struct http_path *p);
int http_path_error(const struct http_path *p);
void http_path_release(struct http_path *p);

#define _cleanup_http_path_ __attribute__((cleanup(http_path_release)))
