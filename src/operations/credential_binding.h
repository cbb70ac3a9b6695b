/* credential_binding: what a binding says (docs/network.md, "Platform-held credentials") and
 * what the gateway is handed for it. A binding's spec, as a client writes it:
 *   {"secret": NAME, "destination": "api.example.com" | "*.example.com", "port": 1..65535?,
 *    "header": "Authorization"?, "format": "bearer" | "basic" | "custom",
 *    "template": "token {secret}" (custom only), "methods": ["GET", …]?, "sandbox_id"?,
 *    "grant_only": true? (it acts only through grants, service/grant_service.h)}
 * The gateway's form of one binding of a running sandbox (in its policy's "credentials"):
 *   {"binding": ID, "secret": NAME, "match": "NAME[:PORT]" (egress_rule.h), "header": H,
 *    "value": the header's whole value, "methods": [..]?, "expires_at_ms"? (a grant's deadline)}
 * The only place plaintext leaves spaced is that line on the gateway's control socket. */
#pragma once

#include <jansson.h>

#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* Validates a client's body into the spec the store keeps (a new reference: destination,
 * port, header, format, template, methods; secret and sandbox_id are the record's own
 * columns), or NULL and invalid_request naming the field. */
json_t *credential_binding_spec_new(const json_t *body, struct space_error *err);
/* The header value for secret value v under spec (bearer: "Bearer v"; basic: "Basic
 * base64(v)", v being "user:password"; custom: the template with {secret} replaced).
 * malloc'd (erase_and_free it), or NULL. */
char *credential_binding_header_value(const json_t *spec, const char *v);
/* The gateway's credentials of sb (a new reference: an array, empty when it has none).
 * Bindings whose secret is gone or does not open are left out, logged. NULL when the
 * bindings cannot be read. */
json_t *credential_binding_gateway_new(struct spaced_context *ctx, const struct sandbox *sb);
/* The environment names the sandbox sees, SPACE_SECRET_<NAME> = "space-placeholder-<name>",
 * for the bindings of its project (sandbox_id "": at create) or of itself: added to env (an
 * object) where env does not set them already. */
void credential_binding_placeholders(struct spaced_context *ctx, const char *project_id, const char *sandbox_id, json_t *env);
