/* The thread that expires held commands nobody decided in time (approval_service.h). */
#include <errno.h>
#include <stdlib.h>

#include "service/approval_service.h"
#include "service/periodic_task.h"

struct approval_expiry {
        struct periodic_task *task;
};

int approval_expiry_start(struct spaced_context *ctx, struct approval_expiry **ret)
{
        struct approval_expiry *e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        int r = periodic_task_start(ctx, approval_service_expire, &e->task);
        if (r < 0) {
                free(e);
                return r;
        }
        *ret = e;
        return 0;
}

void approval_expiry_stop(struct approval_expiry *e)
{
        if (!e)
                return;
        periodic_task_stop(e->task);
        free(e);
}
