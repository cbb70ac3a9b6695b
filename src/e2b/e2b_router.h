/* e2b_router: dispatch of an E2B request. One port serves both halves of E2B:
 *  - the control API (/sandboxes…, /v2/sandboxes…), authenticated by X-API-KEY;
 *  - envd, the in-sandbox daemon (/health, /files, /<package>.<Service>/<Method>), whose
 *    sandbox is named by the E2b-Sandbox-Id header or, for SDKs that do not send it, by
 *    the envd access token (X-Access-Token), which is also what authenticates it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "api/api_request.h"
#include "e2b/e2b_keys.h"

struct spaced_context;
struct MHD_Connection;
struct e2b_metrics;
struct e2b_watchers;

struct e2b_front {
        struct spaced_context *ctx;
        struct e2b_metrics *metrics;
        struct e2b_watchers *watchers; /* the polled ones (e2b_watchers.h) */
        unsigned char token_secret[E2B_TOKEN_SECRET_SIZE];
};

struct e2b_upload;
struct request_trail;

/* Each of these fills the request's trail (request_trail.h) with its route's action and
 * target and, once authenticated, its caller. */
/* Whether the request's body is streamed into an upload rather than read whole (POST /files). */
bool e2b_router_streams_body(const char *method, const char *url);
/* For such a request, before its body: routes and authenticates it and starts the upload.
 * 0 with *ret; -1 with resp filled (to answer once the body has been discarded). */
int e2b_router_upload_begin(struct e2b_front *front, struct MHD_Connection *conn, const char *method, const char *url,
                            struct request_trail *trail, struct e2b_upload **ret, struct api_response *resp);
/* Whether the request (its headers) names a route and passes that route's authentication
 * (an API key, an envd access token or a signed URL; /health needs none and does not
 * count). Answers nothing: e2b_router_handle does, once the body is in. */
bool e2b_router_authenticates(struct e2b_front *front, struct MHD_Connection *conn, const char *method, const char *url,
                              struct request_trail *trail);
void e2b_router_handle(struct e2b_front *front, struct MHD_Connection *conn, const char *method, const char *url,
                       const char *body, size_t body_len, struct request_trail *trail, struct api_response *resp);
