/* agent_conn: one client connection. Serves its requests one at a time: read a frame,
 * answer it (HELLO at once, EXEC when the command is done), then read the next one.
 * While a command runs the socket is watched only for hang-up; a hang-up kills it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "agent_protocol/agent_frame.h"
#include "space_agent/agent_server.h"

struct agent_file_download;
struct agent_file_upload;
struct agent_file_watch;

struct agent_conn {
        struct agent_server *server;
        struct agent_conn *next;
        struct agent_watch watch;
        struct agent_frame_reader reader;
        struct agent_frame_writer reply; /* reply.data != NULL while a reply is being sent */
        size_t reply_off;
        struct agent_command *command;        /* the EXEC being served */
        bool subscriber;                      /* the output channel (agent_subscriber.h) */
        struct agent_file_download *download; /* the file FILE_READ opened, for FILE_FETCH */
        struct agent_file_upload *upload;     /* a FILE_CREATE waiting for its FILE_DATA and FILE_COMMIT */
        struct agent_file_watch *file_watch;  /* after FILE_WATCH the connection carries events */
        bool dead;
};

/* Takes fd (an accepted, non-blocking socket) in every case. */
int agent_conn_new(struct agent_server *s, int fd);
/* The command finished: send *reply (taken) and resume reading. */
void agent_conn_command_done(struct agent_conn *c, struct agent_frame_writer *reply);
/* Sends *w (taken) as the reply, or an ERROR frame if it cannot be built. */
void agent_conn_reply(struct agent_conn *c, struct agent_frame_writer *w);
void agent_conn_reply_error(struct agent_conn *c, int error, const char *message);
/* Builds an ERROR frame (ERRNO, MESSAGE: strerror when NULL) into w, unfinished. */
void agent_conn_error_frame(struct agent_frame_writer *w, int error, const char *message);
/* Recomputes what the connection waits for. */
void agent_conn_update_events(struct agent_conn *c);
/* Drops the connection (killing its command); the server frees it later. */
void agent_conn_close(struct agent_conn *c);
void agent_conn_free(struct agent_conn *c);
