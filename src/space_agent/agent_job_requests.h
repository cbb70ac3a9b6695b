/* agent_job_requests: the JOB_* requests a connection may send (docs/agent-protocol.md). */
#pragma once

#include <stdint.h>

#include "agent_protocol/agent_frame.h"

struct agent_conn;

/* Handles one JOB_* frame received on c; may take *payload. */
void agent_job_requests_handle(struct agent_conn *c, const struct agent_frame *f, uint8_t **payload);
