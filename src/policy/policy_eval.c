/* Deciding a request against policies: rule matching (globs by fnmatch, regular expressions
 * compiled with the policy), a lexical reading of shell scripts for their executables, and
 * lexical path normalisation. No allocation: this runs on every exec. */
#include "policy/policy_eval.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

int policy_path_normalise(const char *path, char *buf, size_t size)
{
        if (!path || path[0] != '/')
                return -EINVAL;
        if (size < 2)
                return -ENAMETOOLONG;
        size_t n = 0;
        const char *p = path;
        while (*p) {
                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                const char *end = strchrnul(p, '/');
                size_t len = (size_t)(end - p);
                if (len == 1 && p[0] == '.') {
                        /* nothing */
                } else if (len == 2 && p[0] == '.' && p[1] == '.') {
                        while (n > 0 && buf[n - 1] != '/')
                                n--;
                        if (n > 0)
                                n--; /* the '/' before it */
                } else {
                        if (n + 1 + len + 1 > size)
                                return -ENAMETOOLONG;
                        buf[n++] = '/';
                        memcpy(buf + n, p, len);
                        n += len;
                }
                p = end;
        }
        if (n == 0)
                buf[n++] = '/';
        buf[n] = '\0';
        return 0;
}

static const char *base_name(const char *s)
{
        const char *slash = strrchr(s, '/');
        return slash ? slash + 1 : s;
}

static bool is_shell(const char *exe)
{
        static const char *const shells[] = { "sh", "bash", "dash", "ash", "zsh", "ksh", "busybox", NULL };
        const char *b = base_name(exe);
        for (size_t i = 0; shells[i]; i++)
                if (strcmp(b, shells[i]) == 0)
                        return true;
        return false;
}

static bool is_wrapper(const char *w)
{
        static const char *const wrappers[] = { "exec", "env",  "command", "nohup", "time",  "sudo", "xargs", "nice", "then",
                                                "do",   "else", "if",      "while", "until", "!",    "{",     NULL };
        for (size_t i = 0; wrappers[i]; i++)
                if (strcmp(w, wrappers[i]) == 0)
                        return true;
        return false;
}

static bool is_assignment(const char *w)
{
        const char *eq = strchr(w, '=');
        if (!eq || eq == w)
                return false;
        for (const char *c = w; c < eq; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_'))
                        return false;
        return true;
}

/* Reads script's words into scratch, noting the first word of each simple command. Quotes
 * are removed from words (so "cu""rl" is curl); what is inside $(…) is read as commands. */
static size_t script_executables(const char *script, const char **ret, size_t max, char *scratch, size_t size)
{
        size_t found = 0, used = 0;
        bool command_start = true;
        const char *p = script;
        while (*p && found < max) {
                if (*p == ' ' || *p == '\t') {
                        p++;
                        continue;
                }
                if (strchr(";&|()\n`", *p) || (*p == '$' && p[1] == '(')) {
                        command_start = true;
                        p += *p == '$' ? 2 : 1;
                        continue;
                }
                /* A word: up to an unquoted blank or operator. */
                char *word = scratch + used;
                size_t len = 0;
                char quote = 0;
                while (*p) {
                        if (quote) {
                                if (*p == quote)
                                        quote = 0;
                                else if (used + len + 1 < size)
                                        word[len++] = *p;
                                p++;
                                continue;
                        }
                        if (*p == '\'' || *p == '"') {
                                quote = *p++;
                                continue;
                        }
                        if (*p == '\\' && p[1]) {
                                p++;
                        } else if (*p == ' ' || *p == '\t' || strchr(";&|()\n`", *p) || (*p == '$' && p[1] == '(')) {
                                break;
                        }
                        if (used + len + 1 < size)
                                word[len++] = *p;
                        p++;
                }
                if (used + len + 1 > size)
                        break;
                word[len] = '\0';
                used += len + 1;
                if (!command_start || len == 0)
                        continue;
                if (is_assignment(word) || is_wrapper(word) || word[0] == '-')
                        continue; /* the command is the next word */
                ret[found++] = word;
                command_start = false;
        }
        return found;
}

size_t policy_request_executables(const char *const *argv, const char **ret, size_t max, char *scratch, size_t size)
{
        if (!argv || !argv[0] || max == 0)
                return 0;
        size_t n = 0;
        ret[n++] = argv[0];
        if (!is_shell(argv[0]))
                return n;
        /* sh [options] -c SCRIPT: the script is the argument after -c (or after an option
         * cluster holding c, as in -lc or -ec). */
        for (size_t i = 1; argv[i]; i++) {
                if (argv[i][0] != '-')
                        break;
                if (strchr(argv[i] + 1, 'c') && argv[i][1] != '-') {
                        if (argv[i + 1])
                                n += script_executables(argv[i + 1], ret + n, max - n, scratch, size);
                        break;
                }
        }
        return n;
}

static bool glob_matches(const char *pattern, const char *s)
{
        return s && fnmatch(pattern, s, 0) == 0;
}

/* A glob without '/' names an executable by its base name; with one, by its path. */
static bool executable_matches(const char *pattern, const char *exe)
{
        return glob_matches(pattern, strchr(pattern, '/') ? exe : base_name(exe));
}

/* The command line: the words joined by one space, cut at size. */
static void join_argv(const char *const *argv, char *buf, size_t size)
{
        size_t n = 0;
        buf[0] = '\0';
        for (size_t i = 0; argv && argv[i]; i++) {
                int w = snprintf(buf + n, size - n, "%s%s", i ? " " : "", argv[i]);
                if (w < 0 || (size_t)w >= size - n)
                        break; /* cut: a longer line is matched on its start */
                n += (size_t)w;
        }
}

static bool argv_matches(const struct policy_rule *r, const struct policy_request *rq, const char *line)
{
        const char *const *argv = rq->argv;
        if (!argv)
                return false;
        switch (r->argv_kind) {
        case POLICY_ARGV_NONE:
                return true;
        case POLICY_ARGV_EXACT:
        case POLICY_ARGV_PREFIX: {
                size_t i = 0;
                for (; r->argv_words[i]; i++)
                        if (!argv[i] || strcmp(argv[i], r->argv_words[i]) != 0)
                                return false;
                return r->argv_kind == POLICY_ARGV_PREFIX || !argv[i];
        }
        case POLICY_ARGV_GLOB:
                return fnmatch(r->argv_glob, line, 0) == 0;
        case POLICY_ARGV_REGEX:
                return regexec(&r->argv_regex, line, 0, NULL, 0) == 0;
        }
        return false;
}

struct request_view {
        const char *exes[32];
        size_t nexes;
        char scratch[8192];
        char line[8192];
        char path[4096];
        bool path_ok;
};

static bool rule_matches(const struct policy_rule *r, const struct policy_request *rq, const struct request_view *v)
{
        if (!(r->actions & (1u << rq->action)))
                return false;
        if (r->executable) {
                bool any = false;
                for (size_t i = 0; i < v->nexes && !any; i++)
                        any = executable_matches(r->executable, v->exes[i]);
                if (!any)
                        return false;
        }
        if (r->argv_kind != POLICY_ARGV_NONE && !argv_matches(r, rq, v->line))
                return false;
        if (r->user && (!rq->user || strcmp(r->user, rq->user) != 0))
                return false;
        if (r->cwd && !glob_matches(r->cwd, rq->cwd))
                return false;
        if (r->path && (!v->path_ok || !glob_matches(r->path, v->path)))
                return false;
        if (r->templ && !glob_matches(r->templ, rq->templ))
                return false;
        if (r->count_over >= 0 && rq->count <= r->count_over)
                return false;
        return true;
}

void policy_decide(const struct policy *const *policies, size_t n, const struct policy_request *rq, struct policy_decision *ret)
{
        struct request_view v;
        v.nexes = rq->action == POLICY_COMMAND
                ? policy_request_executables(rq->argv, v.exes, sizeof(v.exes) / sizeof(v.exes[0]), v.scratch, sizeof(v.scratch))
                : 0;
        v.line[0] = '\0';
        if (rq->action == POLICY_COMMAND)
                join_argv(rq->argv, v.line, sizeof(v.line));
        v.path_ok = rq->path && policy_path_normalise(rq->path, v.path, sizeof(v.path)) == 0;

        memset(ret, 0, sizeof(*ret));
        ret->effect = POLICY_ALLOW;
        bool denied = false, held = false;
        for (size_t i = 0; i < n; i++) {
                const struct policy *p = policies[i];
                if (!(p->actions & (1u << rq->action)))
                        continue;
                if (p->sandbox_id[0] && (!rq->sandbox_id || strcmp(p->sandbox_id, rq->sandbox_id) != 0))
                        continue;
                struct policy_verdict vd = { .policy = p, .effect = p->default_effect };
                for (size_t k = 0; k < p->nrules; k++)
                        if (rule_matches(&p->rules[k], rq, &v)) {
                                vd.rule = &p->rules[k];
                                vd.effect = p->rules[k].effect;
                                break;
                        }
                if (ret->nverdicts < POLICY_MAX_VERDICTS)
                        ret->verdicts[ret->nverdicts++] = vd;
                if (!denied && !held)
                        ret->deciding = vd;
                if (vd.effect == POLICY_DENY && !denied) {
                        denied = true;
                        ret->effect = POLICY_DENY;
                        ret->deciding = vd;
                } else if (vd.effect == POLICY_REQUIRE_APPROVAL && !denied && !held) {
                        held = true;
                        ret->effect = POLICY_REQUIRE_APPROVAL;
                }
        }
}

void policy_decision_describe(const struct policy_decision *d, const struct policy_request *rq, char *buf, size_t size)
{
        const struct policy_verdict *v = &d->deciding;
        if (!v->policy) {
                snprintf(buf, size, "no policy governs %s", policy_action_name(rq->action));
                return;
        }
        const char *msg = v->rule && v->rule->message[0] ? v->rule->message : NULL;
        snprintf(buf, size, "%s %s by policy \"%s\" (%s), %s%s%s%s%s", policy_action_name(rq->action),
                 v->effect == POLICY_DENY                       ? "denied"
                         : v->effect == POLICY_REQUIRE_APPROVAL ? "needs approval"
                                                                : "allowed",
                 v->policy->name, v->policy->id, v->rule ? "rule \"" : "its default", v->rule ? v->rule->id : "",
                 v->rule ? "\"" : "", msg ? ": " : "", msg ? msg : "");
}
