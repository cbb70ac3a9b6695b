#include "e2b/e2b_ingress.h"

#include <ctype.h>
#include <microhttpd.h>
#include <stdio.h>
#include <string.h>

#include "api/http_listener.h"
#include "api/request_trail.h"
#include "e2b/e2b_router.h"
#include "e2b/e2b_keys.h"
#include "e2b/e2b_routes.h"
#include "service/sandbox_access.h"
#include "service/sandbox_service.h"
#include "spaced/spaced_context.h"

/* envd's port: the SDK's envd calls go to getHost(49983) where no E2B_SANDBOX_URL is set;
 * that host is envd itself (e2b_router.h), not a port of the sandbox. */
#define E2B_ENVD_PORT "49983"

/* Credentials of the E2B API and envd that stay here. */
static const char *const credentials[] = { "X-API-KEY", "X-Access-Token", "E2B-Traffic-Access-Token", NULL };

/* A sandbox made with allowPublicTraffic false answers only requests carrying its traffic
 * access token (compared in constant time); an unknown sandbox is left to the open's 404. */
static int traffic_allowed(struct e2b_front *front, struct MHD_Connection *conn, const struct principal *caller, const char *id,
                           struct space_error *err)
{
        struct sandbox sb;
        struct space_error ignored = { 0 };
        if (sandbox_access_load(front->ctx, caller, id, &sb, &ignored) < 0)
                return 0;
        bool private_ports = sb.private_ports;
        sandbox_release(&sb);
        const char *token = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "E2B-Traffic-Access-Token");
        if (private_ports && !e2b_keys_traffic_token_ok(front->token_secret, id, token))
                return space_error_set(err, SPACE_E_FORBIDDEN,
                                       "the sandbox's ports are private: send its trafficAccessToken in the "
                                       "e2b-traffic-access-token header");
        return 0;
}

/* "<port>-<id>.<domain>[:<listener port>]" -> port and id. */
static bool host_names_port(const char *domain, const char *host, char *port, size_t port_size, char *id, size_t id_size)
{
        char h[256];
        size_t n = strcspn(host, ":");
        if (!domain[0] || n >= sizeof(h))
                return false;
        for (size_t i = 0; i < n; i++)
                h[i] = (char)tolower((unsigned char)host[i]);
        h[n] = '\0';
        size_t dn = strlen(domain);
        if (n <= dn + 1 || h[n - dn - 1] != '.' || strcmp(h + n - dn, domain) != 0)
                return false;
        h[n - dn - 1] = '\0';
        char *dash = strchr(h, '-');
        if (!dash || strchr(h, '.'))
                return false;
        *dash = '\0';
        if (strlen(h) >= port_size || strlen(dash + 1) >= id_size)
                return false;
        snprintf(port, port_size, "%s", h);
        snprintf(id, id_size, "%s", dash + 1);
        return true;
}

/* "/sandboxes/<id>/ports/<port>[/…]" -> port and id. */
static bool path_names_port(const char *url, char *port, size_t port_size, char *id, size_t id_size)
{
        if (strncmp(url, "/sandboxes/", 11) != 0)
                return false;
        const char *i = url + 11, *slash = strchr(i, '/');
        if (!slash || (size_t)(slash - i) >= id_size || strncmp(slash, "/ports/", 7) != 0)
                return false;
        const char *p = slash + 7;
        size_t pn = strcspn(p, "/");
        if (!pn || pn >= port_size)
                return false;
        snprintf(id, id_size, "%.*s", (int)(slash - i), i);
        snprintf(port, port_size, "%.*s", (int)pn, p);
        return true;
}

bool e2b_ingress_begin(struct e2b_front *front, struct MHD_Connection *conn, const char *method, const char *url,
                       struct request_trail *trail, struct port_proxy **ret, struct api_response *early)
{
        struct spaced_context *ctx = front->ctx;
        char port_text[16], id[64], target[8192];
        const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
        bool by_host = host && host_names_port(ctx->cfg.e2b_domain, host, port_text, sizeof(port_text), id, sizeof(id));
        if (by_host && strcmp(port_text, E2B_ENVD_PORT) == 0)
                return false;
        if (!by_host && !path_names_port(url, port_text, sizeof(port_text), id, sizeof(id)))
                return false;
        *ret = NULL;
        /* Public traffic to the sandbox's own server changes nothing of spaced's: not audited
         * as a write (whoever reaches the listener could fill the audit log otherwise). */
        request_trail_route(trail, "sandbox.port", false, id);
        struct space_error err = { 0 };
        uint16_t port;
        const char *raw = http_listener_raw_uri(conn);
        if (port_proxy_parse_port(port_text, &port, &err) < 0)
                goto fail;
        if (!raw || port_proxy_target(raw, by_host ? 0 : 4, target, sizeof(target)) < 0) {
                space_error_set(&err, SPACE_E_INVALID_REQUEST, "the request target is not an origin-form path, or too long");
                goto fail;
        }
        /* Public traffic: the caller acts in the sandbox's project, as its envd token's bearer. */
        struct principal caller;
        sandbox_service_token_caller(ctx, id, &caller);
        struct sandbox_port_conn up = { .fd = -1 };
        if (traffic_allowed(front, conn, &caller, id, &err) < 0)
                goto fail;
        if (sandbox_ports_open(ctx, &caller, id, port, true, &up, &err) < 0)
                goto fail;
        struct port_proxy_request r = { .method = method,
                                        .target = target,
                                        .drop_headers = credentials,
                                        .shared_origin = !by_host,
                                        .scheme = http_listener_scheme(&ctx->cfg),
                                        .stop = &ctx->shutting_down,
                                        .idle_ms = (int)ctx->cfg.http_idle_timeout_s * 1000,
                                        .render_error = e2b_reply_space_error };
        if (port_proxy_begin(conn, &up, &r, ret, &err) < 0)
                goto fail;
        http_listener_authenticated(conn); /* the sandbox exists and its port answers */
        return true;
fail:
        e2b_reply_space_error(early, &err);
        return true;
}
