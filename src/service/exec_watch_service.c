/* exec_watch_service: which projects' commands are watched, and each exec's verdict. */
#include "service/exec_watch_service.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "data_plane/exec_watch_hooks.h"
#include "policy/policy.h"
#include "policy/policy_cache.h"
#include "service/policy_gate.h"
#include "service/policy_service.h"
#include "spaced/log.h"
#include "spaced/spaced_context.h"
#include "spaced/wallclock.h"
#include "state_store/state_store.h"

static bool has_command_rules(const struct policy_set *set)
{
        for (size_t i = 0; i < set->n; i++) {
                const struct policy *p = set->items[i];
                if (!(p->actions & (1u << POLICY_COMMAND)))
                        continue;
                if (p->default_effect != POLICY_ALLOW)
                        return true;
                for (size_t k = 0; k < p->nrules; k++)
                        if (p->rules[k].actions & (1u << POLICY_COMMAND))
                                return true;
        }
        return false;
}

static bool watch_wanted(struct spaced_context *ctx, const char *project_id)
{
        struct space_error err;
        struct policy_set *set = policy_service_load_set(ctx, project_id, &err);
        if (!set)
                return true; /* cannot tell: watch (a check that cannot be made refuses) */
        bool wanted = has_command_rules(set);
        policy_set_unref(set);
        return wanted;
}

/* The audit row of a denial: which exec, in which command; never its environment. */
static void audit_denied(struct spaced_context *ctx, const struct sandbox *sb, const struct exec_watch_check *c, const char *msg)
{
        struct audit_record a = { .created_at_ms = wallclock_now_ms(), .status = 403 };
        random_id("aud-", 12, a.id, sizeof(a.id));
        snprintf(a.action, sizeof(a.action), "command.exec_denied");
        snprintf(a.target, sizeof(a.target), "%s", c->command_id);
        snprintf(a.project, sizeof(a.project), "%s", sb->project_id);
        snprintf(a.error_code, sizeof(a.error_code), "policy_denied");
        /* The detail column is bounded: argv is cut, whole words, until the row fits. */
        _cleanup_json_ json_t *argv = json_array();
        size_t argc = 0;
        while (c->argv[argc])
                argc++;
        for (size_t keep = argc;; keep = keep / 2) {
                json_array_clear(argv);
                for (size_t i = 0; i < keep; i++)
                        json_array_append_new(argv, json_string_nocheck(c->argv[i]));
                _cleanup_json_ json_t *d = json_pack("{s:s, s:s, s:I, s:s, s:s, s:O, s:b, s:s}", "sandbox", sb->id, "command",
                                                     c->command_id, "pid", (json_int_t)c->pid, "path", c->path, "real", c->real,
                                                     "argv", argv, "argv_truncated", keep < argc, "message", msg);
                _cleanup_free_ char *text = d ? json_dumps(d, JSON_COMPACT) : NULL;
                if (text && strlen(text) < sizeof(a.detail)) {
                        memcpy(a.detail, text, strlen(text) + 1);
                        break;
                }
                if (keep == 0)
                        break; /* even without argv it does not fit (a long path): the log line has it */
        }
        int e = STORE(ctx, audit_insert, &a);
        if (e < 0)
                log_error("audit.write_failed", "error=\"%s\" action=command.exec_denied target=%s", strerror(-e), c->command_id);
}

/* argv with its first word replaced by word (into slots, argc + 1 long). */
static const char *const *argv_with_first(const char *const *argv, size_t argc, const char *word, const char **slots)
{
        slots[0] = word;
        for (size_t i = 1; i <= argc; i++)
                slots[i] = argv[i];
        return slots;
}

/* Whether a person approved command_id (held, then approved: it runs as asked, what it
 * starts included). Read only when an exec needs approval, which is rare. */
static bool command_was_approved(struct spaced_context *ctx, const char *project_id, const char *command_id)
{
        struct store_page page = { .limit = 500 };
        char after_id[32] = "";
        for (;;) {
                struct approval_record *recs = NULL;
                size_t n = 0;
                if (STORE(ctx, approval_list, project_id, APPROVAL_APPROVED, &page, &recs, &n) < 0)
                        return false;
                bool found = false;
                for (size_t i = 0; i < n && !found; i++)
                        found = strcmp(recs[i].command_id, command_id) == 0;
                if (n > 0) {
                        page.after_ms = recs[n - 1].created_at_ms;
                        snprintf(after_id, sizeof(after_id), "%s", recs[n - 1].id);
                        page.after_id = after_id;
                }
                approval_record_array_free(recs, n);
                if (found)
                        return true;
                if (n < (size_t)page.limit)
                        return false;
        }
}

/* busybox runs argv[1] as its applet when the name it runs under starts with "busybox". */
static bool is_busybox(const char *path)
{
        const char *slash = strrchr(path, '/');
        return strncmp(slash ? slash + 1 : path, "busybox", 7) == 0;
}

/* An exec is denied when the command's rules deny it under any of its names: argv[0] as the
 * program passed it, the path it asked for, the file that runs (symlinks resolved), and for
 * a busybox multi-call binary (or a copy named busybox*) the applet named by argv[1]. */
static int exec_decide(struct spaced_context *ctx, const struct exec_watch_check *c, char *msg, size_t msg_size)
{
        struct sandbox sb;
        struct command_record rec;
        if (STORE(ctx, sandbox_get, c->sandbox_id, &sb) < 0) {
                snprintf(msg, msg_size, "exec denied: the sandbox's policies could not be read");
                return 1;
        }
        bool have_rec = STORE(ctx, command_get, c->sandbox_id, c->command_id, &rec) == 0;
        const char *user = have_rec ? json_string_value(json_object_get(rec.spec, "user")) : NULL;
        const char *cwd = have_rec ? json_string_value(json_object_get(rec.spec, "cwd")) : NULL;
        size_t argc = 0;
        while (c->argv[argc])
                argc++;
        _cleanup_free_ const char **slots = calloc(argc + 1, sizeof(char *));
        const char *const *variants[4];
        size_t nv = 0;
        variants[nv++] = c->argv;
        if (slots) {
                variants[nv++] = argv_with_first(c->argv, argc, c->path, slots);
        }
        _cleanup_free_ const char **slots_real = calloc(argc + 1, sizeof(char *));
        if (slots_real)
                variants[nv++] = argv_with_first(c->argv, argc, c->real, slots_real);
        if (argc > 1 && (is_busybox(c->real) || is_busybox(c->argv[0])))
                variants[nv++] = c->argv + 1;
        int denied = !slots || !slots_real;
        if (denied)
                snprintf(msg, msg_size, "exec denied: out of memory while checking it");
        for (size_t i = 0; i < nv && !denied; i++) {
                struct space_error err;
                struct policy_hold hold;
                int r = policy_gate_command(ctx, &sb, (char *const *)variants[i], user, cwd, &hold, &err);
                if (r < 0) {
                        snprintf(msg, msg_size, "exec of %s denied: %s", c->real, err.message);
                        denied = 1;
                } else if (r == 1 && !command_was_approved(ctx, sb.project_id, c->command_id)) {
                        /* An exec cannot wait for a person; an approved command runs what it starts. */
                        snprintf(msg, msg_size, "exec of %s denied: %s, which an exec inside a command cannot wait for", c->real,
                                 hold.reason);
                        denied = 1;
                }
        }
        if (denied) {
                log_info("command.exec_denied", "sandbox=%s command=%s path=\"%s\" real=\"%s\"", sb.id, c->command_id,
                         LOG_ESC(c->path), LOG_ESC(c->real));
                audit_denied(ctx, &sb, c, msg);
        }
        if (have_rec)
                command_record_release(&rec);
        sandbox_release(&sb);
        return denied;
}

const struct exec_watch_hooks exec_watch_service_hooks = {
        .wanted = watch_wanted,
        .decide = exec_decide,
};
