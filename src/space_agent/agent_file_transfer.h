/* agent_file_transfer: whole-file downloads and uploads. The bytes never pass through the
 * agent: FILE_READ replies with the open file, FILE_CREATE with an unnamed file in the
 * target directory (O_TMPFILE, else a hidden temporary name) which spaced fills and then
 * FILE_COMMIT links into place atomically with its mode and owner. A connection that ends
 * before FILE_COMMIT leaves nothing behind.
 *
 * Memory-backed targets (tmpfs, ramfs) are the exception: pages are charged to the memory
 * cgroup of whoever writes them, so spaced must not write them. For those FILE_UPLOAD passes
 * the write end of a pipe instead, and the agent moves what arrives into the file itself
 * (splice), inside the sandbox's cgroup and its limit; FILE_COMMIT then waits until the
 * pipe is drained. */
#pragma once

#include "space_agent/agent_files.h"

struct agent_file_upload;

/* Replies FILE_ENTRY + the file opened for reading; refuses anything but a regular file. */
int agent_file_transfer_read(struct agent_conn *c, struct agent_file_request *req);
/* Replies FILE_UPLOAD + the file to fill, and keeps the upload on c for FILE_COMMIT. */
int agent_file_transfer_create(struct agent_conn *c, struct agent_file_request *req);
/* Links c's upload into place and replies FILE_ENTRY (or ERROR). */
void agent_file_transfer_commit(struct agent_conn *c);
/* Drops an upload that was never committed (NULL is fine). */
void agent_file_upload_free(struct agent_file_upload *u);
/* A FILE_COMMIT is waiting for the upload's pipe to drain (the connection reads nothing
 * meanwhile). false for NULL. */
bool agent_file_upload_committing(const struct agent_file_upload *u);
