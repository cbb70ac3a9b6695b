/* api_request / api_response: what a route handler sees and returns, independent of the
 * HTTP library. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "auth/principal.h"
#include "service/console_session.h"
#include "service/object_access.h"
#include "spaced/space_error.h"

struct spaced_context;
struct MHD_Connection;

/* What a route takes as its body (set by the router, checked before the handler runs). */
enum api_body_rule {
        API_BODY_ANY,       /* the handler reads it */
        API_BODY_NONE,      /* no body at all: one byte is refused */
        API_BODY_NO_FIELDS, /* empty, or a JSON object without members */
};

/* The segments of a path kept apart (a route's pattern names at most 8; a "**" tail takes
 * any number). */
#define API_REQUEST_SEGMENTS 16

struct api_request {
        struct spaced_context *ctx;
        struct MHD_Connection *conn;
        const char *method;
        const char *path;
        char *segments[API_REQUEST_SEGMENTS]; /* path split on '/', percent-decoded */
        int nsegments;
        bool more_segments; /* the path has more than API_REQUEST_SEGMENTS: only a "**" route takes it */
        const char *body;
        size_t body_len;
        const char *content_type;   /* of the body, or NULL */
        struct principal principal; /* the authenticated key (control routes) */
        char session_id[32];        /* the attach session (data-plane routes) */
        /* passed on by another node of the fleet (api/node_forward.h): the caller was checked
         * there, and the request is served here, never passed on again */
        bool via_node;
        /* the console session the caller came with (id "": a key or none; docs/console.md) */
        struct console_session console;
        enum api_body_rule body_rule;
        /* set by the router, checked once the caller is known: what the route needs and the
         * object its path names (in its first wildcard segment) */
        uint32_t permission;
        enum object_kind object;
        int object_segment;
        const char *request_id;           /* X-Request-Id: the client's when well-formed, else made */
        const char *action;               /* the route's name in the audit log (set by the router) */
        const char *target;               /* the id the path names, or NULL (set by the router) */
        const char *const *query_allowed; /* set by the router: the query parameters the route takes */
};

/* A body produced piece by piece (downloads): read returns bytes written to buf, 0 at the
 * end, -1 on failure (the connection is then cut so the client sees it incomplete). */
struct api_stream {
        ssize_t (*read)(void *cls, char *buf, size_t max);
        void (*free)(void *cls);
        void *cls;
        bool sized; /* exactly size bytes come (Content-Length); else as many as read gives */
        uint64_t size;
};

/* Instead of a body: the connection switches protocols (a 101 answer) and run gets its
 * socket, with the bytes the client sent past the request already (extra). run may block
 * (it has a thread of its own); the socket is closed after it returns. free: the answer was
 * never sent (or after run). */
struct api_upgrade {
        void (*run)(void *cls, int sock, const char *extra, size_t extra_len);
        void (*free)(void *cls);
        void *cls;
};

struct api_response {
        unsigned status;
        json_t *body;               /* owned; NULL for an empty body */
        struct api_stream stream;   /* instead of body when stream.read is set */
        struct api_upgrade upgrade; /* instead of either when upgrade.run is set (status 101) */
        const char *content_type;   /* for streams */
        json_t *headers;            /* owned; extra headers, object of strings (an array: the header once per string) */
        char created[72];           /* the id of what a create made: the audit row's target when the path names none */
        char error_code[32];        /* a stream that only carries an error (Connect: HTTP 200): its code, for the audit row */
};

/* A request body consumed as it arrives instead of buffered (uploads of any size). */
struct api_upload_sink {
        int (*begin)(struct api_request *req, void **ret_state, struct space_error *err);
        /* Returns 0 or -1; after -1 the rest of the body is discarded and finish reports it. */
        int (*write)(void *state, const char *data, size_t len);
        /* Answers the request and frees the state. */
        void (*finish)(void *state, struct api_request *req, struct api_response *resp);
        /* The client went away before the end: undo and free. */
        void (*abort)(void *state);
};

/* Every query parameter is one the route takes (req->query_allowed; a name there ending in
 * "." admits a family: "metadata." takes metadata.<key>), has a value (?wait is refused:
 * write wait=true) with no NUL byte in it (wait=%00). -1 with err (400) otherwise. */
int api_request_check_query(const struct api_request *req, struct space_error *err);
/* The body is what req->body_rule allows. -1 with err (400, 415) otherwise. */
int api_request_check_body(const struct api_request *req, struct space_error *err);
/* At the headers, before anything the path names is looked up: a route that takes no body
 * refuses one that is announced (Content-Length above 0, or Transfer-Encoding), so that
 * the answer is that 400 whatever the object (api_request_check_body checks the bytes). */
int api_request_check_announced_body(const struct api_request *req, struct space_error *err);
/* Query parameter or NULL. */
const char *api_request_query(const struct api_request *req, const char *name);
/* ?name=true|false|1|0 (nothing else, an empty value neither); *ret unchanged when
 * absent. -1 with err when malformed. */
int api_request_query_bool(const struct api_request *req, const char *name, bool *ret, struct space_error *err);
int api_request_query_int(const struct api_request *req, const char *name, long long min, long long max, long long *ret,
                          struct space_error *err);
/* Parses the body as a JSON object (an empty body gives an empty object); a body sent
 * without Content-Type: application/json is unsupported_media_type. */
int api_request_json(const struct api_request *req, json_t **ret, struct space_error *err);

/* Fills resp from err: the one place where error codes become HTTP statuses. */
void api_response_error(struct api_response *resp, const struct space_error *err);
unsigned api_error_http_status(enum space_error_code code);
void api_response_json(struct api_response *resp, unsigned status, json_t *body);
