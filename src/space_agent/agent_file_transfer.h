/* agent_file_transfer: whole-file downloads and uploads, the bytes in-band as FILE_DATA
 * frames (agent_protocol/agent_file_data.h), so nothing but the connection crosses from the
 * sandbox to spaced.
 *
 * Download: FILE_READ opens the file (a regular file only) and answers FILE_ENTRY; the
 * file stays open on the connection, and each FILE_FETCH {FILE_OFFSET, FILE_LENGTH} is
 * answered by that range in FILE_DATA frames, one chunk at a time as the socket takes them
 * (spaced not reading holds the agent back, nothing piles up), or by an ERROR where reading
 * fails or the file ended early.
 *
 * Upload: FILE_CREATE makes an unnamed file in the target directory (O_TMPFILE, else a
 * hidden temporary name) and answers FILE_UPLOAD; the agent itself writes the FILE_DATA
 * frames spaced sends into it, so the pages are charged to the sandbox's memory cgroup and
 * its limits (a tmpfs target is flagged FILE_MEMORY for spaced's headroom check).
 * FILE_COMMIT (FILE_SYNC: fdatasync first) links it into place atomically with its mode
 * and owner, or answers the first failure. A connection that ends before FILE_COMMIT
 * leaves nothing behind. */
#pragma once

#include <stdbool.h>

#include "space_agent/agent_files.h"

struct agent_file_upload;
struct agent_file_download;

/* Replies FILE_ENTRY and keeps the file open on c for FILE_FETCH; refuses anything but a
 * regular file. */
int agent_file_transfer_read(struct agent_conn *c, struct agent_file_request *req);
/* FILE_FETCH f: starts sending the range (or answers ERROR). */
void agent_file_transfer_fetch(struct agent_conn *c, const struct agent_frame *f);
/* Builds the next frame of c's download into w (zeroed, or a sent frame whose buffer it
 * reuses): a FILE_DATA, or the ERROR that ends it; true, or false when there is nothing
 * left to send (w untouched). */
bool agent_file_download_next(struct agent_conn *c, struct agent_frame_writer *w);
void agent_file_download_free(struct agent_file_download *d);
/* Whether name is one an upload gives its file before it is renamed into place (beside
 * the target when replacing it, or where O_TMPFILE is not available). */
bool agent_file_upload_temp_name(const char *name);

/* Replies FILE_UPLOAD and keeps the upload on c for FILE_DATA and FILE_COMMIT. */
int agent_file_transfer_create(struct agent_conn *c, struct agent_file_request *req);
/* FILE_DATA f: writes its bytes into c's upload (no reply; a failure is kept for the commit). */
void agent_file_transfer_data(struct agent_conn *c, const struct agent_frame *f);
/* Links c's upload into place and replies FILE_ENTRY (or ERROR). */
void agent_file_transfer_commit(struct agent_conn *c, const struct agent_frame *f);
/* Drops an upload that was never committed (NULL is fine). */
void agent_file_upload_free(struct agent_file_upload *u);
