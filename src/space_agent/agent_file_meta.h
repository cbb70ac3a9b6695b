/* agent_file_meta: a file's user metadata, its extended attributes "user.e2b.<key>" (the
 * namespace E2B's envd keeps them in, so that ones set inside the sandbox show too). On the
 * wire it is one FILE_META field of "key\0value\0" pairs (docs/agent-protocol.md). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "agent_protocol/agent_frame.h"

/* Appends the metadata of name in the directory dir (not following a last symlink) as a
 * FILE_META field when it has any. Unreadable attributes are left out. */
void agent_file_meta_put(struct agent_frame_writer *w, int dir, const char *name);
/* Checks pairs ("key\0value\0"…, len bytes): -EINVAL when malformed. */
int agent_file_meta_check(const uint8_t *pairs, uint32_t len);
/* Sets the checked pairs on the open file fd; -errno. */
int agent_file_meta_set(int fd, const uint8_t *pairs, uint32_t len);
