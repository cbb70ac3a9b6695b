/* api_request / api_response: what a route handler sees and returns, independent of the
 * HTTP library. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "spaced/space_error.h"

struct spaced_context;
struct MHD_Connection;

struct api_request {
        struct spaced_context *ctx;
        struct MHD_Connection *conn;
        const char *method;
        const char *path;
        char *segments[8]; /* path split on '/', percent-decoded */
        int nsegments;
        const char *body;
        size_t body_len;
        char key_id[32]; /* the authenticated key */
};

struct api_response {
        unsigned status;
        json_t *body; /* owned; NULL for an empty body */
};

/* Query parameter or NULL. */
const char *api_request_query(const struct api_request *req, const char *name);
/* ?name=true|false|1|0; *ret unchanged when absent. -1 with err when malformed. */
int api_request_query_bool(const struct api_request *req, const char *name, bool *ret, struct space_error *err);
int api_request_query_int(const struct api_request *req, const char *name, long long min, long long max, long long *ret,
                          struct space_error *err);
/* Parses the body as a JSON object (an empty body gives an empty object). */
int api_request_json(const struct api_request *req, json_t **ret, struct space_error *err);

/* Fills resp from err: the one place where error codes become HTTP statuses. */
void api_response_error(struct api_response *resp, const struct space_error *err);
unsigned api_error_http_status(enum space_error_code code);
void api_response_json(struct api_response *resp, unsigned status, json_t *body);
