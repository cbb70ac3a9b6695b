/* e2b_router: dispatch of an E2B request. One port serves both halves of E2B:
 *  - the control API (/sandboxes…, /v2/sandboxes…), authenticated by X-API-KEY;
 *  - envd, the in-sandbox daemon (/health, /files, /<package>.<Service>/<Method>), whose
 *    sandbox is named by the E2b-Sandbox-Id header or, for SDKs that do not send it, by
 *    the envd access token (X-Access-Token), which is also what authenticates it. */
#pragma once

#include <stddef.h>

#include "api/api_request.h"
#include "e2b/e2b_keys.h"

struct spaced_context;
struct MHD_Connection;
struct e2b_metrics;

struct e2b_front {
        struct spaced_context *ctx;
        struct e2b_metrics *metrics;
        unsigned char token_secret[E2B_TOKEN_SECRET_SIZE];
};

void e2b_router_handle(struct e2b_front *front, struct MHD_Connection *conn, const char *method, const char *url,
                       const char *body, size_t body_len, struct api_response *resp);
