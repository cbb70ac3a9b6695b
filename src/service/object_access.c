#include "service/object_access.h"

#include <errno.h>
#include <string.h>

#include "service/approval_service.h"
#include "service/credential_binding_service.h"
#include "service/key_service.h"
#include "service/operation_access.h"
#include "service/policy_service.h"
#include "service/project_service.h"
#include "service/sandbox_access.h"
#include "service/secret_service.h"
#include "service/snapshot_access.h"
#include "service/template_access.h"
#include "state_store/state_store.h"

int object_access_check(struct spaced_context *ctx, const struct principal *p, enum object_kind kind, const char *id, bool write,
                        struct space_error *err)
{
        switch (kind) {
        case OBJECT_NONE:
                return 0;
        case OBJECT_SANDBOX: {
                struct sandbox sb;
                if (sandbox_access_load(ctx, p, id, &sb, err) < 0)
                        return -1;
                sandbox_release(&sb);
                return 0;
        }
        case OBJECT_SNAPSHOT: {
                struct snapshot snap;
                return snapshot_access_load(ctx, p, id, &snap, err);
        }
        case OBJECT_TEMPLATE:
                return template_access_check(ctx, p, id, write, err);
        case OBJECT_OPERATION: {
                struct operation op;
                return operation_access_load(ctx, p, id, &op, err);
        }
        case OBJECT_KEY: {
                struct api_key k;
                return key_service_load(ctx, p, id, &k, err);
        }
        case OBJECT_PROJECT: {
                struct project pr;
                return project_service_get(ctx, p, id, &pr, err);
        }
        case OBJECT_POLICY: {
                struct policy_record pol = { 0 };
                int r = policy_service_get(ctx, p, id, &pol, err);
                policy_record_release(&pol);
                return r;
        }
        case OBJECT_APPROVAL: {
                struct approval_record a = { 0 };
                int r = approval_service_get(ctx, p, id, &a, err);
                approval_record_release(&a);
                return r;
        }
        case OBJECT_SECRET: {
                if (p->permissions & PERM_PLATFORM)
                        return 0; /* its handler looks in the project ?project= names */
                struct secret_record s = { 0 };
                int r = secret_service_get(ctx, p, NULL, id, &s, err);
                secret_record_release(&s);
                return r;
        }
        case OBJECT_BINDING: {
                if (p->permissions & PERM_PLATFORM)
                        return 0;
                struct binding_record b = { 0 };
                int r = credential_binding_service_get(ctx, p, NULL, id, &b, err);
                binding_record_release(&b);
                return r;
        }
        }
        return space_error_set(err, SPACE_E_INTERNAL, "unknown object kind %d", (int)kind);
}
