#include "data_plane/command_service.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "data_plane/command_channels.h"
#include "data_plane/exec_watch_hooks.h"
#include "cleanup.h"
#include "runtime/runtime_registry.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"

#define INPUT_RETRY_MS 5
#define INPUT_WAIT_MS 30000

/* An agent error as the API caller should see it. */
static int agent_error(struct space_error *err, int r, const char *what, const char *msg)
{
        switch (-r) {
        case ENOENT:
        case ESRCH:
                return space_error_set(err, SPACE_E_INVALID_STATE, "%s: %s", what, msg[0] ? msg : "the command has exited");
        case EPIPE:
        case ENOTTY:
        case EINVAL:
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s: %s", what, msg[0] ? msg : strerror(-r));
        case EAGAIN:
                return space_error_set(err, SPACE_E_UNAVAILABLE, "%s: the sandbox is at its process limit (pids)", what);
        case ECONNREFUSED:
        case ECONNRESET:
                return space_error_set(err, SPACE_E_INVALID_STATE, "%s: the sandbox's agent is not reachable", what);
        default:
                return space_error_errno(err, r, "%s%s%s", what, msg[0] ? ": " : "", msg);
        }
}

/* A new connection to sb's agent for one request, or -1 with err set. */
static int agent_connect(struct spaced_context *ctx, const struct sandbox *sb, struct space_error *err)
{
        struct space_error unused;
        int fd = runtime_registry_agent_connect(&ctx->runtimes, sb, AGENT_JOB_CLIENT_TIMEOUT_MS, &unused);
        if (fd >= 0)
                return fd;
        if (fd == -EPROTONOSUPPORT) {
                *err = unused;
                return -1;
        }
        return agent_error(err, fd, "reach the sandbox's agent", "");
}

static int require_running(const struct sandbox *sb, struct space_error *err)
{
        if (sb->state == SANDBOX_RUNNING)
                return 0;
        return space_error_set(err, SPACE_E_INVALID_STATE, "sandbox %s is %s; commands need it running", sb->id,
                               sandbox_state_name(sb->state));
}

bool command_service_watches(struct spaced_context *ctx, const struct sandbox *sb)
{
        /* Only a project with command rules pays for the watch; a runtime whose kernel has no
         * seccomp user notifications (gVisor's) keeps the lexical reading alone. */
        struct space_error unused;
        const struct runtime_driver *driver = runtime_registry_for(&ctx->runtimes, sb, &unused);
        return driver && driver->caps.exec_watch && ctx->exec_watch && ctx->exec_watch->wanted(ctx, sb->project_id);
}

/* Starts spec as rec (a new row, or with `held` the pending_approval row there already). */
static int start_job(struct spaced_context *ctx, const struct sandbox *sb, struct agent_job_spec *spec,
                     struct command_record *rec, bool held, struct command_record *ret, struct space_error *err)
{
        char msg[256] = "";
        if (require_running(sb, err) < 0)
                return -1;
        json_t *spec_json = rec->spec;
        rec->state = COMMAND_STARTING;
        rec->reason[0] = '\0';
        spec->job_id = rec->id;
        spec->watch_exec = command_service_watches(ctx, sb);
        _cleanup_close_ int agent = agent_connect(ctx, sb, err);
        if (agent < 0)
                return -1;
        int r = command_channels_ensure(ctx->channels, sb->id);
        if (r < 0)
                return space_error_errno(err, r, "start output channel");

        /* The row first: an agent job without one would be ended as unknown. */
        command_channels_lock_starts(ctx->channels, sb->id);
        r = held ? STORE(ctx, command_update, rec) : STORE(ctx, command_insert, rec);
        if (r < 0) {
                command_channels_unlock_starts(ctx->channels, sb->id);
                return space_error_errno(err, r, "store command");
        }
        command_channels_notify(ctx->channels, rec->id, 0, false);
        uint32_t pid = 0;
        r = agent_job_client_start(agent, spec, &pid, msg, sizeof(msg));
        if (r < 0 && held) {
                /* A held command that cannot start ends, saying why (its caller is gone). */
                rec->state = COMMAND_LOST;
                snprintf(rec->reason, sizeof(rec->reason), "start_failed");
                rec->finished_at_ms = wallclock_now_ms();
                int u = STORE(ctx, command_update, rec);
                if (u < 0)
                        log_warn("command.update_failed", "sandbox=%s command=%s error=\"%s\"", sb->id, rec->id, strerror(-u));
                command_channels_unlock_starts(ctx->channels, sb->id);
                command_channels_notify(ctx->channels, rec->id, 0, true);
                log_warn("command.start_failed", "sandbox=%s command=%s error=\"%s\"", sb->id, rec->id, LOG_ESC(msg));
                return agent_error(err, r, "start command", msg);
        }
        if (r < 0) {
                int d = STORE(ctx, command_delete, sb->id, rec->id);
                if (d < 0) /* left starting: the channel's reconciliation ends it as lost */
                        log_warn("command.delete_failed", "sandbox=%s command=%s error=\"%s\"", sb->id, rec->id, strerror(-d));
                command_channels_unlock_starts(ctx->channels, sb->id);
                command_channels_notify(ctx->channels, rec->id, 0, true);
                if (r == -ENOENT && msg[0])
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s", msg);
                return agent_error(err, r, "start command", msg);
        }
        rec->state = COMMAND_RUNNING;
        rec->pid = (int32_t)pid;
        rec->started_at_ms = wallclock_now_ms();
        r = STORE(ctx, command_update, rec);
        command_channels_unlock_starts(ctx->channels, sb->id);
        if (r < 0)
                log_warn("command.update_failed", "sandbox=%s command=%s error=\"%s\"", sb->id, rec->id, strerror(-r));
        log_info("command.started", "sandbox=%s command=%s pid=%u", sb->id, rec->id, pid);
        /* The exit may already have been recorded: return what the store says. */
        rec->spec = NULL;
        if (STORE(ctx, command_get, sb->id, rec->id, ret) < 0) {
                rec->spec = json_incref(spec_json);
                *ret = *rec;
        }
        return 0;
}

int command_service_start(struct spaced_context *ctx, const struct sandbox *sb, struct agent_job_spec *spec, const char *tag,
                          json_t *spec_json, struct command_record *ret, struct space_error *err)
{
        struct command_record rec = { 0 };
        int r = random_id("cmd-", 8, rec.id, sizeof(rec.id));
        if (r < 0)
                return space_error_errno(err, r, "command id");
        snprintf(rec.sandbox_id, sizeof(rec.sandbox_id), "%s", sb->id);
        snprintf(rec.tag, sizeof(rec.tag), "%s", tag ? tag : "");
        rec.spec = spec_json;
        rec.created_at_ms = wallclock_now_ms();
        return start_job(ctx, sb, spec, &rec, false, ret, err);
}

int command_service_start_held(struct spaced_context *ctx, const struct sandbox *sb, struct agent_job_spec *spec,
                               const struct command_record *held, struct command_record *ret, struct space_error *err)
{
        struct command_record rec = *held;
        if (held->state != COMMAND_PENDING_APPROVAL)
                return space_error_set(err, SPACE_E_INVALID_STATE, "command %s is %s, not pending approval", held->id,
                                       command_state_name(held->state));
        return start_job(ctx, sb, spec, &rec, true, ret, err);
}

int command_service_end_held(struct spaced_context *ctx, const struct command_record *held, const char *reason)
{
        struct command_record rec = *held;
        if (held->state != COMMAND_PENDING_APPROVAL)
                return 0;
        rec.state = COMMAND_LOST;
        snprintf(rec.reason, sizeof(rec.reason), "%s", reason);
        rec.finished_at_ms = wallclock_now_ms();
        int r = STORE(ctx, command_update, &rec);
        if (r < 0)
                return r;
        command_channels_notify(ctx->channels, rec.id, 0, true);
        log_info("command.ended", "sandbox=%s command=%s state=lost reason=\"%s\"", rec.sandbox_id, rec.id, LOG_ESC(reason));
        return 0;
}

int command_service_get(struct spaced_context *ctx, const char *sandbox_id, const char *command_id, struct command_record *ret,
                        struct space_error *err)
{
        int r = STORE(ctx, command_get, sandbox_id, command_id, ret);
        if (r == -ENOENT)
                return space_error_set(err, SPACE_E_NOT_FOUND, "sandbox %s has no command %s", sandbox_id, command_id);
        if (r < 0)
                return space_error_errno(err, r, "load command");
        return 0;
}

/* The command must exist and still run, and so must the sandbox. */
static int control_prepare(struct spaced_context *ctx, const struct sandbox *sb, const char *command_id, struct space_error *err)
{
        struct command_record rec;
        if (command_service_get(ctx, sb->id, command_id, &rec, err) < 0)
                return -1;
        enum command_state state = rec.state;
        command_record_release(&rec);
        if (state == COMMAND_EXITED || state == COMMAND_LOST)
                return space_error_set(err, SPACE_E_INVALID_STATE, "command %s has %s", command_id,
                                       state == COMMAND_EXITED ? "exited" : "been lost");
        return require_running(sb, err);
}

int command_service_input(struct spaced_context *ctx, const struct sandbox *sb, const char *command_id, const void *data,
                          size_t len, struct space_error *err)
{
        char msg[256] = "";
        if (control_prepare(ctx, sb, command_id, err) < 0)
                return -1;
        const char *p = data;
        /* The agent takes up to 4 MiB at a time; feed it in pieces and wait while it is full. */
        for (int waited = 0; len > 0 || p == data;) {
                size_t piece = len > (1u << 20) ? (1u << 20) : len;
                _cleanup_close_ int agent = agent_connect(ctx, sb, err);
                if (agent < 0)
                        return -1;
                int r = agent_job_client_input(agent, command_id, p, piece, msg, sizeof(msg));
                if (r == -EAGAIN && waited < INPUT_WAIT_MS) {
                        struct timespec ts = { 0, INPUT_RETRY_MS * 1000000L };
                        nanosleep(&ts, NULL);
                        waited += INPUT_RETRY_MS;
                        continue;
                }
                if (r == -EAGAIN)
                        return space_error_set(err, SPACE_E_TIMEOUT, "the command does not read its stdin");
                if (r < 0)
                        return agent_error(err, r, "write stdin", msg);
                p += piece;
                len -= piece;
                if (len == 0)
                        break;
        }
        return 0;
}

int command_service_close_stdin(struct spaced_context *ctx, const struct sandbox *sb, const char *command_id,
                                struct space_error *err)
{
        char msg[256] = "";
        _cleanup_close_ int agent = -1;
        if (control_prepare(ctx, sb, command_id, err) < 0 || (agent = agent_connect(ctx, sb, err)) < 0)
                return -1;
        int r = agent_job_client_close_stdin(agent, command_id, msg, sizeof(msg));
        return r < 0 ? agent_error(err, r, "close stdin", msg) : 0;
}

int command_service_signal(struct spaced_context *ctx, const struct sandbox *sb, const char *command_id, int sig,
                           struct space_error *err)
{
        char msg[256] = "";
        _cleanup_close_ int agent = -1;
        if (control_prepare(ctx, sb, command_id, err) < 0 || (agent = agent_connect(ctx, sb, err)) < 0)
                return -1;
        int r = agent_job_client_signal(agent, command_id, sig, msg, sizeof(msg));
        return r < 0 ? agent_error(err, r, "signal", msg) : 0;
}

int command_service_resize(struct spaced_context *ctx, const struct sandbox *sb, const char *command_id, uint32_t cols,
                           uint32_t rows, struct space_error *err)
{
        char msg[256] = "";
        _cleanup_close_ int agent = -1;
        if (control_prepare(ctx, sb, command_id, err) < 0 || (agent = agent_connect(ctx, sb, err)) < 0)
                return -1;
        int r = agent_job_client_resize(agent, command_id, cols, rows, msg, sizeof(msg));
        return r < 0 ? agent_error(err, r, "resize", msg) : 0;
}
