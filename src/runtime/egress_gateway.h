/* egress_gateway: the space-egress process of this spaced (docs/network.md), started and
 * supervised here. spaced binds its sockets (TCP and UDP on 127.0.0.1, ports chosen by the
 * kernel and stable for the daemon's life, so the host's DNAT rules never change) and hands
 * them to each incarnation, with one end of a socketpair on which it sends the policy map
 * (source address → sandbox and policy, egress/egress_map.h). When the gateway dies it is
 * started again and sent the whole map; meanwhile connections wait in the listen backlog
 * and DNS goes unanswered: nothing leaves a sandbox undecided (fail closed). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "spaced/space_error.h"

struct egress_gateway;

struct egress_gateway_config {
        const char *program;     /* the space-egress binary */
        const char *resolver;    /* ADDR[:PORT]; NULL or "": the host's first IPv4 nameserver */
        const char *refuse;      /* CIDR: the sandboxes' own subnet, never dialled */
        const char *ca_cert;     /* the platform CA (runtime/platform_ca.h): its certificate and */
        const char *ca_key;      /* key files, which the gateway reads at start; NULL: no interception */
        const char *upstream_ca; /* the bundle intercepted upstreams are verified against; NULL: the host's */
        bool log_json;           /* its log lines as JSON objects, like spaced's (--log-format json) */
        /* Called on the supervisor's thread with each record the gateway sends back (one
         * JSON object: {"op": "connection", "sandbox", "src", "dst", "port", "name",
         * "decision", "reason", "dialled", "bytes_out", "bytes_in", "duration_ms"}); NULL:
         * they are dropped. */
        void (*on_record)(void *arg, const json_t *record);
        void *record_arg;
};

int egress_gateway_start(const struct egress_gateway_config *cfg, struct egress_gateway **ret, struct space_error *err);
/* Stops the supervisor and the gateway (it exits when its control socket closes). */
void egress_gateway_free(struct egress_gateway *g);
uint16_t egress_gateway_tcp_port(const struct egress_gateway *g);
uint16_t egress_gateway_dns_port(const struct egress_gateway *g);
/* The running gateway's pid, 0 while there is none. */
pid_t egress_gateway_pid(struct egress_gateway *g);
/* Takes the sandbox's addresses out of the map (it stopped: its link is gone). */
void egress_gateway_forget(struct egress_gateway *g, const char *sandbox);
/* The address of the sandbox's link in the map, into ret[16]: 0, or -ENOENT (not running). */
int egress_gateway_addr_of(struct egress_gateway *g, const char *sandbox, char *ret);
/* Sets what traffic from addr may reach (policy: egress_policy.h's JSON form). 0 or -errno. */
int egress_gateway_set(struct egress_gateway *g, const char *addr, const char *sandbox, const json_t *policy);
