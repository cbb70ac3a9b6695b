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
