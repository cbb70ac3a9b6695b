/* command_exec: an exec through the job path, its output read back from the command's log. */
#include "data_plane/command_exec.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "data_plane/command_channels.h"
#include "data_plane/command_log.h"
#include "data_plane/command_service.h"
#include "spaced/spaced_context.h"

#define WAIT_SLICE_MS 1000

/* Appends what fits under cap to *buf; sets *truncated for the rest. */
static int keep(uint8_t **buf, size_t *len, uint32_t cap, const uint8_t *data, size_t n, bool *truncated)
{
        size_t room = *len < cap ? cap - *len : 0;
        if (n > room) {
                *truncated = true;
                n = room;
        }
        if (n == 0)
                return 0;
        uint8_t *grown = realloc(*buf, *len + n);
        if (!grown)
                return -ENOMEM;
        memcpy(grown + *len, data, n);
        *buf = grown;
        *len += n;
        return 0;
}

static void exit_record(const uint8_t *data, size_t len, struct exec_result *r)
{
        _cleanup_json_ json_t *o = json_loadb((const char *)data, len, 0, NULL);
        r->exit_code = (int)json_integer_value(json_object_get(o, "exit_code"));
        r->term_signal = (int)json_integer_value(json_object_get(o, "signal"));
        r->timed_out = json_is_true(json_object_get(o, "timed_out"));
        r->duration_us = (uint64_t)json_integer_value(json_object_get(o, "duration_ms")) * 1000u;
        if (json_is_true(json_object_get(o, "lost")))
                r->exit_code = -1;
}

/* Reads the records after *pos; true once the exit record was read. */
static int read_new(const char *dir, uint64_t *pos, uint32_t cap, struct exec_result *r, bool *ret_ended)
{
        struct command_log_reader *rd = NULL;
        int e = command_log_reader_open(dir, *pos, &rd);
        if (e == -ENOENT)
                return 0; /* no output yet */
        if (e < 0)
                return e;
        for (;;) {
                struct command_log_record rec;
                e = command_log_reader_next(rd, &rec);
                if (e <= 0)
                        break;
                *pos = command_log_reader_position(rd);
                if (e == COMMAND_LOG_READ_DROPPED) {
                        r->truncated = true;
                        continue;
                }
                if (rec.kind == COMMAND_LOG_EXIT) {
                        exit_record(rec.data, rec.len, r);
                        *ret_ended = true;
                        break;
                }
                bool err_stream = rec.kind == COMMAND_LOG_STDERR;
                e = keep(err_stream ? &r->err : &r->out, err_stream ? &r->err_len : &r->out_len, cap, rec.data, rec.len,
                         &r->truncated);
                if (e < 0)
                        break;
        }
        command_log_reader_close(rd);
        return e < 0 ? e : 0;
}

int command_exec_run(struct spaced_context *ctx, const struct sandbox *sb, const struct exec_request *er, json_t *asked,
                     struct exec_result *ret, struct space_error *err)
{
        struct agent_job_spec spec = {
                .argv = er->argv,
                .envp = er->envp,
                .cwd = er->cwd,
                .user = er->user,
                .stdin_open = er->has_stdin,
                .timeout_ms = er->timeout_ms,
        };
        struct command_record rec;
        if (command_service_start(ctx, sb, &spec, "exec", asked, &rec, err) < 0)
                return -1;
        char id[sizeof(rec.id)];
        memcpy(id, rec.id, sizeof(id));
        command_record_release(&rec);
        if (er->has_stdin) {
                if ((er->stdin_len && command_service_input(ctx, sb, id, er->stdin_data, er->stdin_len, err) < 0) ||
                    command_service_close_stdin(ctx, sb, id, err) < 0) {
                        (void)command_service_signal(ctx, sb, id, SIGKILL, &(struct space_error){ 0 });
                        return -1;
                }
        }
        char dir[PATH_MAX];
        command_channels_log_dir(ctx, sb->id, id, dir, sizeof(dir));
        struct exec_result r = { 0 };
        uint64_t pos = 0;
        bool ended = false;
        for (;;) {
                int e = read_new(dir, &pos, er->output_cap, &r, &ended);
                if (e < 0) {
                        exec_result_release(&r);
                        return space_error_errno(err, e, "read the command's output");
                }
                if (ended)
                        break;
                if (command_channels_wait(ctx->channels, id, pos, false, WAIT_SLICE_MS) == COMMAND_WAIT_NOT_LIVE) {
                        /* Ended meanwhile: what the log holds now is all. */
                        if ((e = read_new(dir, &pos, er->output_cap, &r, &ended)) < 0 || !ended) {
                                exec_result_release(&r);
                                if (e < 0)
                                        return space_error_errno(err, e, "read the command's output");
                                return space_error_set(err, SPACE_E_INTERNAL, "command %s ended without an exit", id);
                        }
                        break;
                }
        }
        if (r.exit_code == -1) {
                exec_result_release(&r);
                return space_error_set(err, SPACE_E_INTERNAL, "command %s was lost (the sandbox's agent went away)", id);
        }
        *ret = r;
        return 0;
}
