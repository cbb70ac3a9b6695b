/* The front doors' policy checks, each a policy_request filled from what the door parsed. */
#include "service/policy_gate.h"

#include "agent_protocol/agent_files_client.h"
#include "service/policy_service.h"

int policy_gate_command(struct spaced_context *ctx, const struct sandbox *sb, char *const *argv, const char *user,
                        const char *cwd, struct policy_hold *hold, struct space_error *err)
{
        struct policy_request rq = {
                .action = POLICY_COMMAND,
                .sandbox_id = sb->id,
                .templ = sb->template_name,
                .argv = (const char *const *)argv,
                .user = user ? user : "root",
                .cwd = cwd,
        };
        return policy_service_check(ctx, sb->project_id, &rq, hold, err);
}

int policy_gate_file(struct spaced_context *ctx, const struct sandbox *sb, enum policy_action action, const char *path,
                     const char *user, struct space_error *err)
{
        struct policy_request rq = {
                .action = action,
                .sandbox_id = sb->id,
                .templ = sb->template_name,
                .user = user ? user : "root",
                .path = path,
        };
        return policy_service_check(ctx, sb->project_id, &rq, NULL, err);
}

int policy_gate_create(struct spaced_context *ctx, const char *project_id, const char *templ, struct space_error *err)
{
        struct policy_request rq = { .action = POLICY_SANDBOX_CREATE, .templ = templ };
        return policy_service_check(ctx, project_id, &rq, NULL, err);
}

int policy_gate_fork(struct spaced_context *ctx, const struct sandbox *sb, int64_t count, struct space_error *err)
{
        struct policy_request rq = {
                .action = POLICY_SANDBOX_FORK, .sandbox_id = sb->id, .templ = sb->template_name, .count = count
        };
        return policy_service_check(ctx, sb->project_id, &rq, NULL, err);
}

int policy_gate_export(struct spaced_context *ctx, const char *project_id, const char *sandbox_id, struct space_error *err)
{
        struct policy_request rq = { .action = POLICY_SNAPSHOT_EXPORT, .sandbox_id = sandbox_id };
        return policy_service_check(ctx, project_id, &rq, NULL, err);
}

int policy_gate_file_request(struct spaced_context *ctx, const struct sandbox *sb, int type, const struct agent_file_args *a,
                             struct space_error *err)
{
        switch (type) {
        case AGENT_MSG_FILE_STAT:
        case AGENT_MSG_FILE_READ:
        case AGENT_MSG_FILE_LIST:
        case AGENT_MSG_FILE_WATCH:
                return policy_gate_file(ctx, sb, POLICY_FILE_READ, a->path, a->user, err);
        case AGENT_MSG_FILE_MKDIR:
        case AGENT_MSG_FILE_CREATE:
                return policy_gate_file(ctx, sb, POLICY_FILE_WRITE, a->path, a->user, err);
        case AGENT_MSG_FILE_REMOVE:
                return policy_gate_file(ctx, sb, POLICY_FILE_DELETE, a->path, a->user, err);
        case AGENT_MSG_FILE_MOVE:
                if (policy_gate_file(ctx, sb, POLICY_FILE_DELETE, a->path, a->user, err) < 0)
                        return -1;
                return policy_gate_file(ctx, sb, POLICY_FILE_WRITE, a->dest, a->user, err);
        default:
                return 0; /* FETCH, DATA, COMMIT: the parts of a request checked at its start */
        }
}
