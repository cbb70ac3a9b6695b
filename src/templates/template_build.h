/* template_build: a template built from a Spacefile, as a template.build operation. The
 * operation's params say where its build context is (<state>/builds/<op>/context, unpacked
 * from the upload) or that it is a preset (templates/presets/<name>.Spacefile). Each RUN and
 * COPY becomes a layer found again by its cache key (docs/spacefile.md); the template is a
 * read-only snapshot of the last layer, published under its name only when every step
 * succeeded. A failed or cancelled build leaves its log and nothing else. Redone after a
 * crash, a build finds the layers it had finished in the cache. */
#pragma once

#include <stdbool.h>

#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* Handler of template.build operations that carry params (Spacefile builds and presets). */
int template_build_op(struct spaced_context *ctx, struct operation *op, struct space_error *err);
/* True if name is a preset (a Spacefile shipped in the presets directory). */
bool template_build_is_preset(const struct spaced_context *ctx, const char *name);
/* Asks a running or pending build to stop: its current step is killed. invalid_state when
 * the operation is not an unfinished build. */
int template_build_cancel(struct spaced_context *ctx, const char *op_id, struct space_error *err);
/* Deletes every cached layer (templates and sandboxes do not need them); invalid_state while
 * builds run. The next builds start from an empty cache. */
int template_build_prune_layers(struct spaced_context *ctx, unsigned *ret_removed, struct space_error *err);
/* <state>/builds/<op>: the upload's unpacked context and its Spacefile. */
int template_build_dir(const struct spaced_context *ctx, const char *op_id, char *buf, size_t size);
