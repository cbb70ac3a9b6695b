/* node_forward: the data plane of a sandbox that lives on another node of the fleet
 * (docs/fleet.md "The data plane through any spaced"). A v1 data-plane request (exec,
 * commands and their event streams, files, watch, ports) that reaches a spaced which does
 * not own the sandbox is checked here as usual (who may call, and see the sandbox), then
 * passed on to the sandbox's node by the port proxy's stream loop (port_proxy.h): its head
 * as it came less the caller's credentials, with this node's credential
 * (auth/node_credential.h) and the principal it authenticated; its body and the answer
 * piece by piece. The owning node trusts the credential and serves the request as if the
 * caller had come to it. Nothing is looked up for a single spaced (no --database), for a
 * request that came from another node, or for a control route. */
#pragma once

#include <stdbool.h>

#include "api/api_request.h"

/* The routes passed on: those of one sandbox's data plane. */
bool node_forward_route(const struct api_request *req);
/* For an authenticated request: 0 when it is served here; 1 when the sandbox is another
 * live node's, and the request's head went there (*ret_state for node_forward_sink); -1 with
 * err (node_unavailable: that node is lost, or this spaced has no --fleet-secret). */
int node_forward_open(struct api_request *req, void **ret_state, struct space_error *err);
/* Streams the body on and answers what the node answered. Its begin is node_forward_open's
 * forwarding half, for a state it opened. */
extern const struct api_upload_sink node_forward_sink;
/* A request carrying X-Space-Node-Auth: the node's credential checked (401 when it is
 * wrong, stale, on a route that is not passed on, or this spaced has no --fleet-secret),
 * then req's principal is the one the sending node authenticated. */
int node_forward_authenticate(struct api_request *req, const char *credential, struct space_error *err);
