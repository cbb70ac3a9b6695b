/* agent_client: spaced's side of the conversation with a sandbox's space-agent, over the
 * unix socket in the sandbox's run directory. Blocking; one connection per request. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct exec_request;
struct exec_result;
struct agent_frame;
struct agent_frame_writer;

/* A connected, blocking socket to the agent with send/receive timeouts (0: none), or -errno. */
int agent_client_connect(const char *socket_path, int timeout_ms);
/* Finishes and sends w (always released) on fd, then reads the reply into *ret_frame and
 * *ret_buf (caller frees). An ERROR reply becomes -its errno with the message copied; a
 * reply of another type than want is -EPROTO. */
int agent_client_roundtrip(int fd, struct agent_frame_writer *w, uint8_t want, struct agent_frame *ret_frame,
                           uint8_t **ret_buf, char *msg, size_t msg_size);
/* Reads an AGENT_MSG_ERROR frame: its errno (EIO if absent) and message. */
void agent_client_error(const struct agent_frame *f, int *ret_errno, char *msg, size_t size);

/* HELLO round trip; fills *ret_pid with the agent's pid (1 inside its namespace).
 * Returns 0 or -errno (-ECONNREFUSED / -ENOENT when no agent listens). */
int agent_client_hello(const char *socket_path, int timeout_ms, uint32_t *ret_pid);

/* Runs one command to completion. Returns 0, -errno for transport failures, or -EPROTO. On
 * an agent-side error (AGENT_MSG_ERROR) returns -that errno and copies the message. */
int agent_client_exec(const char *socket_path, const struct exec_request *req, struct exec_result *ret,
                      char *ret_message, size_t message_size);
