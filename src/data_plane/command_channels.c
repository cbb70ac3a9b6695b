/* command_channels: per-sandbox output threads, and watches for readers. */
#include "data_plane/command_channels.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent_protocol/agent_client.h"
#include "agent_protocol/agent_job_client.h"
#include "cleanup.h"
#include "data_plane/command_log.h"
#include "data_plane/exec_watch_hooks.h"
#include "data_plane/sandbox_logs.h"
#include "runtime/runtime_registry.h"
#include "spaced/dir_tree.h"
#include "spaced/log.h"
#include "spaced/metrics.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

#define WATCH_BUCKETS 256
#define RECONNECT_DELAY_MS 250
#define RECONNECT_ATTEMPTS 40 /* ~10 s of a running sandbox whose agent cannot be reached */
#define OPEN_LOGS_MAX 64
#define SUBSCRIBE_TIMEOUT_MS 2000
#define WAIT_RUNNING_MS 500

struct watch {
        struct watch *next;
        char command_id[32];
        uint64_t last_seq;
        bool ended;
        unsigned waiters;
        pthread_cond_t cond;
};

struct open_log {
        struct open_log *next;
        char command_id[32];
        struct command_log_writer *w;
};

struct channel {
        struct channel *next;
        struct command_channels *chs;
        char sandbox_id[32];
        pthread_mutex_t start_lock;
        int fd; /* the output channel while connected, under chs->lock */
        bool running;
        unsigned starters; /* holders of (or waiters for) start_lock, under chs->lock */
        struct open_log *logs;
        /* the per-sandbox cap: bytes its logs hold (an upper bound), and when to trim next */
        bool log_bytes_known;
        uint64_t log_bytes, log_trim_at;
};

struct command_channels {
        struct spaced_context *ctx;
        pthread_mutex_t lock;
        struct channel *channels;
        struct watch *watches[WATCH_BUCKETS];
        bool stopping;
};

const char *command_lost_message(const char *reason)
{
        static const struct {
                const char *reason, *message;
        } messages[] = {
                { "sandbox_destroyed", "the sandbox was destroyed" },
                { "sandbox_stopped", "the sandbox was stopped" },
                { "sandbox_failed", "the sandbox failed" },
                { "agent_unreachable", "the sandbox's agent stopped answering" },
                { "agent_restarted", "the sandbox's agent does not know this command" },
                { "approval_denied", "the command was denied by an approver (docs/governance.md)" },
                { "approval_expired", "nobody approved the command in time (docs/governance.md)" },
                { "policy_denied", "approved, but a policy denies the command now (docs/governance.md)" },
                { "sandbox_not_running", "approved, but the sandbox was not running" },
                { "start_failed", "approved, but the command could not be started" },
        };
        for (size_t i = 0; i < sizeof(messages) / sizeof(messages[0]); i++)
                if (strcmp(messages[i].reason, reason) == 0)
                        return messages[i].message;
        return "the command's output is gone";
}

void command_channels_log_dir(const struct spaced_context *ctx, const char *sandbox_id, const char *command_id, char *buf,
                              size_t size)
{
        if (command_id)
                snprintf(buf, size, "%s/command-logs/%s/%s", ctx->cfg.state_dir, sandbox_id, command_id);
        else
                snprintf(buf, size, "%s/command-logs/%s", ctx->cfg.state_dir, sandbox_id);
}

/* ---- watches ---- */

static unsigned bucket_of(const char *id)
{
        unsigned h = 5381;
        for (const char *p = id; *p; p++)
                h = h * 33 + (unsigned char)*p;
        return h % WATCH_BUCKETS;
}

static struct watch **watch_slot(struct command_channels *chs, const char *id)
{
        struct watch **p = &chs->watches[bucket_of(id)];
        while (*p && strcmp((*p)->command_id, id) != 0)
                p = &(*p)->next;
        return p;
}

static void watch_unlink_if_done(struct watch **slot)
{
        struct watch *w = *slot;
        if (!w->ended || w->waiters)
                return;
        *slot = w->next;
        pthread_cond_destroy(&w->cond);
        free(w);
}

void command_channels_notify(struct command_channels *chs, const char *command_id, uint64_t last_seq, bool ended)
{
        pthread_mutex_lock(&chs->lock);
        struct watch **slot = watch_slot(chs, command_id);
        if (!*slot && !ended) {
                struct watch *w = calloc(1, sizeof(*w));
                if (w) {
                        snprintf(w->command_id, sizeof(w->command_id), "%s", command_id);
                        pthread_condattr_t attr;
                        pthread_condattr_init(&attr);
                        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
                        pthread_cond_init(&w->cond, &attr);
                        pthread_condattr_destroy(&attr);
                        *slot = w;
                }
        }
        if (*slot) {
                struct watch *w = *slot;
                if (last_seq > w->last_seq)
                        w->last_seq = last_seq;
                w->ended |= ended;
                pthread_cond_broadcast(&w->cond);
                watch_unlink_if_done(slot);
        }
        pthread_mutex_unlock(&chs->lock);
}

enum command_wait command_channels_wait(struct command_channels *chs, const char *command_id, uint64_t seen_seq, bool seen_end,
                                        int timeout_ms)
{
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
        }
        enum command_wait changed = COMMAND_WAIT_NOT_LIVE;
        pthread_mutex_lock(&chs->lock);
        struct watch **slot = watch_slot(chs, command_id);
        struct watch *w = *slot;
        /* No watch: the command is not live here (ended, or no channel): look at the log. */
        if (w) {
                w->waiters++;
                while (w->last_seq <= seen_seq && !(w->ended && !seen_end) && !chs->stopping)
                        if (pthread_cond_timedwait(&w->cond, &chs->lock, &until) == ETIMEDOUT)
                                break;
                changed = w->last_seq > seen_seq || (w->ended && !seen_end) ? COMMAND_WAIT_CHANGED : COMMAND_WAIT_TIMEOUT;
                w->waiters--;
                watch_unlink_if_done(watch_slot(chs, command_id));
        }
        pthread_mutex_unlock(&chs->lock);
        return changed;
}

/* ---- the channel's logs ---- */

static struct command_log_writer *channel_log(struct channel *ch, const char *command_id)
{
        struct open_log **p = &ch->logs;
        size_t n = 0;
        for (; *p; p = &(*p)->next, n++)
                if (strcmp((*p)->command_id, command_id) == 0)
                        return (*p)->w;
        if (n >= OPEN_LOGS_MAX) { /* close the oldest-opened */
                struct open_log *old = ch->logs;
                ch->logs = old->next;
                command_log_close(old->w);
                free(old);
        }
        char dir[PATH_MAX];
        command_channels_log_dir(ch->chs->ctx, ch->sandbox_id, command_id, dir, sizeof(dir));
        struct open_log *l = calloc(1, sizeof(*l));
        if (!l)
                return NULL;
        int r = command_log_open(dir, ch->chs->ctx->cfg.command_log_cap, &l->w);
        if (r < 0) {
                log_warn("command.log_open_failed", "sandbox=%s command=%s dir=%s error=\"%s\"", ch->sandbox_id, command_id, dir,
                         strerror(-r));
                free(l);
                return NULL;
        }
        command_log_set_durable(l->w, ch->chs->ctx->cfg.durability_power);
        snprintf(l->command_id, sizeof(l->command_id), "%s", command_id);
        l->next = ch->logs;
        ch->logs = l;
        return l->w;
}

/* Whether command_id is a starting or running command of the channel's sandbox: only those
 * get output logs, so an agent cannot make logs (and use disk) for ids it makes up. */
static bool channel_job_live(struct channel *ch, const char *command_id)
{
        for (struct open_log *l = ch->logs; l; l = l->next)
                if (strcmp(l->command_id, command_id) == 0)
                        return true;
        struct command_record rec;
        if (STORE(ch->chs->ctx, command_get, ch->sandbox_id, command_id, &rec) < 0)
                return false;
        bool live = rec.state == COMMAND_STARTING || rec.state == COMMAND_RUNNING;
        command_record_release(&rec);
        return live;
}

static void channel_log_close(struct channel *ch, const char *command_id)
{
        for (struct open_log **p = &ch->logs; *p; p = &(*p)->next)
                if (strcmp((*p)->command_id, command_id) == 0) {
                        struct open_log *l = *p;
                        *p = l->next;
                        command_log_close(l->w);
                        free(l);
                        return;
                }
}

/* Counts an appended record against the sandbox's cap (--sandbox-log-cap) and, past it,
 * drops the sandbox's oldest output down to three quarters of the cap. */
static void channel_logs_account(struct channel *ch, size_t len)
{
        uint64_t cap = ch->chs->ctx->cfg.sandbox_log_cap;
        char root[PATH_MAX];
        command_channels_log_dir(ch->chs->ctx, ch->sandbox_id, NULL, root, sizeof(root));
        if (!ch->log_bytes_known) {
                if (sandbox_logs_usage(root, &ch->log_bytes) < 0)
                        ch->log_bytes = 0;
                ch->log_bytes_known = true;
                ch->log_trim_at = cap;
        }
        ch->log_bytes += COMMAND_LOG_HEADER_SIZE + len;
        metrics_command_log(ch->chs->ctx->metrics, COMMAND_LOG_HEADER_SIZE + len, 0);
        if (ch->log_bytes <= ch->log_trim_at)
                return;
        uint64_t left = 0;
        int r = sandbox_logs_trim(root, cap - cap / 4, &left);
        if (r < 0) {
                log_warn("command.sandbox_log_trim_failed", "sandbox=%s error=\"%s\"", ch->sandbox_id, strerror(-r));
                return;
        }
        log_info("command.sandbox_log_trimmed", "sandbox=%s bytes_before=%" PRIu64 " bytes_after=%" PRIu64 " cap=%" PRIu64,
                 ch->sandbox_id, ch->log_bytes, left, cap);
        metrics_command_log(ch->chs->ctx->metrics, 0, ch->log_bytes > left ? ch->log_bytes - left : 0);
        ch->log_bytes = left;
        /* What could not go (running commands' current segments) does not make every
         * append rescan: the next trim waits for another quarter of the cap. */
        ch->log_trim_at = left + cap / 4 > cap ? left + cap / 4 : cap;
}

/* Appends the final record (unless the log is going away) and records how the command ended. */
static void command_end(struct channel *ch, struct command_record *rec, json_t *exit_json, bool write_log)
{
        struct command_log_writer *w = write_log ? channel_log(ch, rec->id) : NULL;
        _cleanup_free_ char *text = json_dumps(exit_json, JSON_COMPACT);
        uint64_t seq = 0;
        if (w && text) {
                seq = command_log_last_seq(w) + 1;
                int r = command_log_append(w, seq, COMMAND_LOG_EXIT, text, strlen(text));
                if (r < 0)
                        log_warn("command.log_append_failed", "sandbox=%s command=%s error=\"%s\"", ch->sandbox_id, rec->id,
                                 strerror(-r));
                else
                        channel_logs_account(ch, strlen(text));
        }
        rec->finished_at_ms = wallclock_now_ms();
        int r = STORE(ch->chs->ctx, command_update, rec);
        if (r < 0)
                log_warn("command.update_failed", "sandbox=%s command=%s error=\"%s\"", ch->sandbox_id, rec->id, strerror(-r));
        channel_log_close(ch, rec->id);
        command_channels_notify(ch->chs, rec->id, seq, true);
        log_info("command.ended", "sandbox=%s command=%s state=%s exit_code=%d reason=\"%s\"", ch->sandbox_id, rec->id,
                 command_state_name(rec->state), rec->exit_code, LOG_ESC(rec->reason));
}

/* Ends every unfinished command of the sandbox that is not in keep (a JOB_SUBSCRIBED frame,
 * or NULL for all) as lost, for reason. */
static void channel_end_unknown(struct channel *ch, const struct agent_frame *keep, const char *reason, bool write_log)
{
        const char *message = command_lost_message(reason);
        struct command_record *recs = NULL;
        size_t n = 0;
        if (STORE(ch->chs->ctx, command_list, ch->sandbox_id, true, NULL, &recs, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                bool known = false;
                size_t cursor = 0;
                uint16_t tag;
                const uint8_t *data;
                uint32_t len;
                while (keep && !known && agent_frame_next_field(keep, &cursor, &tag, &data, &len) > 0)
                        known = tag == AGENT_F_JOB_ID && len == strlen(recs[i].id) && memcmp(data, recs[i].id, len) == 0;
                if (known)
                        continue;
                recs[i].state = COMMAND_LOST;
                snprintf(recs[i].reason, sizeof(recs[i].reason), "%s", reason);
                json_t *exit_json =
                        json_pack("{s:n, s:b, s:s, s:s}", "exit_code", "lost", 1, "reason", reason, "message", message);
                command_end(ch, &recs[i], exit_json, write_log);
                json_decref(exit_json);
        }
        command_record_array_free(recs, n);
}

/* ---- the channel thread ---- */

static void on_output(struct channel *ch, int fd, const struct agent_frame *f, const char *job_id)
{
        uint64_t seq = 0;
        uint8_t stream = 0;
        const uint8_t *data = NULL;
        uint32_t len = 0;
        if (agent_frame_get_u64(f, AGENT_F_SEQ, &seq) != 1 || agent_frame_get_u8(f, AGENT_F_STREAM, &stream) != 1)
                return;
        (void)agent_frame_find(f, AGENT_F_DATA, &data, &len);
        if (!channel_job_live(ch, job_id)) {
                /* Not a running command of this sandbox (an agent's invention, or one spaced
                 * has ended): no log is made for it, and the agent may forget it. */
                (void)agent_job_client_ack(fd, job_id, seq);
                return;
        }
        struct command_log_writer *w = channel_log(ch, job_id);
        if (!w)
                return; /* not acknowledged: the agent keeps it, and resends after a reconnect */
        uint64_t last = command_log_last_seq(w);
        if (seq == last + 1) {
                enum command_log_kind kind = stream == AGENT_STREAM_STDERR ? COMMAND_LOG_STDERR
                        : stream == AGENT_STREAM_PTY                       ? COMMAND_LOG_PTY
                                                                           : COMMAND_LOG_STDOUT;
                int r = command_log_append(w, seq, kind, data, len);
                if (r < 0) {
                        log_warn("command.log_append_failed", "sandbox=%s command=%s seq=%" PRIu64 " error=\"%s\"",
                                 ch->sandbox_id, job_id, seq, strerror(-r));
                        return;
                }
                command_channels_notify(ch->chs, job_id, seq, false);
                channel_logs_account(ch, len);
        } else if (seq > last + 1) {
                log_warn("command.sequence_gap", "sandbox=%s command=%s have=%" PRIu64 " got=%" PRIu64, ch->sandbox_id, job_id,
                         last, seq);
                return;
        }
        /* seq <= last: a resend of what the log already holds. */
        (void)agent_job_client_ack(fd, job_id, seq);
}

static void on_exit_event(struct channel *ch, int fd, const struct agent_frame *f, const char *job_id)
{
        uint64_t seq = 0, duration_us = 0;
        int32_t code = 0, sig = 0, error = 0;
        uint8_t timed_out = 0;
        const uint8_t *msg = NULL;
        uint32_t msg_len = 0;
        struct command_record rec;
        if (agent_frame_get_u64(f, AGENT_F_SEQ, &seq) != 1)
                return;
        agent_frame_get_i32(f, AGENT_F_EXIT_CODE, &code);
        agent_frame_get_i32(f, AGENT_F_TERM_SIGNAL, &sig);
        agent_frame_get_u8(f, AGENT_F_TIMED_OUT, &timed_out);
        agent_frame_get_u64(f, AGENT_F_DURATION_US, &duration_us);
        agent_frame_get_i32(f, AGENT_F_ERRNO, &error);
        (void)agent_frame_find(f, AGENT_F_MESSAGE, &msg, &msg_len);

        struct command_log_writer *w = channel_log(ch, job_id);
        if (!w)
                return;
        if (seq <= command_log_last_seq(w)) {
                (void)agent_job_client_ack(fd, job_id, seq);
                return;
        }
        /* Under the start lock, so a start still recording "running" does not overwrite the exit. */
        command_channels_lock_starts(ch->chs, ch->sandbox_id);
        if (STORE(ch->chs->ctx, command_get, ch->sandbox_id, job_id, &rec) < 0) {
                command_channels_unlock_starts(ch->chs, ch->sandbox_id);
                (void)agent_job_client_ack(fd, job_id, seq); /* not ours (any more): let the agent forget it */
                return;
        }
        rec.state = COMMAND_EXITED;
        rec.exit_code = code;
        rec.term_signal = sig;
        rec.timed_out = timed_out != 0;
        if (msg_len)
                snprintf(rec.reason, sizeof(rec.reason), "%.*s", (int)msg_len, (const char *)msg);
        json_t *exit_json = json_pack("{s:i, s:i, s:b, s:I}", "exit_code", code, "signal", sig, "timed_out", timed_out != 0,
                                      "duration_ms", (json_int_t)(duration_us / 1000));
        if (msg_len)
                json_object_set_new(exit_json, "message", json_stringn((const char *)msg, msg_len));
        /* The agent's seq for the exit is the log's next. */
        bool stored = seq == command_log_last_seq(w) + 1;
        if (stored)
                command_end(ch, &rec, exit_json, true);
        command_channels_unlock_starts(ch->chs, ch->sandbox_id);
        if (stored)
                (void)agent_job_client_ack(fd, job_id, seq);
        json_decref(exit_json);
        command_record_release(&rec);
}

#define EXEC_CHECK_ARGS_MAX 8192

/* A JOB_EXEC_CHECK: an exec of a watched command waits for the verdict. Fail closed: what
 * cannot be decided (no hooks, a malformed check, a command spaced does not run) is denied. */
static void on_exec_check(struct channel *ch, int fd, const struct agent_frame *f, const char *job_id)
{
        uint64_t id = 0;
        uint32_t pid = 0;
        if (agent_frame_get_u64(f, AGENT_F_EXEC_CHECK_ID, &id) != 1)
                return;
        (void)agent_frame_get_u32(f, AGENT_F_JOB_PID, &pid);
        _cleanup_free_ char *path = NULL, *real = NULL;
        _cleanup_free_ char **argv = calloc(EXEC_CHECK_ARGS_MAX + 1, sizeof(char *));
        size_t argc = 0, cursor = 0;
        uint16_t tag;
        const uint8_t *data;
        uint32_t len;
        bool bad = !argv;
        while (!bad && agent_frame_next_field(f, &cursor, &tag, &data, &len) > 0) {
                char **slot = tag == AGENT_F_FILE_PATH ? &path : tag == AGENT_F_EXEC_REAL ? &real : NULL;
                if (tag == AGENT_F_ARGV) {
                        if (argc >= EXEC_CHECK_ARGS_MAX)
                                bad = true;
                        else
                                slot = &argv[argc++];
                }
                if (!slot)
                        continue;
                if (memchr(data, 0, len) || *slot) {
                        bad = true;
                        continue;
                }
                *slot = strndup((const char *)data, len);
                bad = !*slot;
        }
        char msg[512] = "exec denied: the check could not be made";
        bool allow = false;
        if (!bad && path && real && argc > 0 && ch->chs->ctx->exec_watch && channel_job_live(ch, job_id)) {
                struct exec_watch_check c = { .sandbox_id = ch->sandbox_id,
                                              .command_id = job_id,
                                              .pid = pid,
                                              .path = path,
                                              .real = real,
                                              .argv = (const char *const *)argv };
                allow = ch->chs->ctx->exec_watch->decide(ch->chs->ctx, &c, msg, sizeof(msg)) == 0;
        }
        for (size_t i = 0; argv && i < argc; i++)
                free(argv[i]);
        (void)agent_job_client_exec_verdict(fd, id, allow, allow ? NULL : msg);
}

/* Reads events until the connection ends. */
static void channel_pump(struct channel *ch, int fd)
{
        for (;;) {
                struct agent_frame f;
                _cleanup_free_ uint8_t *buf = NULL;
                /* One event at a time, of bounded size; an agent that sends more loses its channel. */
                if (agent_client_read(fd, AGENT_CLIENT_EVENT_MAX, 0, &f, &buf) < 0)
                        return;
                const uint8_t *id;
                uint32_t len;
                char job_id[64];
                if (agent_frame_find(&f, AGENT_F_JOB_ID, &id, &len) != 1 || len == 0 || len >= sizeof(job_id))
                        continue;
                memcpy(job_id, id, len);
                job_id[len] = 0;
                if (f.type == AGENT_MSG_JOB_OUTPUT)
                        on_output(ch, fd, &f, job_id);
                else if (f.type == AGENT_MSG_JOB_EXIT)
                        on_exit_event(ch, fd, &f, job_id);
                else if (f.type == AGENT_MSG_JOB_EXEC_CHECK)
                        on_exec_check(ch, fd, &f, job_id);
        }
}

static bool sandbox_may_have_agent(enum sandbox_state s)
{
        return s == SANDBOX_RUNNING || s == SANDBOX_PAUSED || s == SANDBOX_CREATING || s == SANDBOX_STARTING;
}

static void sleep_ms(int ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

/* Ends the sandbox's unfinished commands because its agent is gone. */
static void channel_finish(struct channel *ch, const struct sandbox *sb)
{
        const char *reason = "agent_unreachable";
        bool destroyed = !sb || sb->state == SANDBOX_DESTROYED || sb->state == SANDBOX_DESTROYING;
        if (destroyed)
                reason = "sandbox_destroyed";
        else if (sb && (sb->state == SANDBOX_STOPPED || sb->state == SANDBOX_STOPPING || sb->state == SANDBOX_RESTORING))
                reason = "sandbox_stopped";
        else if (sb && sb->state == SANDBOX_FAILED)
                reason = "sandbox_failed";
        command_channels_lock_starts(ch->chs, ch->sandbox_id);
        channel_end_unknown(ch, NULL, reason, !destroyed);
        command_channels_unlock_starts(ch->chs, ch->sandbox_id);
        if (destroyed) { /* its logs go with it (the destroy removes them too) */
                char dir[PATH_MAX];
                command_channels_log_dir(ch->chs->ctx, ch->sandbox_id, NULL, dir, sizeof(dir));
                (void)command_log_remove(dir);
        }
}

static bool channel_stopping(struct channel *ch)
{
        pthread_mutex_lock(&ch->chs->lock);
        bool stop = ch->chs->stopping;
        pthread_mutex_unlock(&ch->chs->lock);
        return stop;
}

static void channel_put_locked(struct command_channels *chs, struct channel *ch);

static void *channel_main(void *arg)
{
        struct channel *ch = arg;
        struct spaced_context *ctx = ch->chs->ctx;
        int failures = 0;
        while (!channel_stopping(ch)) {
                struct sandbox sb;
                if (STORE(ctx, sandbox_get, ch->sandbox_id, &sb) < 0) {
                        channel_finish(ch, NULL);
                        break;
                }
                bool alive = sandbox_may_have_agent(sb.state);
                if (!alive || failures >= RECONNECT_ATTEMPTS) {
                        channel_finish(ch, &sb);
                        sandbox_release(&sb);
                        break;
                }
                if (sb.state != SANDBOX_RUNNING) {
                        /* Paused (a frozen agent would not answer) or not up yet: look again soon. */
                        sandbox_release(&sb);
                        sleep_ms(WAIT_RUNNING_MS);
                        continue;
                }
                /* Starts wait while the agent says which jobs it has and the others are ended, so a
                 * command started meanwhile is never mistaken for one the agent lost. A frozen
                 * agent does not answer: give up the lock and try again later. */
                struct agent_frame known;
                _cleanup_free_ uint8_t *buf = NULL;
                struct space_error unused;
                command_channels_lock_starts(ch->chs, ch->sandbox_id);
                int fd = runtime_registry_agent_connect(&ctx->runtimes, &sb, SUBSCRIBE_TIMEOUT_MS, &unused);
                sandbox_release(&sb);
                if (fd >= 0) {
                        int r = agent_job_client_subscribe(fd, &known, &buf);
                        if (r < 0) {
                                close(fd);
                                fd = r;
                        }
                }
                if (fd >= 0)
                        channel_end_unknown(ch, &known, "agent_restarted", true);
                command_channels_unlock_starts(ch->chs, ch->sandbox_id);
                if (fd < 0) {
                        if (fd != -EAGAIN && fd != -EWOULDBLOCK)
                                failures++;
                        sleep_ms(RECONNECT_DELAY_MS);
                        continue;
                }
                failures = 0;
                pthread_mutex_lock(&ch->chs->lock);
                ch->fd = fd;
                pthread_mutex_unlock(&ch->chs->lock);
                log_debug("command.channel_open", "sandbox=%s", ch->sandbox_id);

                channel_pump(ch, fd);

                pthread_mutex_lock(&ch->chs->lock);
                ch->fd = -1;
                pthread_mutex_unlock(&ch->chs->lock);
                close(fd);
                if (!channel_stopping(ch))
                        sleep_ms(50); /* the agent may be gone for good: look at the sandbox again */
        }
        while (ch->logs) {
                struct open_log *l = ch->logs;
                ch->logs = l->next;
                command_log_close(l->w);
                free(l);
        }
        struct command_channels *chs = ch->chs;
        pthread_mutex_lock(&chs->lock);
        ch->running = false;
        channel_put_locked(chs, ch);
        pthread_mutex_unlock(&chs->lock);
        return NULL;
}

static struct channel *channel_find(struct command_channels *chs, const char *sandbox_id)
{
        for (struct channel *ch = chs->channels; ch; ch = ch->next)
                if (strcmp(ch->sandbox_id, sandbox_id) == 0)
                        return ch;
        return NULL;
}

/* A channel lives while its thread runs or someone holds or waits for its start lock; the
 * last of them frees it (under chs->lock), so a sandbox's channel goes with its last use. */
static void channel_put_locked(struct command_channels *chs, struct channel *ch)
{
        if (ch->running || ch->starters > 0)
                return;
        for (struct channel **p = &chs->channels; *p; p = &(*p)->next)
                if (*p == ch) {
                        *p = ch->next;
                        break;
                }
        pthread_mutex_destroy(&ch->start_lock);
        free(ch);
}

static struct channel *channel_get(struct command_channels *chs, const char *sandbox_id)
{
        struct channel *ch = channel_find(chs, sandbox_id);
        if (ch)
                return ch;
        ch = calloc(1, sizeof(*ch));
        if (!ch)
                return NULL;
        ch->chs = chs;
        ch->fd = -1;
        snprintf(ch->sandbox_id, sizeof(ch->sandbox_id), "%s", sandbox_id);
        pthread_mutex_init(&ch->start_lock, NULL);
        ch->next = chs->channels;
        chs->channels = ch;
        return ch;
}

int command_channels_ensure(struct command_channels *chs, const char *sandbox_id)
{
        pthread_mutex_lock(&chs->lock);
        struct channel *ch = channel_get(chs, sandbox_id);
        int r = 0;
        if (!ch)
                r = -ENOMEM;
        else if (!ch->running && !chs->stopping) {
                pthread_t t;
                pthread_attr_t attr;
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                pthread_attr_setstacksize(&attr, 256 << 10);
                ch->running = true; /* before the thread can end and put it */
                r = -pthread_create(&t, &attr, channel_main, ch);
                pthread_attr_destroy(&attr);
                ch->running = r == 0;
        }
        if (ch)
                channel_put_locked(chs, ch); /* one made while stopping, or whose thread failed */
        pthread_mutex_unlock(&chs->lock);
        return r;
}

void command_channels_lock_starts(struct command_channels *chs, const char *sandbox_id)
{
        pthread_mutex_lock(&chs->lock);
        struct channel *ch = channel_get(chs, sandbox_id);
        if (ch)
                ch->starters++;
        pthread_mutex_unlock(&chs->lock);
        if (ch)
                pthread_mutex_lock(&ch->start_lock);
}

void command_channels_unlock_starts(struct command_channels *chs, const char *sandbox_id)
{
        pthread_mutex_lock(&chs->lock);
        struct channel *ch = channel_find(chs, sandbox_id);
        if (ch) {
                pthread_mutex_unlock(&ch->start_lock);
                ch->starters--;
                channel_put_locked(chs, ch);
        }
        pthread_mutex_unlock(&chs->lock);
}

void command_channels_resume_all(struct command_channels *chs)
{
        struct command_record *recs = NULL;
        size_t n = 0;
        if (STORE(chs->ctx, command_list, NULL, true, NULL, &recs, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++) {
                struct sandbox sb;
                bool here = true; /* another node's agent is not reachable from here */
                if (STORE(chs->ctx, sandbox_get, recs[i].sandbox_id, &sb) == 0) {
                        here = spaced_node_owns(chs->ctx, &sb);
                        sandbox_release(&sb);
                }
                if (!here)
                        continue;
                command_channels_notify(chs, recs[i].id, 0, false);
                command_channels_ensure(chs, recs[i].sandbox_id);
        }
        command_record_array_free(recs, n);
}

static bool sandbox_keeps_logs(const char *id, void *userdata)
{
        struct spaced_context *ctx = userdata;
        struct sandbox sb;
        int r = STORE(ctx, sandbox_get, id, &sb);
        if (r < 0)
                return r != -ENOENT; /* keep on a store error: removing is not undoable */
        bool keep = sb.state != SANDBOX_DESTROYED;
        sandbox_release(&sb);
        return keep;
}

void command_channels_remove_orphan_logs(struct spaced_context *ctx)
{
        char root[PATH_MAX];
        snprintf(root, sizeof(root), "%s/command-logs", ctx->cfg.state_dir);
        int n = command_log_sweep(root, sandbox_keeps_logs, ctx);
        if (n > 0)
                log_info("reconcile.orphan_command_logs_removed", "count=%d", n);
}

int command_channels_create(struct spaced_context *ctx, struct command_channels **ret)
{
        struct command_channels *chs = calloc(1, sizeof(*chs));
        if (!chs)
                return -ENOMEM;
        chs->ctx = ctx;
        pthread_mutex_init(&chs->lock, NULL);
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/command-logs", ctx->cfg.state_dir);
        int r = dir_tree_create(dir, 0700);
        if (r < 0) {
                free(chs);
                return r;
        }
        *ret = chs;
        return 0;
}

void command_channels_free(struct command_channels *chs)
{
        if (!chs)
                return;
        /* Threads are detached and may sit in a read from a frozen sandbox: cut their
         * connections and let the process exit end them. Nothing is lost: what they had not
         * acknowledged, the agents resend to the next spaced. */
        pthread_mutex_lock(&chs->lock);
        chs->stopping = true;
        for (struct channel *ch = chs->channels; ch; ch = ch->next)
                if (ch->fd >= 0)
                        shutdown(ch->fd, SHUT_RDWR);
        for (unsigned b = 0; b < WATCH_BUCKETS; b++)
                for (struct watch *w = chs->watches[b]; w; w = w->next)
                        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&chs->lock);
}
