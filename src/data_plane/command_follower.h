/* command_follower: follows one command's output log (command_log.h) from a position to
 * its end, waking on the command's channel (command_channels.h), for a front door that
 * renders what it is handed: the v1 SSE route (api/command_events_route.c) and the E2B
 * process stream (e2b/e2b_process_stream.c). The algorithm lives here once: read what the
 * log has, wait for more or for the end, and when the command has ended in the store but
 * its log says nothing more (it never wrote one, or the log went with its sandbox), hand
 * over the store's end. Between waits of at most a second it looks at the client's socket
 * and at shutdown, so a departed client is noticed within about a second whatever the
 * door's keepalive is. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "data_plane/command_log.h"
#include "state_store/state_store.h"

struct spaced_context;
struct command_follower;

/* What a door does with what the follower reads; each returns 0 or -errno (which ends the
 * stream). cls is the door's. */
struct command_follower_sink {
        /* An output record, or the exit record (the last: the follower is done after it). */
        int (*record)(void *cls, const struct command_log_record *rec);
        /* Records first..last were dropped by the log's cap before they were read; NULL
         * when the door has no word for it. */
        int (*dropped)(void *cls, uint64_t first, uint64_t last);
        /* The command ended (the store's row) and its log says nothing more: log_ended when
         * the follower had already passed the log's exit record (it was handed over, or the
         * reader started after it). The follower is done after it. */
        int (*ended)(void *cls, const struct command_record *rec, bool log_ended);
};

/* A follower of command_id of sandbox_id after sequence number after (0: from the start).
 * client_fd is the connection's socket, only polled for a hang-up (-1: not watched). */
int command_follower_new(struct spaced_context *ctx, const char *sandbox_id, const char *command_id, uint64_t after,
                         int client_fd, const struct command_follower_sink *sink, void *cls, struct command_follower **ret);
void command_follower_free(struct command_follower *f);

/* Hands the sink what comes next, waiting up to wait_ms for it. Returns 1 when the sink got
 * something (or the follower became done), 0 when wait_ms passed with nothing new,
 * -EPIPE when the client went away, -ESHUTDOWN when spaced is stopping, or another -errno
 * (the log or the store could not be read, or the sink failed). */
int command_follower_next(struct command_follower *f, int wait_ms);
/* Whether the end was handed over: nothing more will come. */
bool command_follower_done(const struct command_follower *f);
/* The sequence number of the last record (or drop) handed over. */
uint64_t command_follower_position(const struct command_follower *f);
