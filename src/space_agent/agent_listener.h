/* agent_listener: the agent's listening socket when it binds one itself (--listen PATH, the
 * gvisor runtime), and its parking for a checkpoint. gVisor cannot save a socket bound on
 * the host (--host-uds=create), nor connections accepted from one: before runsc checkpoints
 * the sandbox, spaced sends the agent SIGUSR1 (runsc kill) and the agent closes every
 * connection and its listener and removes the socket's path (the sign spaced waits for);
 * SIGUSR2 (after the checkpoint, or in the restored sandbox) binds the path again. Commands
 * and jobs go on running meanwhile. */
#pragma once

#include <stdbool.h>

struct agent_server;

/* Binds and listens on path (a stale socket there is replaced); the fd or -errno. */
int agent_listener_open(const char *path);
/* SIGUSR1: closes every connection and the listener, then unlinks the path. */
void agent_listener_park(struct agent_server *s);
/* SIGUSR2: listens on the path again; a no-op unless parked. 0 or -errno (still parked). */
int agent_listener_unpark(struct agent_server *s);
