/* POST /v1/policies/test: what the policies of a project would decide on a request that is
 * described, not made. Nothing is run and nothing is stored; a draft document can stand in
 * for the stored policy of its name, so an author sees an edit's effect before applying it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "policy/policy_cache.h"
#include "service/policy_service.h"
#include "service/project_service.h"
#include "service/sandbox_access.h"
#include "spaced/spaced_context.h"

#define MAX_ARGV 256

struct described {
        struct policy_request rq;
        const char *argv[MAX_ARGV + 1];
        const char *project;
};

static int str_field(const json_t *o, const char *key, const char **ret, struct space_error *err)
{
        const json_t *v = json_object_get(o, key);
        if (!v)
                return 0;
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 4096)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "request.%s must be a string of 1 to 4096 bytes", key);
        *ret = json_string_value(v);
        return 0;
}

static int parse_request(const json_t *o, struct described *d, struct space_error *err)
{
        static const char *const fields[] = { "action", "sandbox_id", "template", "argv", "user", "cwd", "path", "count", NULL };
        if (!json_is_object(o))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "request must be an object naming an action");
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)o, k, v)
        {
                bool ok = false;
                for (size_t i = 0; fields[i] && !ok; i++)
                        ok = strcmp(k, fields[i]) == 0;
                if (!ok)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "request: unknown field \"%s\"", k);
        }
        const char *action = NULL;
        if (str_field(o, "action", &action, err) < 0 || str_field(o, "sandbox_id", &d->rq.sandbox_id, err) < 0 ||
            str_field(o, "template", &d->rq.templ, err) < 0 || str_field(o, "user", &d->rq.user, err) < 0 ||
            str_field(o, "cwd", &d->rq.cwd, err) < 0 || str_field(o, "path", &d->rq.path, err) < 0)
                return -1;
        if (!action || policy_action_from_name(action, &d->rq.action) < 0)
                return space_error_set(err, SPACE_E_INVALID_REQUEST,
                                       "request.action must be one of command, file.read, file.write, file.delete, "
                                       "sandbox.create, sandbox.fork, snapshot.export");
        const json_t *argv = json_object_get(o, "argv");
        if (argv) {
                if (!json_is_array(argv) || json_array_size(argv) == 0 || json_array_size(argv) > MAX_ARGV)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "request.argv must be an array of 1 to %d strings",
                                               MAX_ARGV);
                size_t i;
                json_array_foreach(argv, i, v)
                {
                        if (!json_is_string(v))
                                return space_error_set(err, SPACE_E_INVALID_REQUEST, "request.argv[%zu] must be a string", i);
                        d->argv[i] = json_string_value(v);
                }
                d->rq.argv = d->argv;
        }
        if (d->rq.action == POLICY_COMMAND && !d->rq.argv)
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "request.argv is needed for a command");
        if (d->rq.path && d->rq.path[0] != '/')
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "request.path must be absolute");
        const json_t *count = json_object_get(o, "count");
        if (count) {
                if (!json_is_integer(count) || json_integer_value(count) < 0)
                        return space_error_set(err, SPACE_E_INVALID_REQUEST, "request.count must be an integer from 0");
                d->rq.count = json_integer_value(count);
        }
        return 0;
}

static json_t *verdict_new(const struct policy_verdict *v)
{
        return json_pack("{s:s, s:s, s:s*, s:s}", "policy_id", v->policy->id, "policy_name", v->policy->name, "rule",
                         v->rule ? v->rule->id : NULL, "effect", policy_effect_name(v->effect));
}

json_t *policy_service_dry_run_new(struct spaced_context *ctx, const struct principal *p, const json_t *body,
                                   struct space_error *err)
{
        static const char *const fields[] = { "project", "request", "policy", NULL };
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)body, k, v)
        {
                bool ok = false;
                for (size_t i = 0; fields[i] && !ok; i++)
                        ok = strcmp(k, fields[i]) == 0;
                if (!ok) {
                        space_error_set(err, SPACE_E_INVALID_REQUEST, "unknown field \"%s\"", k);
                        return NULL;
                }
        }
        struct described d = { 0 };
        const json_t *project = json_object_get(body, "project");
        if (project && !json_is_string(project)) {
                space_error_set(err, SPACE_E_INVALID_REQUEST, "project must be a string");
                return NULL;
        }
        if (parse_request(json_object_get(body, "request"), &d, err) < 0)
                return NULL;
        const char *scope = NULL;
        if (project_service_scope(ctx, p, json_string_value(project), &scope, err) < 0)
                return NULL;
        const char *project_id = scope ? scope : p->project_id;
        /* A sandbox named must be the project's; its template is the request's unless given. */
        struct sandbox sb = { 0 };
        bool loaded = false;
        if (d.rq.sandbox_id) {
                if (sandbox_access_load(ctx, p, d.rq.sandbox_id, &sb, err) < 0)
                        return NULL;
                loaded = true;
                if (strcmp(sb.project_id, project_id) != 0) {
                        sandbox_release(&sb);
                        space_error_set(err, SPACE_E_NOT_FOUND, "sandbox %s not found", d.rq.sandbox_id);
                        return NULL;
                }
                if (!d.rq.templ)
                        d.rq.templ = sb.template_name;
        }
        struct policy *draft = NULL;
        const json_t *draft_doc = json_object_get(body, "policy");
        if (draft_doc && policy_service_compile(draft_doc, &draft, err) < 0) {
                if (loaded)
                        sandbox_release(&sb);
                return NULL;
        }
        if (draft)
                snprintf(draft->id, sizeof(draft->id), "draft");
        struct policy_set *set = policy_service_load_set(ctx, project_id, err);
        if (!set) {
                policy_free(draft);
                if (loaded)
                        sandbox_release(&sb);
                return NULL;
        }
        /* The set as it would be: the draft replaces the stored policy of its name. */
        _cleanup_free_ const struct policy **list = calloc(set->n + 1, sizeof(*list));
        size_t n = 0;
        bool placed = false;
        for (size_t i = 0; list && i < set->n; i++) {
                if (draft && strcmp(set->items[i]->name, draft->name) == 0) {
                        snprintf(draft->id, sizeof(draft->id), "%s", set->items[i]->id);
                        list[n++] = draft;
                        placed = true;
                } else
                        list[n++] = set->items[i];
        }
        if (list && draft && !placed)
                list[n++] = draft;
        json_t *out = NULL;
        if (!list) {
                space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        } else {
                struct policy_decision dec;
                policy_decide(list, n, &d.rq, &dec);
                char msg[400];
                policy_decision_describe(&dec, &d.rq, msg, sizeof(msg));
                json_t *verdicts = json_array();
                for (size_t i = 0; i < dec.nverdicts; i++)
                        json_array_append_new(verdicts, verdict_new(&dec.verdicts[i]));
                out = json_pack("{s:s, s:s, s:s*, s:s*, s:s*, s:s, s:o}", "decision", policy_effect_name(dec.effect), "project",
                                project_id, "policy_id", dec.deciding.policy ? dec.deciding.policy->id : NULL, "policy_name",
                                dec.deciding.policy ? dec.deciding.policy->name : NULL, "rule",
                                dec.deciding.rule ? dec.deciding.rule->id : NULL, "message", msg, "verdicts", verdicts);
                if (!out)
                        space_error_set(err, SPACE_E_INTERNAL, "out of memory");
        }
        policy_set_unref(set);
        policy_free(draft);
        if (loaded)
                sandbox_release(&sb);
        return out;
}
