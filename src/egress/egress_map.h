/* egress_map: which sandbox (and policy) a source address belongs to, as spaced last said
 * over the control socket. An address not in the map has no egress at all. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "egress/egress_credential.h"
#include "egress/egress_policy.h"

struct egress_map_entry {
        uint32_t addr; /* host byte order */
        char sandbox[32];
        struct egress_policy policy;
        struct egress_credentials credentials; /* the policy's "credentials" */
};

struct egress_map {
        struct egress_map_entry *entries;
        size_t n, cap;
};

void egress_map_release(struct egress_map *m);
const struct egress_map_entry *egress_map_find(const struct egress_map *m, uint32_t addr);
/* One control line (JSON):
 *   {"op": "set", "addr": "A.B.C.D", "sandbox": ID, "policy": POLICY}  (egress_policy.h)
 *   {"op": "del", "addr": "A.B.C.D"}
 *   {"op": "clear"}
 * 0, or -EINVAL with why filled (the map is unchanged), -ENOMEM. */
int egress_map_apply(struct egress_map *m, const char *line, char *why, size_t why_size);
