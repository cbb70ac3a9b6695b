/* object_access: may this caller address the object a request names? One answer for every
 * kind of object: a caller never sees another project's objects, and an unknown id and a
 * foreign one get the same 404 (same code, same message). The route tables say which kind
 * of object a route names (and in which path segment); the routers call this before the
 * handler runs, and handlers that load an object call the kind's own *_access_load. */
#pragma once

#include <stdbool.h>

#include "auth/principal.h"
#include "spaced/space_error.h"

struct spaced_context;

enum object_kind {
        OBJECT_NONE = 0,
        OBJECT_SANDBOX,   /* by id */
        OBJECT_SNAPSHOT,  /* by id */
        OBJECT_TEMPLATE,  /* by reference (name, name:tag, name@digest) */
        OBJECT_OPERATION, /* by id (template builds too) */
        OBJECT_KEY,       /* by id */
        OBJECT_PROJECT,   /* by id */
        OBJECT_POLICY,    /* by id */
        OBJECT_APPROVAL,  /* by id */
        OBJECT_SECRET,    /* by name, in the caller's project (the platform: any, its ?project= says which) */
        OBJECT_BINDING,   /* a credential binding by id, as secrets */
};

/* 0 when p may address object kind/id; -1 with err: not_found (unknown, or another
 * project's), forbidden (write to a shared template without the platform permission). An
 * unknown template reference passes (the handler answers it: a name may be built anew). */
int object_access_check(struct spaced_context *ctx, const struct principal *p, enum object_kind kind, const char *id, bool write,
                        struct space_error *err);
