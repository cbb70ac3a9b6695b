/* agent_client: spaced's side of the conversation with a sandbox's space-agent, over the
 * unix socket in the sandbox's run directory. Blocking; one connection per request. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct exec_request;
struct exec_result;
struct agent_frame;
struct agent_frame_writer;

/* What spaced accepts from an agent. Everything an agent sends is untrusted (a sandbox's
 * root may have taken its PID 1 over): every read has a size bound and a deadline. */
#define AGENT_CLIENT_REPLY_MAX (64u << 10) /* a control reply: HELLO_REPLY, OK, JOB_STARTED, ERROR, FILE_ENTRY */
#define AGENT_CLIENT_EVENT_MAX (1u << 20)  /* one job event (the agent sends output in 256 KiB pieces) */
#define AGENT_CLIENT_LIST_MAX (32u << 20)  /* a FILE_ENTRIES list or a JOB_SUBSCRIBED reply */
#define AGENT_CLIENT_FIELD_MAX 4096u       /* a scalar or message field of an exec result */

/* An absolute CLOCK_MONOTONIC deadline in µs, timeout_ms from now; 0 for timeout_ms <= 0. */
int64_t agent_client_deadline(int timeout_ms);
/* The deadline a socket's receive timeout (SO_RCVTIMEO) sets for a whole reply, or 0. */
int64_t agent_client_socket_deadline(int fd);
/* Waits until fd is readable; -ETIMEDOUT once deadline_us (0: none) has passed. */
int agent_client_wait(int fd, int64_t deadline_us);
/* Reads exactly len bytes by deadline_us: 0, -ECONNRESET on EOF before any byte, -EPROTO on
 * EOF after some, -ETIMEDOUT, or -errno. */
int agent_client_read_exact(int fd, void *buf, size_t len, int64_t deadline_us);
/* Reads one frame whose payload is at most max_payload bytes (else -EMSGSIZE, and nothing
 * of the payload is read: drop the connection) by deadline_us (0: none). */
int agent_client_read(int fd, uint32_t max_payload, int64_t deadline_us, struct agent_frame *ret_frame, uint8_t **ret_buf);
/* agent_client_read into the caller's buffer of size bytes (the bound), for a stream of
 * frames read one after another without an allocation each. */
int agent_client_read_into(int fd, uint8_t *buf, uint32_t size, int64_t deadline_us, struct agent_frame *ret_frame);

/* A connected, blocking socket to the agent with send/receive timeouts (0: none), or -errno. */
int agent_client_connect(const char *socket_path, int timeout_ms);
/* Finishes and sends w (always released) on fd, then reads the reply into *ret_frame and
 * *ret_buf (caller frees): at most max_payload bytes, within the socket's receive timeout
 * for the whole reply. An ERROR reply becomes -its errno with the message copied; a reply
 * of another type than want is -EPROTO. */
int agent_client_roundtrip(int fd, struct agent_frame_writer *w, uint8_t want, uint32_t max_payload,
                           struct agent_frame *ret_frame, uint8_t **ret_buf, char *msg, size_t msg_size);
/* Reads an AGENT_MSG_ERROR frame: its errno (EIO if absent) and message. */
void agent_client_error(const struct agent_frame *f, int *ret_errno, char *msg, size_t size);

/* HELLO round trip; fills *ret_pid with the agent's pid (1 inside its namespace).
 * Returns 0 or -errno (-ECONNREFUSED / -ENOENT when no agent listens). */
int agent_client_hello(const char *socket_path, int timeout_ms, uint32_t *ret_pid);

/* Runs one command to completion. Returns 0, -errno for transport failures, or -EPROTO. On
 * an agent-side error (AGENT_MSG_ERROR) returns -that errno and copies the message.
 * spaced enforces req->output_cap itself: whatever the agent sends, at most output_cap
 * bytes of each stream are kept (the rest is read and dropped, and truncated is set), and
 * the whole reply must arrive within the command's timeout plus a grace (-ETIMEDOUT). */
int agent_client_exec(const char *socket_path, const struct exec_request *req, struct exec_result *ret, char *ret_message,
                      size_t message_size);
