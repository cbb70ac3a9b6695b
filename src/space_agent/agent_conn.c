/* agent_conn: per-connection request/reply state machine. */
#include "space_agent/agent_conn.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "space_agent/agent_cleanup.h"
#include "space_agent/agent_command.h"
#include "space_agent/agent_file_transfer.h"
#include "space_agent/agent_file_watch.h"
#include "space_agent/agent_files.h"
#include "space_agent/agent_job_requests.h"
#include "space_agent/agent_port.h"
#include "space_agent/agent_subscriber.h"

#ifndef SPACE_VERSION
#define SPACE_VERSION "0.1.0"
#endif

/* Frames handled per wake-up before yielding to other fds. */
#define REQUESTS_PER_WAKEUP 16

void agent_conn_update_events(struct agent_conn *c)
{
        uint32_t events;

        if (c->dead)
                return;
        if (c->file_watch)
                events = agent_file_watch_events(c->file_watch);
        else if (c->subscriber)
                events = EPOLLIN | (c->reply.data || agent_subscriber_pending(c->server) ? EPOLLOUT : 0);
        else if (c->reply.data)
                events = EPOLLOUT;
        else if (c->command)
                events = 0; /* EPOLLHUP/EPOLLERR are always reported */
        else
                events = EPOLLIN;
        if (agent_server_watch_set(c->server, &c->watch, events) < 0)
                agent_conn_close(c);
}

static void conn_flush(struct agent_conn *c)
{
        /* On the output channel a reply must not land inside an event being written. */
        if (c->subscriber && c->reply_off == 0 && agent_subscriber_pending(c->server)) {
                agent_subscriber_flush(c->server);
                if (c->dead)
                        return;
                if (agent_subscriber_pending(c->server)) {
                        agent_conn_update_events(c);
                        return;
                }
        }
        for (;;) {
                while (c->reply_off < c->reply.len) {
                        ssize_t n = send(c->watch.fd, c->reply.data + c->reply_off, c->reply.len - c->reply_off,
                                         MSG_NOSIGNAL | MSG_DONTWAIT);
                        if (n < 0) {
                                if (errno == EINTR)
                                        continue;
                                if (errno == EAGAIN || errno == EWOULDBLOCK)
                                        break;
                                agent_conn_close(c);
                                return;
                        }
                        c->reply_off += (size_t)n;
                }
                if (c->reply_off < c->reply.len)
                        break;
                struct agent_frame_writer w = c->reply; /* sent; its buffer may carry the next chunk */
                c->reply = (struct agent_frame_writer){};
                c->reply_off = 0;
                if (c->subscriber) {
                        agent_frame_writer_release(&w);
                        agent_subscriber_flush(c->server);
                        return;
                }
                /* A download goes on as the socket takes it: one chunk at a time. */
                if (!agent_file_download_next(c, &w)) {
                        agent_frame_writer_release(&w);
                        break;
                }
                if (agent_frame_writer_finish(&w) < 0) {
                        agent_frame_writer_release(&w);
                        agent_conn_close(c);
                        return;
                }
                c->reply = w;
        }
        agent_conn_update_events(c);
}

void agent_conn_error_frame(struct agent_frame_writer *w, int error, const char *message)
{
        agent_frame_writer_begin(w, AGENT_MSG_ERROR);
        agent_frame_writer_put_i32(w, AGENT_F_ERRNO, error);
        agent_frame_writer_put_str(w, AGENT_F_MESSAGE, message ? message : strerror(error));
}

void agent_conn_reply_error(struct agent_conn *c, int error, const char *message)
{
        struct agent_frame_writer w;

        agent_conn_error_frame(&w, error, message);
        if (agent_frame_writer_finish(&w) < 0) {
                agent_frame_writer_release(&w);
                agent_conn_close(c);
                return;
        }
        c->reply = w;
        c->reply_off = 0;
        conn_flush(c);
}

void agent_conn_reply(struct agent_conn *c, struct agent_frame_writer *w)
{
        int r = agent_frame_writer_finish(w);

        if (r < 0) {
                agent_frame_writer_release(w);
                agent_conn_reply_error(c, -r, r == -E2BIG ? "reply too large" : "cannot build reply");
                return;
        }
        c->reply = *w;
        c->reply_off = 0;
        *w = (struct agent_frame_writer){};
        conn_flush(c);
}

static void conn_on_hello(struct agent_conn *c)
{
        struct agent_frame_writer w;

        agent_frame_writer_begin(&w, AGENT_MSG_HELLO_REPLY);
        agent_frame_writer_put_str(&w, AGENT_F_VERSION, SPACE_VERSION);
        agent_frame_writer_put_u32(&w, AGENT_F_AGENT_PID, (uint32_t)getpid());
        agent_frame_writer_put_str(&w, AGENT_F_BOOT_ID, c->server->boot_id);
        agent_conn_reply(c, &w);
}

static void conn_on_exec(struct agent_conn *c, const struct agent_frame *f, uint8_t **payload)
{
        const char *reason = NULL;
        struct agent_command *cmd;
        int r;

        r = agent_command_start(c->server, c, f, payload, &cmd, &reason);
        if (r < 0) {
                agent_conn_reply_error(c, -r, reason);
                return;
        }
        c->command = cmd;
        agent_conn_update_events(c);
}

/* Handles one frame; may take *payload. */
static void conn_dispatch(struct agent_conn *c, const struct agent_frame *f, uint8_t **payload)
{
        size_t cursor = 0;
        uint16_t tag;
        const uint8_t *data;
        uint32_t len;
        int r;

        /* A frame whose fields do not add up is malformed: drop the connection. */
        while ((r = agent_frame_next_field(f, &cursor, &tag, &data, &len)) > 0)
                ;
        if (r < 0) {
                agent_conn_close(c);
                return;
        }

        switch (f->type) {
        case AGENT_MSG_HELLO:
                conn_on_hello(c);
                break;
        case AGENT_MSG_EXEC:
                conn_on_exec(c, f, payload);
                break;
        case AGENT_MSG_JOB_START:
        case AGENT_MSG_JOB_SUBSCRIBE:
        case AGENT_MSG_JOB_ACK:
        case AGENT_MSG_JOB_INPUT:
        case AGENT_MSG_JOB_CLOSE_STDIN:
        case AGENT_MSG_JOB_SIGNAL:
        case AGENT_MSG_JOB_RESIZE:
        case AGENT_MSG_JOB_EXEC_VERDICT:
                agent_job_requests_handle(c, f, payload);
                break;
        case AGENT_MSG_PORT_CONNECT:
                agent_port_connect(c, f);
                break;
        default: {
                char msg[64];
                if (agent_files_handles(f->type)) {
                        agent_files_dispatch(c, f);
                        break;
                }
                snprintf(msg, sizeof msg, "unsupported message type %u", f->type);
                agent_conn_reply_error(c, EOPNOTSUPP, msg);
        }
        }
}

/* A peer of another protocol version (not from this agent's build): one ERROR frame in
 * this version, so that it reads "protocol not supported" rather than a bare hang-up. */
static void conn_refuse_version(struct agent_conn *c)
{
        struct agent_frame_writer w;
        char msg[96];

        snprintf(msg, sizeof msg, "space-agent speaks agent protocol version %d, the request came in version %u",
                 AGENT_PROTOCOL_VERSION, c->reader.header[5]);
        agent_conn_error_frame(&w, EPROTONOSUPPORT, msg);
        if (agent_frame_writer_finish(&w) == 0)
                (void)send(c->watch.fd, w.data, w.len, MSG_NOSIGNAL | MSG_DONTWAIT);
        agent_frame_writer_release(&w);
}

static void conn_read_requests(struct agent_conn *c)
{
        for (int i = 0; i < REQUESTS_PER_WAKEUP; i++) {
                if (c->dead || c->command || c->reply.data || c->file_watch)
                        return;

                int r = agent_frame_reader_fill(&c->reader, c->watch.fd);
                if (r == 0)
                        return;
                if (r == -EPROTONOSUPPORT)
                        conn_refuse_version(c);
                if (r < 0) {
                        agent_conn_close(c);
                        return;
                }

                struct agent_frame f;
                uint8_t *payload = NULL;
                agent_frame_reader_take(&c->reader, &f, &payload);
                conn_dispatch(c, &f, &payload);
                /* Not kept by the request: the next frame (an upload's next chunk) reuses it. */
                if (c->dead)
                        free(payload);
                else
                        agent_frame_reader_recycle(&c->reader, payload, f.payload_len);
        }
}

static void conn_on_event(struct agent_watch *w, uint32_t events)
{
        struct agent_conn *c = agent_container_of(w, struct agent_conn, watch);

        if (events & EPOLLERR) {
                agent_conn_close(c);
                return;
        }
        if (c->file_watch) {
                agent_file_watch_on_conn(c->file_watch, events);
                return;
        }
        if (c->reply.data) {
                conn_flush(c);
                return;
        }
        if (c->subscriber) {
                if (events & EPOLLOUT)
                        agent_subscriber_flush(c->server);
                if (events & (EPOLLIN | EPOLLHUP))
                        conn_read_requests(c);
                return;
        }
        if (c->command) {
                if (events & (EPOLLHUP | EPOLLRDHUP))
                        agent_conn_close(c);
                return;
        }
        conn_read_requests(c);
}

int agent_conn_new(struct agent_server *s, int fd)
{
        struct agent_conn *c = calloc(1, sizeof *c);
        int r;

        if (!c) {
                close(fd);
                return -ENOMEM;
        }
        c->server = s;
        agent_watch_init(&c->watch);
        r = agent_server_watch_add(s, &c->watch, fd, EPOLLIN, conn_on_event);
        if (r < 0) {
                free(c);
                return r;
        }
        c->next = s->conns;
        s->conns = c;
        s->n_conns++;
        return 0;
}

void agent_conn_command_done(struct agent_conn *c, struct agent_frame_writer *reply)
{
        c->command = NULL;
        if (c->dead) {
                agent_frame_writer_release(reply);
                return;
        }
        /* Requests the client pipelined behind this one wait in the socket buffer;
         * epoll reports them once the reply is out and EPOLLIN is back. */
        agent_conn_reply(c, reply);
}

void agent_conn_close(struct agent_conn *c)
{
        if (c->dead)
                return;
        c->dead = true;
        agent_subscriber_detach(c->server, c);
        if (c->command) {
                agent_command_abort(c->command);
                c->command = NULL;
        }
        agent_file_upload_free(TAKE_PTR(c->upload));
        agent_file_download_free(TAKE_PTR(c->download));
        if (c->file_watch)
                agent_file_watch_stop(c->file_watch);
        agent_server_watch_close(c->server, &c->watch);
        agent_frame_reader_release(&c->reader);
        agent_frame_writer_release(&c->reply);
        c->server->n_conns--;
}

void agent_conn_free(struct agent_conn *c)
{
        agent_file_watch_free(c->file_watch);
        free(c);
}
