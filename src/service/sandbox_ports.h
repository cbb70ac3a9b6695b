/* sandbox_ports: a connection to a TCP port inside a sandbox, for the ingress of both front
 * doors (api/port_proxy.h). Who may reach which sandbox is decided here (sandbox_access_load);
 * how the port is reached is the driver's (runtime_driver.h's port_connect: the sandbox's own
 * loopback, nothing else). At most --ingress-connections are open per sandbox at once. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "auth/principal.h"
#include "spaced/space_error.h"

struct spaced_context;

struct sandbox_port_conn {
        int fd; /* connected, blocking, with --ingress-timeout send/receive timeouts; -1: none */
        char sandbox_id[32];
};

/* Connects to port of sandbox id for p. A paused or stopped sandbox is resumed (started)
 * first when wake is set (through the lifecycle's operation, as a resume call does), else it
 * is invalid_state. not_found as sandbox_access_load; bad_gateway when nothing listens on the
 * port; unavailable past the per-sandbox cap; timeout; unsupported for a runtime whose ports
 * cannot be reached. */
int sandbox_ports_open(struct spaced_context *ctx, const struct principal *p, const char *id, uint16_t port, bool wake,
                       struct sandbox_port_conn *ret, struct space_error *err);
/* Closes the connection and gives its place back; accepts a closed one. */
void sandbox_ports_close(struct sandbox_port_conn *c);
