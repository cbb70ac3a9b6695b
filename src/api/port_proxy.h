/* port_proxy: an HTTP request passed on to a TCP port inside a sandbox and its answer passed
 * back, for both front doors (the v1 API's /v1/sandboxes/{id}/ports/{port}/…, the E2B
 * listener's <port>-<id>.<domain> hosts and its path form). The request's head goes on as it
 * came, less its hop-by-hop headers and the front door's own credentials, with X-Forwarded-*
 * set; its body goes on piece by piece as it arrives, the answer's body back the same way
 * (nothing is held whole). A request to switch protocols (Upgrade: websocket) that the
 * server takes (101) becomes a relay of bytes both ways until either side closes. What the
 * sandbox answers is hostile: its head is bounded
 * (upstream_response.h), every wait is bounded by --ingress-timeout, and the connection
 * counts against the sandbox's --ingress-connections. */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/api_request.h"
#include "service/sandbox_ports.h"

struct MHD_Connection;
struct port_proxy;

struct port_proxy_request {
        const char *method;
        const char *target; /* path and query as the sandbox's server gets them ("/…") */
        /* request headers that stay here (the front door's credentials), any case, NULL-ended */
        const char *const *drop_headers;
        /* the answer is served on an origin the sandbox does not own (a path form): it gets
         * Content-Security-Policy: sandbox and loses its Set-Cookie headers */
        bool shared_origin;
        const char *scheme; /* of the front door, for X-Forwarded-Proto */
        /* header lines ("Name: value\r\n" each) added to the request; NULL none */
        const char *extra_head;
        /* an upgraded connection (WebSocket) ends when this turns true (spaced stopping), or
         * after idle_ms without a byte either way */
        const atomic_bool *stop;
        int idle_ms;
        /* how the front door words an error of its own (api_response_error for v1) */
        void (*render_error)(struct api_response *resp, const struct space_error *err);
};

/* Takes upstream (closed on failure too) and sends the request's head. 0 with *ret, or -1
 * with err (bad_gateway when the sandbox's server went away). */
int port_proxy_begin(struct MHD_Connection *conn, struct sandbox_port_conn *upstream, const struct port_proxy_request *r,
                     struct port_proxy **ret, struct space_error *err);
/* A piece of the request body. 0, or -1: the rest is dropped and finish answers 502. */
int port_proxy_write(struct port_proxy *p, const char *data, size_t len);
/* Ends the request body, reads the answer's head and fills resp (its body a stream that owns
 * the proxy from here: resp's stream free ends it). Frees p when it gives an error. */
void port_proxy_finish(struct port_proxy *p, struct api_response *resp);
/* The client went away: closes and frees. Accepts NULL. */
void port_proxy_abort(struct port_proxy *p);

/* The three of them in an upload sink's shape (api_upload_sink: state is the proxy), shared
 * by every sink that streams a request through a proxy (port_routes.c, node_forward.c). */
int port_proxy_sink_write(void *state, const char *data, size_t len);
void port_proxy_sink_finish(void *state, struct api_request *req, struct api_response *resp);
void port_proxy_sink_abort(void *state);

/* The part of a raw request target (http_listener_raw_uri) after its first `segments`
 * segments, as the sandbox's server gets it: "/" and the query when nothing follows them.
 * -1 when raw is not a path or the tail does not fit in size. */
int port_proxy_target(const char *raw, int segments, char *buf, size_t size);
/* A "/ports/{port}" segment's port (1-65535, decimal, no sign or leading zero). -1 with err. */
int port_proxy_parse_port(const char *s, uint16_t *ret, struct space_error *err);
