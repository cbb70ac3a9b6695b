/* file_upload: one file written into a running sandbox as its bytes arrive, never held
 * whole. The sandbox's agent makes an unnamed file in the target directory (FILE_CREATE);
 * the bytes go to it in-band as FILE_DATA frames and the agent writes them, so that the
 * pages count against the sandbox's memory and not spaced's (a target in the sandbox's
 * memory, tmpfs, is also kept within what its memory limit leaves). Commit asks the agent
 * to link the file into place (atomically, with its mode and owner); freeing an upload
 * before that leaves nothing behind. Used by the files API (PUT /v1/sandboxes/{id}/files)
 * and by the E2B front door's /files. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "agent_protocol/agent_files_client.h"
#include "spaced/space_error.h"

struct spaced_context;
struct sandbox;
struct file_upload;

/* Starts the upload of a->path into sb through its agent. length is the number
 * of bytes to come when known (UINT64_MAX otherwise): for a memory-backed target, a length
 * beyond what the sandbox's memory limit leaves is refused at once (payload_too_large),
 * and writes that outgrow it fail. */
int file_upload_begin(struct spaced_context *ctx, const struct sandbox *sb, const struct agent_file_args *a, uint64_t length,
                      struct file_upload **ret, struct space_error *err);
/* Writes the next bytes. 0, or -1 once a write failed: later writes are dropped, and
 * commit says why. */
int file_upload_write(struct file_upload *u, const void *data, size_t len);
uint64_t file_upload_written(const struct file_upload *u);
/* Links the file into place. Fills *ret_reply (release it) and *ret_entry (pointing into
 * it) with the new file's entry; -1 with err otherwise. The upload is spent either way. */
int file_upload_commit(struct file_upload *u, struct agent_file_reply *ret_reply, struct agent_file_entry *ret_entry,
                       struct space_error *err);
/* Drops an upload not committed (the agent discards the file); accepts NULL. */
void file_upload_free(struct file_upload *u);
