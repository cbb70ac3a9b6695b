#include "service/sandbox_commands.h"

#include "service/sandbox_access.h"
#include "spaced/spaced_context.h"

int sandbox_commands_list(struct spaced_context *ctx, const struct principal *p, const char *sandbox_id, bool unfinished_only,
                          const struct store_page *page, struct command_record **ret, size_t *ret_n, struct space_error *err)
{
        struct sandbox sb;
        if (sandbox_access_load(ctx, p, sandbox_id, &sb, err) < 0)
                return -1;
        sandbox_release(&sb);
        int r = STORE(ctx, command_list, sandbox_id, unfinished_only, page, ret, ret_n);
        return r < 0 ? space_error_errno(err, r, "list commands") : 0;
}
