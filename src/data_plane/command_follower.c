#include "data_plane/command_follower.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "data_plane/command_channels.h"
#include "spaced/metrics.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

#define NOT_LIVE_RETRY_MS 200
#define WAIT_STEP_MS 1000 /* how often a waiting follower looks at its client and at shutdown */
#define RECORDS_PER_ROUND 16

struct command_follower {
        struct spaced_context *ctx;
        char sandbox_id[32];
        char command_id[32];
        char log_dir[PATH_MAX];
        struct command_log_reader *reader;
        uint64_t after; /* last sequence number handed over */
        int client_fd;
        const struct command_follower_sink *sink;
        void *cls;
        bool done;
};

int command_follower_new(struct spaced_context *ctx, const char *sandbox_id, const char *command_id, uint64_t after,
                         int client_fd, const struct command_follower_sink *sink, void *cls, struct command_follower **ret)
{
        struct command_follower *f = calloc(1, sizeof(*f));
        if (!f)
                return -ENOMEM;
        f->ctx = ctx;
        snprintf(f->sandbox_id, sizeof(f->sandbox_id), "%s", sandbox_id);
        snprintf(f->command_id, sizeof(f->command_id), "%s", command_id);
        command_channels_log_dir(ctx, sandbox_id, command_id, f->log_dir, sizeof(f->log_dir));
        f->after = after;
        f->client_fd = client_fd;
        f->sink = sink;
        f->cls = cls;
        metrics_stream(ctx->metrics, "command_events", 1);
        *ret = f;
        return 0;
}

void command_follower_free(struct command_follower *f)
{
        if (!f)
                return;
        command_log_reader_close(f->reader);
        metrics_stream(f->ctx->metrics, "command_events", -1);
        free(f);
}

bool command_follower_done(const struct command_follower *f)
{
        return f->done;
}

uint64_t command_follower_position(const struct command_follower *f)
{
        return f->after;
}

/* Whether a reader that has had seq has had the whole log: the record at seq is the exit,
 * or the log holds nothing at seq (it ends before). A log without its exit (the command was
 * lost with its sandbox, the log not removed yet) is not done. */
static bool log_done_at(const char *dir, uint64_t seq)
{
        struct command_log_reader *r = NULL;
        struct command_log_record rec;
        if (seq == 0 || command_log_reader_open(dir, seq - 1, &r) < 0)
                return false;
        int q = command_log_reader_next(r, &rec);
        bool done =
                q == COMMAND_LOG_READ_NONE || (q == COMMAND_LOG_READ_RECORD && rec.seq == seq && rec.kind == COMMAND_LOG_EXIT);
        command_log_reader_close(r);
        return done;
}

/* Hands over what the log has: 1 something, 0 nothing new, -errno failed; the reader's last
 * answer in *last_q (-ENOENT: there is no log). */
static int produce_from_log(struct command_follower *f, int *last_q)
{
        int q = 0, handed = 0;
        if (!f->reader) {
                q = command_log_reader_open(f->log_dir, f->after, &f->reader);
                if (q < 0 && q != -ENOENT)
                        return q;
        }
        for (int n = 0; f->reader && n < RECORDS_PER_ROUND && !f->done; n++) {
                struct command_log_record rec;
                int r = 0;
                q = command_log_reader_next(f->reader, &rec);
                if (q == COMMAND_LOG_READ_RECORD) {
                        r = f->sink->record(f->cls, &rec);
                        f->after = rec.seq;
                        f->done = rec.kind == COMMAND_LOG_EXIT;
                } else if (q == COMMAND_LOG_READ_DROPPED) {
                        if (f->sink->dropped)
                                r = f->sink->dropped(f->cls, rec.dropped_first, rec.dropped_last);
                        f->after = rec.dropped_last;
                } else {
                        break;
                }
                if (r < 0)
                        return r;
                handed = 1;
        }
        *last_q = q;
        if (handed)
                return 1;
        return q < 0 && q != -ENOENT ? q : 0;
}

/* As produce_from_log; and when told to, or when the log is gone, the store is asked how
 * the command ended, and if it has, the end goes over. */
static int produce(struct command_follower *f, bool check_store)
{
        int q = 0;
        int p = produce_from_log(f, &q);
        if (p != 0 || (!check_store && q != -ENOENT))
                return p;
        struct command_record rec;
        int r = STORE(f->ctx, command_get, f->sandbox_id, f->command_id, &rec);
        if (r < 0)
                return r;
        r = 0;
        if (rec.state == COMMAND_EXITED || rec.state == COMMAND_LOST) {
                /* The exit record is written before the store says so: read the log once more,
                 * opening it if it did not exist a moment ago (a command that printed and
                 * ended between the two looks). */
                r = produce_from_log(f, &q);
                if (r == 0) {
                        bool log_ended = q != -ENOENT && log_done_at(f->log_dir, f->after);
                        f->done = true;
                        r = f->sink->ended(f->cls, &rec, log_ended);
                        r = r < 0 ? r : 1;
                }
        }
        command_record_release(&rec);
        return r;
}

/* Whether the client closed its side: then nobody reads, and the stream can end. */
static bool client_gone(const struct command_follower *f)
{
        if (f->client_fd < 0)
                return false;
        struct pollfd p = { .fd = f->client_fd, .events = POLLRDHUP };
        return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

int command_follower_next(struct command_follower *f, int wait_ms)
{
        int64_t deadline_us = monotonic_now_us() + (int64_t)(wait_ms > 0 ? wait_ms : 0) * 1000;
        for (;;) {
                if (f->done)
                        return 1;
                if (atomic_load(&f->ctx->shutting_down))
                        return -ESHUTDOWN;
                int p = produce(f, false);
                if (p != 0)
                        return p;
                if (client_gone(f))
                        return -EPIPE;
                int64_t left_ms = (deadline_us - monotonic_now_us()) / 1000;
                if (left_ms <= 0)
                        return 0;
                int step = left_ms > WAIT_STEP_MS ? WAIT_STEP_MS : (int)left_ms;
                enum command_wait w = command_channels_wait(f->ctx->channels, f->command_id, f->after, false, step);
                if (w != COMMAND_WAIT_NOT_LIVE)
                        continue;
                p = produce(f, true);
                if (p != 0)
                        return p;
                /* still running but not followed yet (spaced starting) */
                struct timespec ts = { 0, (step < NOT_LIVE_RETRY_MS ? step : NOT_LIVE_RETRY_MS) * 1000000L };
                nanosleep(&ts, NULL);
        }
}
