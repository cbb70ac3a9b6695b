/* api_auth: API keys. A key is "space_" + 40 hex digits; only its SHA-256 is stored
 * (auth/secret_hash.h). Authentication gives a struct principal (auth/principal.h). */
#pragma once

#include <stddef.h>

#include "auth/principal.h"
#include "service/object_access.h"
#include "spaced/space_error.h"

struct spaced_context;
struct api_key;
struct api_request;

/* Who may call a route: anyone, a control-plane API key, or a data-plane attach token of
 * the sandbox named in segment 2 (and nothing else: a control key is refused there). */
enum api_auth_kind { API_AUTH_NONE, API_AUTH_CONTROL, API_AUTH_DATA };

/* The web console's session cookie and the header its CSRF token comes back in
 * (docs/console.md): control routes take the cookie where no Authorization header is. */
#define API_CONSOLE_COOKIE "space_console"
#define API_CONSOLE_CSRF_HEADER "X-Space-CSRF"

/* Makes a new admin key of the default project: fills *ret_key (id, name, hash) and
 * ret_secret (47 bytes). Stores it. */
int api_auth_create_key(struct spaced_context *ctx, const char *name, struct api_key *ret_key, char *ret_secret,
                        size_t secret_size, struct space_error *err);
/* On first start: creates the admin key and writes it to <state>/admin.key (0600). */
int api_auth_bootstrap(struct spaced_context *ctx, struct space_error *err);
/* Checks an "Authorization: Bearer …" header value: unauthorized when it names no key or
 * an expired one. Fills *ret (key, project, role, effective permissions, expiry). */
int api_auth_check(struct spaced_context *ctx, const char *header, struct principal *ret, struct space_error *err);
/* Authenticates req for a route of the given kind from its Authorization header (a control
 * route without one: the console's cookie, and for a request that is not GET/HEAD its CSRF
 * header); fills
 * req->principal (control) or req->session_id (data). Then, for a control key, checks what
 * the router put in req: forbidden without req->permission, not_found when the object in
 * the path is unknown or another project's. -1 with err (401/403/404) when refused. */
int api_auth_request(struct api_request *req, enum api_auth_kind kind, struct space_error *err);
/* The check of api_auth_request after authentication: permission, then ownership. */
int api_auth_authorize(struct spaced_context *ctx, const struct principal *p, uint32_t permission, enum object_kind kind,
                       const char *object_id, struct space_error *err);
