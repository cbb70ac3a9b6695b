/* egress_loop: the state of space-egress's one epoll loop, shared by its parts: the
 * transparent TCP connections (egress_conn.c) and main, the control socket, the sandboxes'
 * DNS and the resolver queries (egress_main.c). */
#pragma once

#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>

#include "egress/egress_dns.h"
#include "egress/egress_map.h"

#define EGRESS_PENDING_MAX 1024
#define EGRESS_RESOLVE_TIMEOUT_MS 3000
#define EGRESS_PEEK_TIMEOUT_MS 5000
#define EGRESS_ADDRS_MAX 16

enum egress_tag {
        EGRESS_TAG_LISTEN,
        EGRESS_TAG_DNS,
        EGRESS_TAG_CONTROL,
        EGRESS_TAG_RESOLVER,
        EGRESS_TAG_CLIENT,
        EGRESS_TAG_SERVER
};

/* What an epoll event's data.ptr points at. */
struct egress_handle {
        enum egress_tag tag;
        void *owner;
};

struct egress_conn;

/* A question sent to the resolver on behalf of a sandbox's DNS query or of a connection. */
struct egress_pending {
        bool used;
        uint16_t id;
        int64_t deadline_ms;
        char name[256];                   /* normalized */
        uint32_t src;                     /* the sandbox's address */
        bool for_client;                  /* a sandbox's own query: answer it */
        struct sockaddr_in client;        /* where it came from */
        struct egress_dns_question query; /* what it asked */
        struct egress_conn *conn;         /* else: the connection waiting for it */
};

struct egress_loop {
        int epfd, listen_fd, dns_fd, control_fd, resolver_fd;
        struct sockaddr_in resolver;
        uint32_t refuse_net, refuse_mask; /* the sandboxes' own subnet: never dialled */
        struct egress_map map;
        char control_buf[1 << 20]; /* a policy line of the largest profile and lists fits */
        size_t control_len;
        struct egress_pending pending[EGRESS_PENDING_MAX];
        struct egress_conn *conns;
        struct egress_conn *graveyard; /* closed this batch, freed after it */
        struct egress_handle h_listen, h_dns, h_control, h_resolver;
        char record_buf[256 << 10]; /* connection records not yet taken by spaced */
        size_t record_len;
        unsigned long long records_dropped;
        struct egress_leaf_minter *leaves;               /* NULL: no CA, nothing intercepted */
        gnutls_certificate_credentials_t upstream_trust; /* what intercepted upstreams are verified against */
};

int64_t egress_now_ms(void);
void egress_log(const char *level, const char *event, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Sends an A query for name; 0 and *ret (the caller fills the rest), or -errno. */
int egress_resolve(struct egress_loop *l, const char *name, struct egress_pending **ret);

/* egress_conn.c */
void egress_conn_accept(struct egress_loop *l);
void egress_conn_event(struct egress_loop *l, struct egress_conn *c, bool server_side, uint32_t events);
/* The resolver's answer for c (ok false: none in time). */
void egress_conn_resolved(struct egress_loop *l, struct egress_conn *c, const uint32_t *addrs, size_t n, bool ok);
/* After the map changed: the open connections that their sandbox's policy now denies (or
 * whose source left the map) are reset, logged as denied. */
void egress_conn_recheck(struct egress_loop *l);
void egress_conn_tick(struct egress_loop *l, int64_t now_ms);
void egress_conn_reap(struct egress_loop *l);
/* Queues one record line (JSON, no newline; NULL counts as dropped) for spaced and sends
 * what it can. */
void egress_record_line(struct egress_loop *l, const char *line);
/* Sends what it can of the connection records to spaced, without waiting. */
void egress_record_flush(struct egress_loop *l);
