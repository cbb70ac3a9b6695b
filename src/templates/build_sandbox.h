/* build_sandbox: where a Spacefile step runs — a namespace sandbox (no row in the store;
 * id "bld-…") on a writable snapshot of the parent layer. COPY writes into its rootfs from
 * the host; RUN starts it, runs the command through its agent, and stops it. Its result
 * becomes a layer: a read-only snapshot, pool/layers/<key>. Leftovers of a crash are
 * removed by the orphan sweep at start (they have no row). */
#pragma once

#include <limits.h>
#include <stdbool.h>

#include "runtime/runtime_driver.h"
#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;
struct build_log;

struct build_sandbox {
        struct sandbox sb;
        char rootfs[PATH_MAX];
        bool has_rootfs;
        char cancel_key[32]; /* its build in build_registry.h ("": none) */
};

#define BUILD_STEP_TIMEOUT_S 1800

int build_sandbox_create(struct spaced_context *ctx, const char *id, const char *parent_layer, struct build_sandbox *ret,
                         struct space_error *err);
/* Runs argv in it with envp/cwd as user (NULL: root); the command's output goes to the log
 * as it is printed. A non-zero exit is an error (build_failed) naming the status. A build
 * cancelled before the sandbox was started (when a kill had nothing to reach) is seen once
 * it runs, and the command is not started: cancelled. */
int build_sandbox_run(struct spaced_context *ctx, struct build_sandbox *b, char **argv, char **envp, const char *cwd,
                      const char *user, struct build_log *log, struct space_error *err);
/* Publishes its rootfs as the read-only layer at layer_path (kept if it appeared meanwhile). */
int build_sandbox_commit(struct build_sandbox *b, const char *layer_path, struct space_error *err);
/* Stops whatever runs and removes the rootfs. */
void build_sandbox_destroy(struct spaced_context *ctx, struct build_sandbox *b);
/* Kills every process of the build sandbox with this id (a cancelled build). */
void build_sandbox_kill(struct spaced_context *ctx, const char *id);
