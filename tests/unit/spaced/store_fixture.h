/* Records and stores shared by the state_store unit tests. */
#pragma once

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state_store/state_store.h"

#define STATE_MASK(s) (1u << (s))

/* A fully populated sandbox; release it with sandbox_release(). */
static inline struct sandbox store_fixture_sandbox(const char *id, enum sandbox_state state, int64_t created_at_ms)
{
        struct sandbox sb = { 0 };
        snprintf(sb.id, sizeof(sb.id), "%s", id);
        sb.state = state;
        snprintf(sb.template_name, sizeof(sb.template_name), "busybox");
        sb.environment = json_pack("{s:s, s:s}", "driver", "namespaces", "digest", "sha256:00");
        sb.resources = (struct sandbox_resources){ .cpus = 0.5, .memory_mb = 512, .pids = 256, .disk_mb = 7 };
        sb.env = json_pack("{s:s, s:s}", "FOO", "bar", "UNICODE", "h\xc3\xa9llo \xe2\x82\xac");
        sb.metadata = json_pack("{s:s}", "owner", "me");
        sb.timeout_s = 3600;
        snprintf(sb.on_timeout, sizeof(sb.on_timeout), "destroy");
        sb.created_at_ms = created_at_ms;
        sb.updated_at_ms = created_at_ms;
        snprintf(sb.runtime, sizeof(sb.runtime), "namespaces");
        return sb;
}

static inline struct operation store_fixture_operation(const char *id, const char *kind, const char *target,
                                                       enum operation_state state, int64_t created_at_ms)
{
        struct operation op = { 0 };
        snprintf(op.id, sizeof(op.id), "%s", id);
        snprintf(op.kind, sizeof(op.kind), "%s", kind);
        snprintf(op.target, sizeof(op.target), "%s", target);
        op.state = state;
        op.created_at_ms = created_at_ms;
        return op;
}

/* A fresh directory for database files; remove it with store_fixture_rmdir(). */
static inline void store_fixture_tmpdir(char *buf, size_t size)
{
        const char *base = getenv("TMPDIR");
        snprintf(buf, size, "%s/space-unit-XXXXXX", base && *base ? base : "/tmp");
        if (!mkdtemp(buf))
                abort();
}

static inline void store_fixture_rmdir(const char *dir)
{
        static const char *const leftovers[] = { "state.db", "state.db-wal", "state.db-shm", "state.db-journal" };
        char path[4200];
        for (size_t i = 0; i < sizeof(leftovers) / sizeof(leftovers[0]); i++) {
                snprintf(path, sizeof(path), "%s/%s", dir, leftovers[i]);
                unlink(path);
        }
        rmdir(dir);
}
