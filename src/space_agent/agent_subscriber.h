/* agent_subscriber: the one output channel of the agent. The connection that sent
 * JOB_SUBSCRIBE gets every job's events pushed to it, one event per job in turn, and sends
 * JOB_ACK frames back. A new subscriber replaces the old one (spaced restarted) and is sent
 * every event not acknowledged yet. */
#pragma once

#include "space_agent/agent_server.h"

struct agent_conn;

/* Makes c the subscriber (closing a previous one) and rewinds every job. */
void agent_subscriber_attach(struct agent_server *s, struct agent_conn *c);
/* Sends queued events until the socket is full or nothing is left. */
void agent_subscriber_flush(struct agent_server *s);
/* c is going away. */
void agent_subscriber_detach(struct agent_server *s, struct agent_conn *c);
/* True while an event is half written (the connection needs EPOLLOUT). */
bool agent_subscriber_pending(const struct agent_server *s);
