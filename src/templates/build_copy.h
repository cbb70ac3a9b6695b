/* build_copy: the COPY instruction of a Spacefile build — the digest of what it copies (part
 * of the step's cache key) and the copy itself, from the build context into the layer being
 * built. Sources stay inside the context, destinations inside the layer (rootfs_path), links
 * are copied as links and never followed. See docs/spacefile.md. */
#pragma once

#include <stddef.h>

#include "spaced/space_error.h"
#include "templates/spacefile.h"

/* sha256 hex (65 bytes) over the sources' paths, types, modes, sizes, contents and link
 * targets, in name order. Fails (build_failed) when a source is missing or outside the context. */
int build_copy_digest(int ctxfd, const struct spacefile_step *st, char *hex, size_t size, struct space_error *err);
/* Copies the step's sources into rootfd; workdir (absolute) anchors a relative destination. */
int build_copy_apply(int ctxfd, int rootfd, const struct spacefile_step *st, const char *workdir, struct space_error *err);
/* user[:group] by name (the image's /etc/passwd and /etc/group) or number. */
int build_copy_owner(int rootfd, const char *spec, uid_t *ret_uid, gid_t *ret_gid, struct space_error *err);
