/* sandbox_create_request: what a client asks for when it creates a sandbox, whichever front
 * door it came through. The v1 API (api/sandbox_routes.c) and the E2B control API
 * (e2b/e2b_sandboxes.c) each translate their body into this one struct and hand it to
 * sandbox_create_request_submit(), which validates it, checks that the caller may see the
 * template or snapshot it names (404 as for an unknown one otherwise), resolves the template reference
 * (keeping a pinned digest, which sandbox_lifecycle_create checks again as it stores the
 * row), and submits the sandbox.create operation. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;
struct principal;

struct sandbox_create_request {
        const struct principal *caller; /* borrowed: the sandbox is its project's; what it names must be visible to it */
        const char *template_ref;       /* name[:tag][@sha256:…]; borrowed; NULL with snapshot_id */
        const char *snapshot_id;        /* snap-…; borrowed; NULL for none */
        struct sandbox_resources resources;
        bool disk_given;     /* resources.disk_mb was asked for */
        json_t *env;         /* owned: object of strings, or NULL */
        json_t *metadata;    /* owned: object of strings, or NULL */
        json_t *rolling;     /* owned: rolling snapshot policy, or NULL for none */
        json_t *network;     /* owned: the body's network member as given, or NULL (sandbox_network_request.h) */
        json_t *idle;        /* owned: idle policy (operations/idle_policy.h), or NULL: the template's, else the server's */
        long long timeout_s; /* 0: none */
        char on_timeout[12]; /* pause | stop | destroy */
        const char *runtime; /* namespaces | gvisor; borrowed; NULL: the one the template is bound to */
        bool private_ports;  /* E2B's allowPublicTraffic false (struct sandbox) */
};

/* The defaults of the server (template busybox, 1 cpu, 512 MiB, 256 pids, the server's disk
 * size, no timeout, on_timeout stop). */
void sandbox_create_request_init(const struct spaced_context *ctx, struct sandbox_create_request *req);
void sandbox_create_request_release(struct sandbox_create_request *req);

/* Validates req and submits the create. On success *ret_sb is the stored row (the caller
 * releases it) and *ret_op its operation; on failure err says why and nothing is stored. */
int sandbox_create_request_submit(struct spaced_context *ctx, struct sandbox_create_request *req, struct sandbox *ret_sb,
                                  struct operation *ret_op, struct space_error *err);
