/* e2b_server: the E2B front door's own HTTP listener (--e2b-listen ADDR:PORT): a second
 * libmicrohttpd daemon, thread per connection like the main one, that hands every request
 * to e2b_router. Off unless configured. */
#pragma once

#include <stddef.h>

struct spaced_context;
struct e2b_server;

/* Serves on fd (bound by http_listener_bind; taken, on failure too). */
int e2b_server_start(struct spaced_context *ctx, int fd, struct e2b_server **ret, char *reason, size_t reason_size);
/* Stops accepting new connections. */
void e2b_server_quiesce(struct e2b_server *s);
unsigned e2b_server_connections(struct e2b_server *s);
void e2b_server_free(struct e2b_server *s);
