/* approval_request: what a held command needs to start once approved, as the JSON kept in
 * its approval's row (struct approval_record.request): argv, environment, cwd, user, stdin,
 * terminal and timeout, exactly as the command would have started when it was asked. */
#pragma once

#include <jansson.h>

#include "agent_protocol/agent_job_client.h"

/* The request of spec (its job_id is not kept) with stdin_text, exec's stdin written once the
 * command starts (NULL: none). Returns a new reference; NULL when out of memory. */
json_t *approval_request_new(const struct agent_job_spec *spec, const char *stdin_text);
/* The spec back (argv and envp allocated: approval_request_spec_release; cwd and user
 * borrowed from req) and the stdin text (borrowed, NULL: none). -EINVAL on a malformed
 * request, -ENOMEM. */
int approval_request_spec(const json_t *req, struct agent_job_spec *ret, const char **ret_stdin);
void approval_request_spec_release(struct agent_job_spec *spec);
