/* warm_pool: sandboxes made ahead of their creates, per template, so that a create is a claim
 * (docs/operating.md, "Warm pools").
 *
 * A warm sandbox is made exactly as a create with the server's defaults would make it (its
 * template's current build, the default resources and egress profile), launched, then
 * paused: it holds its memory and no CPU. It has no row in the store until it is claimed:
 * a create whose bound sandbox matches it (same template build, runtime, resources and
 * network) takes its id and runtime handle, is thawed, and is stored running with its
 * create already succeeded, in one transaction (sandbox_lifecycle_insert_running). Its
 * env, metadata, timeout and rolling policy are the request's: they live in the row, not in
 * the sandbox's processes, and nothing ran in it before (its /tmp is empty, its hostname is
 * its id).
 *
 * A background thread keeps each pool at its target: between min and max, enough for the
 * creates of the next 10 s at the last minute's rate. Warm sandboxes of a template that was
 * rebuilt or removed are dropped. They are not in the store, so a spaced killed with -9
 * leaves them as orphans, which the startup's orphan sweep removes; a clean exit removes
 * them itself. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;
struct warm_pool;

#define WARM_POOL_TEMPLATES 8
#define WARM_POOL_MAX_SIZE 64

struct warm_pool_spec {
        size_t n;
        struct {
                char template_name[64];
                unsigned min, max;
        } pools[WARM_POOL_TEMPLATES];
};

/* "TEMPLATE=N" (N kept ready) or "TEMPLATE=MIN:MAX", comma-separated; "" for none. */
int warm_pool_spec_parse(const char *text, struct warm_pool_spec *ret, struct space_error *err);

/* defaults: a create request's resources when it names none; network: the server's default
 * egress binding (NULL for the profile none). Nothing runs until warm_pool_start. */
int warm_pool_new(struct spaced_context *ctx, const struct warm_pool_spec *spec, const struct sandbox_resources *defaults,
                  const json_t *network, struct warm_pool **ret, struct space_error *err);
/* Starts the filler; call after the startup's orphan sweep. */
int warm_pool_start(struct warm_pool *wp);
/* Stops the filler and removes every sandbox still warm; a claim after it finds none. */
void warm_pool_stop(struct warm_pool *wp);
/* Stops it and frees it: only when no claim can still be running. */
void warm_pool_free(struct warm_pool *wp);

/* A bound sandbox (sandbox_lifecycle_bind) that a warm one matches gets its id and runtime
 * handle, and that sandbox is thawed: true. false: none matches (or wp is NULL), sb is
 * unchanged. */
bool warm_pool_claim(struct warm_pool *wp, struct sandbox *sb);
/* A claimed sandbox that could not be stored: its processes and rootfs go. */
void warm_pool_discard(struct warm_pool *wp, const struct sandbox *sb);

struct warm_pool_figures {
        char template_name[64];
        unsigned ready, target, min, max;
        uint64_t claims, misses, made, failed;
};
/* The figures of pool i (0 ≤ i < n): false past the last one. */
bool warm_pool_figures(struct warm_pool *wp, size_t i, struct warm_pool_figures *ret);
