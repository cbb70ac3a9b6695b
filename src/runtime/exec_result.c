#include <stdlib.h>

#include "runtime/runtime_driver.h"

void exec_result_release(struct exec_result *r)
{
        if (!r)
                return;
        free(r->out);
        free(r->err);
        r->out = r->err = NULL;
        r->out_len = r->err_len = 0;
}

void exec_result_set_limits(struct exec_result *r, int before_r, const struct runtime_stats *before, int after_r,
                            const struct runtime_stats *after)
{
        bool known = before_r == 0 && after_r == 0;
        r->oom_killed = known && after->oom_kills > before->oom_kills;
        r->pids_limit_hit = known && after->pids_max_hits > before->pids_max_hits;
}
