/* e2b_files_upload: envd's POST /files, streamed. The body goes, as it arrives, through
 * gzip inflation (Content-Encoding: gzip) and the multipart parser (multipart/form-data),
 * or straight (a raw body), into file_uploads of the files API: nothing is held whole, and
 * a target in the sandbox's memory (tmpfs) is bounded by what its memory limit leaves. */
#pragma once

#include <stddef.h>

#include "api/api_request.h"

struct e2b_call;
struct e2b_upload;

/* Starts the upload of the call (authenticated, its sandbox named). -1 with err when it
 * cannot be taken (the body is then to be discarded and err answered). */
int e2b_upload_begin(struct e2b_call *call, struct e2b_upload **ret, struct space_error *err);
/* The next bytes of the body. After a failure the rest is dropped and finish answers it. */
void e2b_upload_write(struct e2b_upload *u, const char *data, size_t len);
/* The body is complete: commits the last file and answers; frees u. */
void e2b_upload_finish(struct e2b_upload *u, struct api_response *resp);
/* The client went away: drops the file being written; frees u. Accepts NULL. */
void e2b_upload_abort(struct e2b_upload *u);
