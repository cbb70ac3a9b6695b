/* instance_id: a name for one spaced state directory, made on first start and kept in
 * <state>/instance. Host-wide resources (cgroups) are grouped under it so that several
 * daemons on one host never touch each other's sandboxes. */
#pragma once

#include <stddef.h>

/* Reads <state_dir>/instance, or creates it ("i" + 12 hex digits). Returns 0 or -errno. */
int instance_id_load(const char *state_dir, char *buf, size_t size);
