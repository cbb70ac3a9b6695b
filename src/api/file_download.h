/* file_download: the bytes of a sandbox's file as a response body, fetched from its agent
 * as the client takes them (FILE_FETCH, agent_protocol/agent_file_fetch.h), never held
 * whole. Used by GET /v1/sandboxes/{id}/files and the E2B front door's GET /files. */
#pragma once

#include <stdint.h>

#include "api/api_request.h"

/* Makes bytes [offset, offset + len) of the file that FILE_READ opened on the agent
 * connection agent (taken in every case) resp's body, with a Content-Length of len; status
 * and headers are the caller's. When the agent fails or misbehaves midway the connection
 * is cut (the client sees the body incomplete) and the reason logged. 0, or -errno. */
int file_download_respond(int agent, uint64_t offset, uint64_t len, const char *path, struct api_response *resp);
