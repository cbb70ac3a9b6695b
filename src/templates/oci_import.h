/* oci_import: an image archive — an OCI image layout in a tar (skopeo copy … oci-archive:)
 * or a `docker save` tar — unpacked into a root filesystem: its layers applied in order with
 * their whiteouts, by rootfs_archive. Blobs are found by digest (sha256:<64 hex>) or by
 * path inside the archive, never outside it. */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "spaced/space_error.h"

/* workdir: an empty scratch directory for the outer archive. *ret_config gets
 * {"env": {…}, "workdir", "user"} from the image's config (empty members when absent). */
int oci_import_apply(const char *archive, const char *workdir, const char *root, uint64_t max_bytes, json_t **ret_config,
                     struct space_error *err);
