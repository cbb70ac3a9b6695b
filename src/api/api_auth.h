/* api_auth: API keys. A key is "space_" + 40 hex digits; only its SHA-256 is stored. */
#pragma once

#include <stddef.h>

#include "spaced/space_error.h"

struct spaced_context;
struct api_key;
struct api_request;

/* Who may call a route: anyone, a control-plane API key, or a data-plane attach token of
 * the sandbox named in segment 2 (and nothing else: a control key is refused there). */
enum api_auth_kind { API_AUTH_NONE, API_AUTH_CONTROL, API_AUTH_DATA };

/* Hex SHA-256 of a secret; buf needs 65 bytes. */
int api_auth_hash(const char *secret, char *buf, size_t size);
/* Makes a new key: fills *ret_key (id, name, hash) and ret_secret (47 bytes). Stores it. */
int api_auth_create_key(struct spaced_context *ctx, const char *name, struct api_key *ret_key, char *ret_secret,
                        size_t secret_size, struct space_error *err);
/* On first start: creates the admin key and writes it to <state>/admin.key (0600). */
int api_auth_bootstrap(struct spaced_context *ctx, struct space_error *err);
/* Checks an "Authorization: Bearer …" header value; fills ret_key_id. */
int api_auth_check(struct spaced_context *ctx, const char *header, char *ret_key_id, size_t id_size, struct space_error *err);
/* Authenticates req for a route of the given kind from its Authorization header; fills
 * req->key_id (control) or req->session_id (data). -1 with err (401/403) when refused. */
int api_auth_request(struct api_request *req, enum api_auth_kind kind, struct space_error *err);
