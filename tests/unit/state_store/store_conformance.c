#include "store_conformance.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

static const struct store_backend *running;
static char location[4096];

int store_conformance_run(const struct store_backend *b)
{
        running = b;
        print_message("state_store conformance of the %s backend\n", b->name);
        int failed = store_conformance_sandboxes(b);
        failed += store_conformance_catalog(b);
        failed += store_conformance_projects(b);
        failed += store_conformance_figures(b);
        failed += store_conformance_audit(b);
        failed += store_conformance_policies(b);
        failed += store_conformance_approvals(b);
        failed += store_conformance_secrets(b);
        failed += store_conformance_raw_ids(b);
        failed += store_conformance_fleet(b);
        running = NULL;
        return failed;
}

int store_conformance_open(void **state)
{
        struct state_store *st = NULL;
        if (!running || running->location_new(location, sizeof(location)) < 0)
                return -1;
        if (running->ops->open(location, &st) < 0) {
                if (running->location_free)
                        running->location_free(location);
                return -1;
        }
        *state = st;
        return 0;
}

int store_conformance_reopen(struct state_store **ret)
{
        if (!running)
                return -EINVAL;
        if (strcmp(location, ":memory:") == 0)
                return -EOPNOTSUPP; /* a second open would be another, empty store */
        return running->ops->open(location, ret);
}

int store_conformance_close(void **state)
{
        running->ops->close(*state);
        if (running->location_free)
                running->location_free(location);
        return 0;
}
