/* http_server: the HTTP/1.1 front door (libmicrohttpd): reads bodies up to a limit,
 * authenticates, routes, and writes JSON answers. Listens on TCP and optionally on a unix
 * socket. */
#pragma once

struct spaced_context;
struct http_server;

#include <stddef.h>

/* Serves the API on tcp_fd (bound by http_listener_bind; taken, on failure too). */
int http_server_start(struct spaced_context *ctx, int tcp_fd, struct http_server **ret, char *reason, size_t reason_size);
/* Stops accepting new connections. */
void http_server_quiesce(struct http_server *s);
/* Connections still open. */
unsigned http_server_connections(struct http_server *s);
void http_server_free(struct http_server *s);
