/* e2b_ingress: E2B's sandbox hosts on the E2B listener. The SDK's getHost(port) is
 * <port>-<sandboxID>.<domain> (the domain create reports: --e2b-domain); a request whose Host
 * names one goes to that port inside the sandbox, whatever its path. Where no name resolves
 * to spaced (plain localhost), the path form /sandboxes/<id>/ports/<port>/<path> does the
 * same. As E2B's default (allowPublicTraffic), the traffic needs no credential: whoever
 * reaches the listener and knows the id reaches the port; a sandbox made with
 * allowPublicTraffic false (private_ports) wants its traffic access token in the
 * e2b-traffic-access-token header (e2b_keys.h), else 403 before the sandbox is woken. The host of port 49983 is envd's,
 * as on E2B: it goes to the envd routes (so the SDK works without E2B_SANDBOX_URL once the
 * domain resolves to the listener). A paused (or stopped) sandbox is
 * resumed by the request, as a connect call does. The proxy is the v1 API's
 * (api/port_proxy.h); errors of spaced's own are E2B's {"code","message"}. */
#pragma once

#include <stdbool.h>

#include "api/api_request.h"
#include "api/port_proxy.h"

struct e2b_front;
struct request_trail;

/* Whether the request is ingress (its Host or its path). When it is, it is begun: *ret is
 * the proxy, or NULL with early filled (to answer once the body has been discarded). */
bool e2b_ingress_begin(struct e2b_front *front, struct MHD_Connection *conn, const char *method, const char *url,
                       struct request_trail *trail, struct port_proxy **ret, struct api_response *early);
