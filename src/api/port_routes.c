/* The v1 API's ingress: any method on /v1/sandboxes/{id}/ports/{port}/<path> goes to
 * 127.0.0.1:<port> inside the sandbox as <method> /<path>?<query> (port_proxy.h). The
 * router checks the key (sandbox.exec: what runs inside answers) and the sandbox's project
 * before this runs; a paused sandbox is not woken here (409: resume it). The request's
 * credentials of this API (Authorization, the console's cookie and CSRF header) stay here,
 * and the answer is served on the API's origin, so it comes sandboxed (port_proxy.h). */
#include <string.h>

#include "api/api_auth.h"
#include "api/api_routes.h"
#include "api/http_listener.h"
#include "api/port_proxy.h"
#include "spaced/spaced_context.h"

static const char *const credentials[] = { "Authorization", "Cookie", API_CONSOLE_CSRF_HEADER, NULL };

static int sink_begin(struct api_request *req, void **ret_state, struct space_error *err)
{
        uint16_t port;
        char target[8192];
        const char *raw = http_listener_raw_uri(req->conn);
        if (port_proxy_parse_port(req->segments[4], &port, err) < 0)
                return -1;
        if (!raw || port_proxy_target(raw, 5, target, sizeof(target)) < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST,
                                       "the request target is not an origin-form path, or too long");
        struct sandbox_port_conn up = { .fd = -1 };
        if (sandbox_ports_open(req->ctx, &req->principal, req->segments[2], port, false, &up, err) < 0)
                return -1;
        struct port_proxy_request r = { .method = req->method,
                                        .target = target,
                                        .drop_headers = credentials,
                                        .shared_origin = true,
                                        .scheme = http_listener_scheme(&req->ctx->cfg),
                                        .stop = &req->ctx->shutting_down,
                                        .idle_ms = (int)req->ctx->cfg.http_idle_timeout_s * 1000,
                                        .render_error = api_response_error };
        struct port_proxy *p;
        if (port_proxy_begin(req->conn, &up, &r, &p, err) < 0)
                return -1;
        *ret_state = p;
        return 0;
}

const struct api_upload_sink port_proxy_sink = { sink_begin, port_proxy_sink_write, port_proxy_sink_finish,
                                                 port_proxy_sink_abort };
