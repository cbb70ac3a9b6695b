/* template_ref: how templates are named. A template is "name" (built-ins and presets:
 * busybox, debian, python, node) or "name:tag" (built or imported ones); name and tag are
 * [A-Za-z0-9_.-], not starting with '.', together at most 63 bytes. A reference without a
 * tag names the row "name" when there is one, else "name:latest". "name[:tag]@sha256:<hex>"
 * pins a version: the ready row of that name (and tag) whose digest it is, or none. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "state_store/state_store.h"

struct spaced_context;

bool template_ref_ok(const char *ref);
/* "name:tag" → name, tag ("" when none). -EINVAL when not a valid reference. */
int template_ref_split(const char *ref, char *name, size_t name_size, char *tag, size_t tag_size);
/* The row a reference names; -ENOENT if none. */
int template_ref_resolve(struct spaced_context *ctx, const char *ref, struct template_record *ret);
