/* egress_tls: the two TLS sessions of a connection the gateway intercepts (docs/network.md,
 * "HTTPS interception"): toward the sandbox a server presenting a leaf of the platform CA
 * for the SNI (egress_leaf.h), toward the upstream a client verifying the upstream's
 * certificate against the host's CA bundle (or --upstream-ca) and the SNI as hostname.
 * Both offer http/1.1 only in ALPN. Non-blocking on the connection's own sockets: the
 * ClientHello the gateway peeked is given to the sandbox-side session first. */
#pragma once

#include <gnutls/gnutls.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "egress/egress_leaf.h"

#define EGRESS_TLS_HOST_CA "/etc/ssl/certs/ca-certificates.crt"

struct egress_tls;

/* The upstream side's trust: the PEM bundle file; NULL on failure (why says). */
gnutls_certificate_credentials_t egress_tls_upstream_trust(const char *ca_file, char *why, size_t why_size);

/* The sessions for a connection to name; peeked: the client's first bytes (its ClientHello). */
struct egress_tls *egress_tls_new(struct egress_leaf_minter *m, gnutls_certificate_credentials_t trust, const char *name,
                                  int client_fd, int server_fd, const uint8_t *peeked, size_t peeked_len, int64_t now_s);
/* Runs the handshakes, the upstream's first. 1: not done yet, *client_events and
 * *server_events (EPOLLIN/EPOLLOUT) say what to wait for; 0: both done; -1: failed, why. */
int egress_tls_handshake(struct egress_tls *t, uint32_t *client_events, uint32_t *server_events, char *why, size_t why_size);
/* recv()/send() of one side's plaintext: n, 0 at its end (recv), or -1 with errno (EAGAIN). */
ssize_t egress_tls_recv(struct egress_tls *t, bool server_side, void *buf, size_t n);
ssize_t egress_tls_send(struct egress_tls *t, bool server_side, const void *buf, size_t n);
/* Decrypted bytes waiting in the session (epoll will not say so). */
bool egress_tls_pending(struct egress_tls *t, bool server_side);
/* Ends one side's writing (close_notify, best effort, then the socket's write side). */
void egress_tls_shut(struct egress_tls *t, bool server_side);
void egress_tls_free(struct egress_tls *t);
