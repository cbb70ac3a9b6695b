/* template_catalog: the built-in templates and their builds. A template is a read-only
 * subvolume templates/<name> plus a row holding its environment binding (driver and version,
 * base, digest, creation time). Builds happen in staging/ and are renamed into place, so a
 * crash never leaves a half-built template visible. */
#pragma once

#include <stdbool.h>

#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* Makes sure every built-in template has a row; builds busybox now if it is missing. */
int template_catalog_init(struct spaced_context *ctx, struct space_error *err);
bool template_catalog_is_builtin(const char *name);
/* Marks the template building and queues its build. */
int template_catalog_submit_build(struct spaced_context *ctx, const char *name, struct operation *ret_op,
                                  struct space_error *err);
/* Deletes a template (a built-in or preset goes back to not_built). Without force, one that
 * sandboxes (not destroyed) or other templates' builds depend on is a conflict naming them. */
int template_catalog_delete(struct spaced_context *ctx, const char *name, bool force, struct space_error *err);
/* Builds a built-in template now, on the calling thread (a Spacefile's FROM needs it). */
/* Builds a built-in now, for the build build_key (build_registry.h) whose FROM names it:
 * into that build's log, cancelled with it. */
int template_catalog_build_now(struct spaced_context *ctx, const char *name, const char *build_key, struct space_error *err);
int template_op_build(struct spaced_context *ctx, struct operation *op, struct space_error *err);

/* sha256 over the tree's paths, types, modes, owners, link targets and file contents, in
 * name order: "sha256:<hex>". */
int template_digest(const char *root, char *buf, size_t size);

/* Builders: fill an empty directory with a root filesystem. */
int busybox_rootfs_build(const char *root, struct space_error *err);
/* cancel_key: the build's key in build_registry.h (NULL: not cancellable). */
int debian_rootfs_build(const char *root, const char *mirror, const char *log_path, const char *cancel_key,
                        struct space_error *err);
