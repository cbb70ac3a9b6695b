/* file_request: what every /v1/sandboxes/{id}/files route shares — its query parameters,
 * the running sandbox whose agent serves it, the entry JSON, and the mapping of the
 * agent's errno replies to API errors. */
#pragma once

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>

#include "agent_protocol/agent_files_client.h"
#include "api/api_request.h"
#include "state_store/state_store.h"

#define FILE_REQUEST_TIMEOUT_MS 30000

struct runtime_registry;

struct file_target {
        struct sandbox sb;
        bool loaded;
        const struct runtime_registry *runtimes; /* the sandbox's driver hands out its agent */
};

/* Loads the sandbox of segment 2 (404) and checks it is running (409 invalid_state). */
int file_target_load(struct api_request *req, struct file_target *ret, struct space_error *err);
void file_target_release(struct file_target *t);
/* Connects to its agent (503 unavailable when it does not answer). */
int file_target_connect(const struct file_target *t, int timeout_ms, struct space_error *err);
/* Connects to sb's agent through its driver: the fd, or -1 with err set (503 unavailable
 * when it does not answer; unsupported for a runtime this server does not host). */
int file_agent_connect(const struct runtime_registry *runtimes, const struct sandbox *sb, int timeout_ms,
                       struct space_error *err);

/* A path given by the client: absolute, no NUL byte, shorter than PATH_MAX. */
int file_path_check(const char *what, const char *path, size_t len, struct space_error *err);
/* Query parameter name as a checked path (required). */
int file_query_path(const struct api_request *req, const char *name, const char **ret, struct space_error *err);
/* ?user= (optional, a user name or uid of the sandbox). */
int file_query_user(const struct api_request *req, const char **ret, struct space_error *err);
/* A user or owner name: 1-255 bytes, no NUL, ':' or newline. */
bool file_user_name_ok(const char *s);
/* "0644" -> 0644: 1-4 octal digits, at most 07777. */
int file_mode_parse(const char *s, uint32_t *ret);

/* The owner a new file or directory gets: a user name, and/or numbers (-1: not given). */
void file_owner_args(const char *owner, long long uid, long long gid, struct agent_file_args *a);

/* A download's Range header for a file of size bytes: 1 with the one range it names,
 * 0 when it is to be ignored (absent, not bytes, several ranges, malformed: send it all),
 * -ERANGE when it lies beyond the file (416). */
int file_range_parse(const char *header, uint64_t size, uint64_t *ret_offset, uint64_t *ret_len);

/* An agent failure (r = -errno, msg its message) as the API error. */
int file_error_from_agent(struct space_error *err, int r, const char *msg);
json_t *file_render_entry(const struct agent_file_entry *e);
