/* template_import: a template from an archive — a root filesystem tarball (format rootfs)
 * or an image archive (format oci: OCI layout or docker save). Unpacked into staging/,
 * digested, then published as a read-only subvolume templates/<name:tag>. */
#pragma once

#include "spaced/space_error.h"
#include "state_store/state_store.h"

struct spaced_context;

/* id names the scratch space (<pool>/builds/<id>, staging/<id>). Fills *ret (the ready row).
 * A new row is project_id's ("" shared); an existing one keeps its project. */
int template_import_publish(struct spaced_context *ctx, const char *id, const char *archive, const char *format, const char *row,
                            const char *project_id, struct template_record *ret, struct space_error *err);
