/* node_credential: how one spaced of the fleet proves to another that a request it passes
 * on (the data plane of a sandbox on another node, docs/fleet.md "Node credentials") comes
 * from a node of the fleet and not from a client: an HMAC-SHA256, under the fleet's shared
 * secret (--fleet-secret FILE, the same file on every node and control process), of the
 * sending node's id, the time, the request's method and target, and the principal the sender
 * authenticated. The header is
 *   X-Space-Node-Auth: v1 <node id> <unix ms> <hex HMAC>
 * and is good for NODE_CREDENTIAL_SKEW_MS either side of the receiver's clock, for that one
 * method, target and principal. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define NODE_CREDENTIAL_HEADER "X-Space-Node-Auth"
#define NODE_PRINCIPAL_HEADER "X-Space-Node-Principal"
#define NODE_CREDENTIAL_SKEW_MS 60000
#define NODE_CREDENTIAL_SIZE 192 /* the header's value, NUL included */
#define FLEET_SECRET_MIN 32
#define FLEET_SECRET_MAX 1024

/* The header's value for a request by node_id at now_ms into buf (NODE_CREDENTIAL_SIZE).
 * 0, or -EINVAL (an id with a space or too long, no key). */
int node_credential_sign(const unsigned char *key, size_t key_len, const char *node_id, int64_t now_ms, const char *method,
                         const char *target, const char *principal, char *buf, size_t size);
/* Whether header is a credential of this fleet for method, target and principal at now_ms:
 * 0 with the sending node's id in ret_node (32 bytes), -EINVAL malformed, -EPERM a wrong
 * HMAC, -ETIME out of the window. Compares in constant time. */
int node_credential_verify(const unsigned char *key, size_t key_len, const char *header, const char *method, const char *target,
                           const char *principal, int64_t now_ms, char ret_node[32]);
