/* The state_store conformance suite (store_conformance.h) on the SQLite backend, each test on
 * its own in-memory database; and again through fault_store with no faults planned, which so
 * shows that the wrapper the fault injection tests use forwards every verb faithfully. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "fault_store.h"
#include "store_conformance.h"

static int in_memory(char *buf, size_t size)
{
        snprintf(buf, size, ":memory:");
        return 0;
}

int main(void)
{
        const struct store_backend sqlite = { .name = "sqlite", .ops = &state_store_sqlite, .location_new = in_memory };
        const struct store_backend wrapped = { .name = "fault_store over sqlite",
                                               .ops = &fault_store_ops,
                                               .location_new = in_memory };
        int failed = store_conformance_run(&sqlite);
        failed += store_conformance_run(&wrapped);
        return failed ? 1 : 0;
}
