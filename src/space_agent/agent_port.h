/* agent_port: PORT_CONNECT (agent_frame.h), spaced's way to a TCP port inside a sandbox whose
 * network it cannot join. The agent connects to 127.0.0.1:<port> (its own loopback, nothing
 * else), answers OK, and a child of its own relays the two streams until either closes; the
 * agent's loop is then done with the connection. */
#pragma once

#include "agent_protocol/agent_frame.h"
#include "space_agent/agent_conn.h"

void agent_port_connect(struct agent_conn *c, const struct agent_frame *f);
