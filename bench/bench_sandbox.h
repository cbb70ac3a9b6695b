/* bench_sandbox: the API calls the benchmark makes on sandboxes, and the set of sandboxes it
 * created (so that it destroys exactly those, whatever else runs on the same spaced). */
#pragma once

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "bench_client.h"

#define BENCH_ID_MAX 64

struct bench_sandboxes {
        pthread_mutex_t lock;
        char (*ids)[BENCH_ID_MAX];
        size_t n, cap;
};

void bench_sandboxes_init(struct bench_sandboxes *set);
void bench_sandboxes_release(struct bench_sandboxes *set);
/* All thread-safe. add returns 0 or -ENOMEM / -ENAMETOOLONG. */
int bench_sandboxes_add(struct bench_sandboxes *set, const char *id);
void bench_sandboxes_remove(struct bench_sandboxes *set, const char *id);
bool bench_sandboxes_contains(const char *id, void *set);
/* A copy of the ids (free() it), for iterating while others change the set. */
int bench_sandboxes_snapshot(struct bench_sandboxes *set, char (**ret_ids)[BENCH_ID_MAX], size_t *ret_n);

/* POST /v1/sandboxes?wait=true. Any sandbox the answer names joins `set`, even a failed one.
 * Returns 0 with the id in ret_id, -EPROTO when the API refused or the create failed (the
 * reason in bench_client_error()), -EIO on transport failure. */
int bench_sandbox_create(struct bench_client *c, struct bench_sandboxes *set, const char *template, char *ret_id,
                         size_t size);

/* POST /v1/sandboxes/{id}/exec {"cmd":["true"]}. Returns 0 when it ran and exited 0,
 * -EAGAIN when the sandbox is not ready (409/503), -EPROTO or -EIO otherwise. */
int bench_sandbox_exec_true(struct bench_client *c, const char *id);

/* POST /v1/sandboxes/{id}/exec {"shell": script, "timeout_s": timeout_s}. Returns 0 when it
 * exited 0, -EPROTO when it failed or the API refused (the reason in bench_client_error()),
 * -EIO on transport failure. */
int bench_sandbox_exec_shell(struct bench_client *c, const char *id, const char *script, int timeout_s);

/* DELETE /v1/sandboxes/{id}?wait=true; a sandbox already gone counts as destroyed.
 * Returns 0, -EPROTO or -EIO; on 0 the id leaves `set`. */
int bench_sandbox_destroy(struct bench_client *c, struct bench_sandboxes *set, const char *id);

/* One line on the sandbox as GET /v1/sandboxes/{id} shows it (state, state_reason), for
 * error messages. Returns 0 or -EIO. */
int bench_sandbox_describe(struct bench_client *c, const char *id, char *buf, size_t size);
