/* Policy documents: validation with errors that point at the bad rule, and compilation
 * (regular expressions compiled once, globs kept for fnmatch). */
#include "policy/policy.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"

static const char *const action_names[] = {
        [POLICY_COMMAND] = "command",
        [POLICY_FILE_READ] = "file.read",
        [POLICY_FILE_WRITE] = "file.write",
        [POLICY_FILE_DELETE] = "file.delete",
        [POLICY_SANDBOX_CREATE] = "sandbox.create",
        [POLICY_SANDBOX_FORK] = "sandbox.fork",
        [POLICY_SNAPSHOT_EXPORT] = "snapshot.export",
};
_Static_assert(sizeof(action_names) / sizeof(action_names[0]) == _POLICY_ACTION_MAX, "one name per action");

#define FILE_ACTIONS ((1u << POLICY_FILE_READ) | (1u << POLICY_FILE_WRITE) | (1u << POLICY_FILE_DELETE))
#define COMMAND_ACTIONS (1u << POLICY_COMMAND)

const char *policy_action_name(enum policy_action a)
{
        return a >= 0 && a < _POLICY_ACTION_MAX ? action_names[a] : "unknown";
}

int policy_action_from_name(const char *name, enum policy_action *ret)
{
        for (int a = 0; a < _POLICY_ACTION_MAX; a++)
                if (name && strcmp(name, action_names[a]) == 0) {
                        *ret = (enum policy_action)a;
                        return 0;
                }
        return -EINVAL;
}

const char *policy_effect_name(enum policy_effect e)
{
        return e == POLICY_DENY ? "deny" : e == POLICY_REQUIRE_APPROVAL ? "require_approval" : "allow";
}

/* The place in the document being read, for error messages. */
struct where {
        char *why;
        size_t size;
        bool *unsupported;
        char at[128];
};

static int fail(struct where *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct where *w, const char *fmt, ...)
{
        char msg[384];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        snprintf(w->why, w->size, "%s%s%s", w->at, w->at[0] ? ": " : "", msg);
        return -EINVAL;
}

static bool name_ok(const char *s, size_t max)
{
        size_t n = strlen(s);
        if (n == 0 || n > max)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                      c == '.'))
                        return false;
        }
        return true;
}

static int only_fields(struct where *w, const json_t *obj, const char *const *allowed)
{
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)obj, k, v)
        {
                bool ok = false;
                for (size_t i = 0; allowed[i] && !ok; i++)
                        ok = strcmp(k, allowed[i]) == 0;
                if (!ok)
                        return fail(w, "unknown field \"%s\"", k);
        }
        return 0;
}

/* An optional string field of at most max bytes, non-empty. */
static int opt_string(struct where *w, const json_t *obj, const char *key, size_t max, const char **ret)
{
        const json_t *v = json_object_get(obj, key);
        *ret = NULL;
        if (!v)
                return 0;
        if (!json_is_string(v))
                return fail(w, "%s must be a string", key);
        size_t n = json_string_length(v);
        if (n == 0 || n > max || strlen(json_string_value(v)) != n)
                return fail(w, "%s must be 1 to %zu bytes (no NUL)", key, max);
        *ret = json_string_value(v);
        return 0;
}

static int parse_actions(struct where *w, const json_t *obj, unsigned *ret)
{
        const json_t *v = json_object_get(obj, "actions");
        if (!v)
                return 0;
        if (!json_is_array(v) || json_array_size(v) == 0)
                return fail(w, "actions must be a non-empty array of action names");
        unsigned mask = 0;
        size_t i;
        const json_t *a;
        json_array_foreach(v, i, a)
        {
                enum policy_action act;
                if (!json_is_string(a))
                        return fail(w, "actions[%zu] must be a string", i);
                if (strcmp(json_string_value(a), "egress") == 0) {
                        *w->unsupported = true;
                        return fail(w,
                                    "actions[%zu]: egress rules are not enforced yet: use the sandbox's network "
                                    "allow/deny (docs/network.md)",
                                    i);
                }
                if (policy_action_from_name(json_string_value(a), &act) < 0)
                        return fail(w,
                                    "actions[%zu]: unknown action \"%s\" (command, file.read, file.write, file.delete, "
                                    "sandbox.create, sandbox.fork, snapshot.export)",
                                    i, json_string_value(a));
                mask |= 1u << act;
        }
        *ret = mask;
        return 0;
}

static int parse_effect(struct where *w, const char *key, const char *s, enum policy_effect *ret)
{
        if (strcmp(s, "allow") == 0)
                *ret = POLICY_ALLOW;
        else if (strcmp(s, "deny") == 0)
                *ret = POLICY_DENY;
        else if (strcmp(s, "require_approval") == 0)
                *ret = POLICY_REQUIRE_APPROVAL;
        else
                return fail(w, "%s must be allow, deny or require_approval", key);
        return 0;
}

/* Only a command can be held for approval (this step): the others have no pending form. */
static int approval_actions_ok(struct where *w, const char *key, enum policy_effect e, unsigned actions)
{
        if (e != POLICY_REQUIRE_APPROVAL || actions == 1u << POLICY_COMMAND)
                return 0;
        *w->unsupported = true;
        return fail(w, "%s: require_approval holds commands only: give it \"actions\": [\"command\"]", key);
}

static int dup_string(struct where *w, const char *s, char **ret)
{
        if (!s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : fail(w, "out of memory");
}

static void strv_free(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

static int parse_words(struct where *w, const json_t *arr, const char *key, char ***ret)
{
        if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > 256)
                return fail(w, "match.argv.%s must be an array of 1 to 256 strings", key);
        char **v = calloc(json_array_size(arr) + 1, sizeof(char *));
        if (!v)
                return fail(w, "out of memory");
        size_t i;
        const json_t *s;
        json_array_foreach(arr, i, s)
        {
                if (!json_is_string(s) || !(v[i] = strdup(json_string_value(s)))) {
                        strv_free(v);
                        return fail(w, "match.argv.%s[%zu] must be a string", key, i);
                }
        }
        *ret = v;
        return 0;
}

static int parse_argv(struct where *w, const json_t *m, struct policy_rule *r)
{
        static const char *const kinds[] = { "exact", "prefix", "glob", "regex", NULL };
        if (!json_is_object(m) || json_object_size(m) != 1)
                return fail(w, "match.argv must be an object with exactly one of exact, prefix, glob, regex");
        if (only_fields(w, m, kinds) < 0)
                return -EINVAL;
        const json_t *v;
        if ((v = json_object_get(m, "exact"))) {
                r->argv_kind = POLICY_ARGV_EXACT;
                return parse_words(w, v, "exact", &r->argv_words);
        }
        if ((v = json_object_get(m, "prefix"))) {
                r->argv_kind = POLICY_ARGV_PREFIX;
                return parse_words(w, v, "prefix", &r->argv_words);
        }
        const char *s;
        if ((v = json_object_get(m, "glob"))) {
                if (opt_string(w, m, "glob", 4096, &s) < 0)
                        return -EINVAL;
                r->argv_kind = POLICY_ARGV_GLOB;
                return dup_string(w, s, &r->argv_glob);
        }
        if (opt_string(w, m, "regex", 4096, &s) < 0)
                return -EINVAL;
        int rc = regcomp(&r->argv_regex, s, REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
                char msg[160];
                regerror(rc, &r->argv_regex, msg, sizeof(msg));
                return fail(w, "match.argv.regex: invalid regular expression: %s", msg);
        }
        r->argv_kind = POLICY_ARGV_REGEX;
        return 0;
}

/* A matcher that can never apply to the rule's actions is a mistake the author should hear of. */
static int check_fits(struct where *w, const char *key, bool given, unsigned fits, unsigned actions)
{
        if (given && !(fits & actions))
                return fail(w, "match.%s never applies to this rule's actions", key);
        return 0;
}

static int parse_match(struct where *w, const json_t *m, struct policy_rule *r)
{
        static const char *const fields[] = { "executable", "argv", "user", "cwd", "path", "template", "count_over", NULL };
        if (!json_is_object(m))
                return fail(w, "match must be an object");
        if (only_fields(w, m, fields) < 0)
                return -EINVAL;
        const char *exe, *user, *cwd, *path, *templ;
        if (opt_string(w, m, "executable", 4096, &exe) < 0 || opt_string(w, m, "user", 64, &user) < 0 ||
            opt_string(w, m, "cwd", 4096, &cwd) < 0 || opt_string(w, m, "path", 4096, &path) < 0 ||
            opt_string(w, m, "template", 128, &templ) < 0)
                return -EINVAL;
        if (json_object_get(m, "argv") && parse_argv(w, json_object_get(m, "argv"), r) < 0)
                return -EINVAL;
        r->count_over = -1;
        const json_t *c = json_object_get(m, "count_over");
        if (c) {
                if (!json_is_integer(c) || json_integer_value(c) < 0 || json_integer_value(c) > 1000000)
                        return fail(w, "match.count_over must be an integer from 0");
                r->count_over = json_integer_value(c);
        }
        if (check_fits(w, "executable", exe, COMMAND_ACTIONS, r->actions) < 0 ||
            check_fits(w, "argv", r->argv_kind != POLICY_ARGV_NONE, COMMAND_ACTIONS, r->actions) < 0 ||
            check_fits(w, "user", user, COMMAND_ACTIONS | FILE_ACTIONS, r->actions) < 0 ||
            check_fits(w, "cwd", cwd, COMMAND_ACTIONS, r->actions) < 0 ||
            check_fits(w, "path", path, FILE_ACTIONS, r->actions) < 0 ||
            check_fits(w, "count_over", c, 1u << POLICY_SANDBOX_FORK, r->actions) < 0)
                return -EINVAL;
        if (path && path[0] != '/')
                return fail(w, "match.path must be an absolute path glob");
        if (cwd && cwd[0] != '/')
                return fail(w, "match.cwd must be an absolute path glob");
        if (dup_string(w, exe, &r->executable) < 0 || dup_string(w, user, &r->user) < 0 || dup_string(w, cwd, &r->cwd) < 0 ||
            dup_string(w, path, &r->path) < 0 || dup_string(w, templ, &r->templ) < 0)
                return -EINVAL;
        return 0;
}

static void rule_release(struct policy_rule *r)
{
        free(r->executable);
        strv_free(r->argv_words);
        free(r->argv_glob);
        if (r->argv_kind == POLICY_ARGV_REGEX)
                regfree(&r->argv_regex);
        free(r->user);
        free(r->cwd);
        free(r->path);
        free(r->templ);
}

static int parse_rule(struct where *w, const json_t *o, unsigned policy_actions, struct policy_rule *r)
{
        static const char *const fields[] = { "id", "effect", "message", "actions", "match", NULL };
        r->count_over = -1;
        if (!json_is_object(o))
                return fail(w, "a rule must be an object");
        const char *id = json_string_value(json_object_get(o, "id"));
        if (!id || !name_ok(id, 63))
                return fail(w, "id must be 1 to 63 letters, digits, '-', '_' or '.'");
        snprintf(w->at + strlen(w->at), sizeof(w->at) - strlen(w->at), " (\"%s\")", id);
        snprintf(r->id, sizeof(r->id), "%s", id);
        if (only_fields(w, o, fields) < 0)
                return -EINVAL;
        const char *effect, *message;
        if (opt_string(w, o, "effect", 32, &effect) < 0 || opt_string(w, o, "message", 256, &message) < 0)
                return -EINVAL;
        if (!effect)
                return fail(w, "effect is required (allow, deny or require_approval)");
        if (parse_effect(w, "effect", effect, &r->effect) < 0)
                return -EINVAL;
        snprintf(r->message, sizeof(r->message), "%s", message ? message : "");
        r->actions = policy_actions;
        if (parse_actions(w, o, &r->actions) < 0)
                return -EINVAL;
        if (!(r->actions & policy_actions))
                return fail(w, "actions: none of them is one the policy governs");
        r->actions &= policy_actions;
        if (approval_actions_ok(w, "effect", r->effect, r->actions) < 0)
                return -EINVAL;
        const json_t *m = json_object_get(o, "match");
        if (m && parse_match(w, m, r) < 0)
                return -EINVAL;
        return 0;
}

int policy_compile(const json_t *doc, struct policy **ret, bool *ret_unsupported, char *why, size_t why_size)
{
        static const char *const fields[] = { "name", "description", "sandbox_id", "default", "actions", "rules", NULL };
        bool unsupported = false;
        struct where w = { .why = why, .size = why_size, .unsupported = &unsupported };
        if (ret_unsupported)
                *ret_unsupported = false;
        if (!json_is_object(doc))
                return fail(&w, "a policy must be a JSON object");
        if (only_fields(&w, doc, fields) < 0)
                return -EINVAL;
        const char *name, *desc, *sandbox_id, *def;
        if (opt_string(&w, doc, "name", 63, &name) < 0 || opt_string(&w, doc, "description", 1024, &desc) < 0 ||
            opt_string(&w, doc, "sandbox_id", 31, &sandbox_id) < 0 || opt_string(&w, doc, "default", 32, &def) < 0)
                return -EINVAL;
        if (!name || !name_ok(name, 63))
                return fail(&w, "name is required: 1 to 63 letters, digits, '-', '_' or '.'");
        if (sandbox_id && !name_ok(sandbox_id, 31))
                return fail(&w, "sandbox_id is not a sandbox id");
        enum policy_effect default_effect = POLICY_ALLOW;
        unsigned actions = POLICY_ACTIONS_ALL;
        int r = def ? parse_effect(&w, "default", def, &default_effect) : 0;
        if (r == 0)
                r = parse_actions(&w, doc, &actions);
        if (r == 0)
                r = approval_actions_ok(&w, "default", default_effect, actions);
        if (r < 0) {
                if (ret_unsupported)
                        *ret_unsupported = unsupported;
                return r;
        }
        const json_t *rules = json_object_get(doc, "rules"); /* absent: a policy of its default alone */
        if (rules && !json_is_array(rules))
                return fail(&w, "rules must be an array");
        if (json_array_size(rules) > POLICY_MAX_RULES)
                return fail(&w, "rules: at most %d rules in one policy", POLICY_MAX_RULES);
        struct policy *p = calloc(1, sizeof(*p));
        if (!p)
                return fail(&w, "out of memory");
        snprintf(p->name, sizeof(p->name), "%s", name);
        snprintf(p->sandbox_id, sizeof(p->sandbox_id), "%s", sandbox_id ? sandbox_id : "");
        p->default_effect = default_effect;
        p->actions = actions;
        p->rules = calloc(json_array_size(rules) + 1, sizeof(*p->rules));
        if (!p->rules) {
                free(p);
                return fail(&w, "out of memory");
        }
        for (size_t i = 0; i < json_array_size(rules) && r == 0; i++) {
                snprintf(w.at, sizeof(w.at), "rules[%zu]", i);
                r = parse_rule(&w, json_array_get(rules, i), p->actions, &p->rules[i]);
                p->nrules = i + 1;
                for (size_t j = 0; j < i && r == 0; j++)
                        if (strcmp(p->rules[j].id, p->rules[i].id) == 0)
                                r = fail(&w, "id is also the id of rules[%zu]", j);
        }
        if (r < 0) {
                policy_free(p);
                if (ret_unsupported)
                        *ret_unsupported = unsupported;
                return r;
        }
        *ret = p;
        return 0;
}

void policy_free(struct policy *p)
{
        if (!p)
                return;
        for (size_t i = 0; i < p->nrules; i++)
                rule_release(&p->rules[i]);
        free(p->rules);
        free(p);
}
