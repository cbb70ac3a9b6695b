#include "service/node_service.h"

#include "spaced/spaced_context.h"

int node_service_list(struct spaced_context *ctx, const struct principal *p, struct node_record **ret, size_t *ret_n,
                      struct space_error *err)
{
        if (!principal_may(p, PERM_PLATFORM))
                return space_error_set(err, SPACE_E_FORBIDDEN, "the nodes are the platform's");
        int r = STORE(ctx, node_list, ret, ret_n);
        return r < 0 ? space_error_errno(err, r, "list nodes") : 0;
}
