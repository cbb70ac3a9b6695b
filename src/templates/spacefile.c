#include "templates/spacefile.h"

#include <ctype.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cleanup.h"
#include "operations/idle_policy.h"

struct strv {
        char **v;
        size_t n;
};

static void strv_free(struct strv *s)
{
        for (size_t i = 0; i < s->n; i++)
                free(s->v[i]);
        free(s->v);
        s->v = NULL;
        s->n = 0;
}

static int strv_push(struct strv *s, char *owned)
{
        if (!owned)
                return -1;
        char **grown = realloc(s->v, (s->n + 2) * sizeof(*grown));
        if (!grown) {
                free(owned);
                return -1;
        }
        s->v = grown;
        s->v[s->n++] = owned;
        s->v[s->n] = NULL;
        return 0;
}

static int fail(struct spacefile_error *err, unsigned line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct spacefile_error *err, unsigned line, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        err->line = line;
        vsnprintf(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
        return -1;
}

static const char *skip_space(const char *p)
{
        while (*p == ' ' || *p == '\t')
                p++;
        return p;
}

/* Shell-like words: whitespace separates, "…" (with \" and \\) and '…' quote, a backslash
 * outside quotes escapes the next character. Returns 0, or -1 on an unterminated quote. */
static int split_words(const char *s, struct strv *out)
{
        size_t cap = strlen(s) + 1;
        for (const char *p = skip_space(s); *p; p = skip_space(p)) {
                char *w = malloc(cap);
                size_t n = 0;
                if (!w)
                        return -1;
                while (*p && *p != ' ' && *p != '\t') {
                        if (*p == '"' || *p == '\'') {
                                char q = *p++;
                                while (*p && *p != q) {
                                        if (q == '"' && *p == '\\' && (p[1] == '"' || p[1] == '\\'))
                                                p++;
                                        w[n++] = *p++;
                                }
                                if (*p != q) {
                                        free(w);
                                        return -1;
                                }
                                p++;
                        } else if (*p == '\\' && p[1]) {
                                w[n++] = p[1];
                                p += 2;
                        } else {
                                w[n++] = *p++;
                        }
                }
                w[n] = '\0';
                if (strv_push(out, w) < 0)
                        return -1;
        }
        return 0;
}

/* ["a", "b"]: 1 and the strings when s is a JSON array of strings, 0 when it is not one. */
static int json_words(const char *s, struct strv *out)
{
        if (*s != '[')
                return 0;
        _cleanup_json_ json_t *j = json_loads(s, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_array(j) || json_array_size(j) == 0)
                return 0;
        size_t i;
        json_t *v; /* borrowed from j */
        json_array_foreach(j, i, v) if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) return 0;
        json_array_foreach(j, i, v) if (strv_push(out, strdup(json_string_value(v))) < 0) return -1;
        return 1;
}

static bool env_name_ok(const char *s, size_t n)
{
        if (n == 0 || n > 255 || !(s[0] == '_' || isalpha((unsigned char)s[0])))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!(s[i] == '_' || isalnum((unsigned char)s[i])))
                        return false;
        return true;
}

static bool label_key_ok(const char *s, size_t n)
{
        if (n == 0 || n > 127)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(isalnum((unsigned char)s[i]) || strchr("._-/", s[i])))
                        return false;
        return true;
}

/* ENV/LABEL: key=value… (quotes allowed), or ENV's older "key value with spaces". */
static int parse_pairs(struct spacefile_step *st, const char *args, bool is_env, struct spacefile_error *err)
{
        const char *what = is_env ? "ENV" : "LABEL";
        struct strv words = { 0 }, pairs = { 0 };
        const char *first_end = args + strcspn(args, " \t");
        if (is_env && !memchr(args, '=', (size_t)(first_end - args))) {
                /* ENV key value */
                const char *value = skip_space(first_end);
                if (!env_name_ok(args, (size_t)(first_end - args)) || !*value)
                        return fail(err, st->line, "ENV needs key=value or \"key value\" with a valid name");
                if (strv_push(&pairs, strndup(args, (size_t)(first_end - args))) < 0 || strv_push(&pairs, strdup(value)) < 0)
                        goto oom;
                goto done;
        }
        if (split_words(args, &words) < 0) {
                strv_free(&words);
                return fail(err, st->line, "%s has an unterminated quote", what);
        }
        if (words.n == 0) {
                strv_free(&words);
                return fail(err, st->line, "%s needs at least one key=value", what);
        }
        for (size_t i = 0; i < words.n; i++) {
                char *eq = strchr(words.v[i], '=');
                size_t klen = eq ? (size_t)(eq - words.v[i]) : 0;
                if (!eq || !(is_env ? env_name_ok(words.v[i], klen) : label_key_ok(words.v[i], klen))) {
                        strv_free(&words);
                        strv_free(&pairs);
                        return fail(err, st->line, "%s wants key=value pairs with valid keys", what);
                }
                if (strv_push(&pairs, strndup(words.v[i], klen)) < 0 || strv_push(&pairs, strdup(eq + 1)) < 0)
                        goto oom;
        }
done:
        strv_free(&words);
        st->argv = pairs.v;
        st->argc = pairs.n;
        return 0;
oom:
        strv_free(&words);
        strv_free(&pairs);
        return fail(err, st->line, "out of memory");
}

static int parse_copy(struct spacefile_step *st, const char *args, struct spacefile_error *err)
{
        const char *p = args;
        while (strncmp(p, "--", 2) == 0) {
                size_t n = strcspn(p, " \t");
                if (strncmp(p, "--chown=", 8) == 0 && n > 8) {
                        free(st->chown);
                        st->chown = strndup(p + 8, n - 8);
                } else if (strncmp(p, "--chmod=", 8) == 0 && n > 8) {
                        char digits[8] = { 0 };
                        if (n - 8 >= sizeof(digits))
                                return fail(err, st->line, "COPY --chmod wants an octal mode such as 0644");
                        memcpy(digits, p + 8, n - 8);
                        char *end;
                        unsigned long m = strtoul(digits, &end, 8);
                        if (*end || m > 07777)
                                return fail(err, st->line, "COPY --chmod wants an octal mode such as 0644");
                        st->chmod = (mode_t)m;
                        st->has_chmod = true;
                } else if (strncmp(p, "--from=", 7) == 0) {
                        return fail(err, st->line, "COPY --from is not supported (Spacefiles have one stage)");
                } else {
                        return fail(err, st->line, "unknown COPY option %.*s (supported: --chown=, --chmod=)",
                                    (int)(n > 40 ? 40 : n), p);
                }
                p = skip_space(p + n);
        }
        struct strv words = { 0 };
        int j = json_words(p, &words);
        if (j == 0 && split_words(p, &words) < 0) {
                strv_free(&words);
                return fail(err, st->line, "COPY has an unterminated quote");
        }
        if (j < 0 || words.n < 2) {
                strv_free(&words);
                return fail(err, st->line, "COPY needs at least one source and a destination");
        }
        for (size_t i = 0; i < words.n; i++)
                if (!words.v[i][0]) {
                        strv_free(&words);
                        return fail(err, st->line, "COPY paths must not be empty");
                }
        if (words.n > 2 && words.v[words.n - 1][strlen(words.v[words.n - 1]) - 1] != '/') {
                strv_free(&words);
                return fail(err, st->line, "COPY with several sources needs a destination ending in /");
        }
        st->argv = words.v;
        st->argc = words.n;
        return 0;
}

static int parse_run(struct spacefile_step *st, const char *args, struct spacefile_error *err)
{
        struct strv words = { 0 };
        int j = json_words(args, &words);
        if (j < 0)
                return fail(err, st->line, "out of memory");
        if (j == 1) {
                st->argv = words.v;
                st->argc = words.n;
                return 0;
        }
        st->value = strdup(args);
        return st->value ? 0 : fail(err, st->line, "out of memory");
}

/* IDLE <after_s> [hibernate|stop]: seconds paused (0: off, up to a week), then the action. */
static int parse_idle(struct spacefile_step *st, const char *args, struct spacefile_error *err)
{
        char after[16], action[16] = "hibernate", extra[2];
        int n = sscanf(args, "%15s %15s %1s", after, action, extra);
        size_t digits = strspn(after, "0123456789");
        enum idle_action a;
        if (n < 1 || n > 2 || digits == 0 || after[digits] || digits > 7 || atol(after) > IDLE_POLICY_MAX_S)
                return fail(err, st->line, "IDLE takes seconds (0 to %d) and an action (hibernate or stop)", IDLE_POLICY_MAX_S);
        if (idle_action_from_name(action, &a) < 0)
                return fail(err, st->line, "IDLE's action is hibernate or stop");
        struct strv v = { 0 };
        char norm[16];
        snprintf(norm, sizeof(norm), "%ld", atol(after));
        if (strv_push(&v, strdup(norm)) < 0 || strv_push(&v, strdup(action)) < 0) {
                strv_free(&v);
                return fail(err, st->line, "out of memory");
        }
        st->argv = v.v;
        st->argc = v.n;
        return 0;
}

static const struct {
        const char *name;
        enum spacefile_kind kind;
} keywords[] = {
        { "FROM", SPACEFILE_FROM },   { "RUN", SPACEFILE_RUN },         { "COPY", SPACEFILE_COPY },
        { "ENV", SPACEFILE_ENV },     { "WORKDIR", SPACEFILE_WORKDIR }, { "USER", SPACEFILE_USER },
        { "LABEL", SPACEFILE_LABEL }, { "IDLE", SPACEFILE_IDLE },       { "SUDO", SPACEFILE_SUDO },
};

const char *spacefile_kind_name(enum spacefile_kind k)
{
        for (size_t i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++)
                if (keywords[i].kind == k)
                        return keywords[i].name;
        return "?";
}

static int parse_instruction(struct spacefile_step *st, char *logical, struct spacefile_error *err)
{
        char *kw = logical, *args = logical + strcspn(logical, " \t");
        size_t kwlen = (size_t)(args - kw);
        args = (char *)skip_space(args);
        size_t alen = strlen(args);
        while (alen && (args[alen - 1] == ' ' || args[alen - 1] == '\t'))
                args[--alen] = '\0';
        size_t i;
        for (i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++)
                if (strlen(keywords[i].name) == kwlen && strncasecmp(keywords[i].name, kw, kwlen) == 0)
                        break;
        if (i == sizeof(keywords) / sizeof(keywords[0]))
                return fail(err, st->line,
                            "%.*s is not a Spacefile instruction (FROM, RUN, COPY, ENV, WORKDIR, USER, LABEL, IDLE, SUDO)",
                            (int)(kwlen > 32 ? 32 : kwlen), kw);
        st->kind = keywords[i].kind;
        if (!*args)
                return fail(err, st->line, "%s needs an argument", keywords[i].name);
        if (asprintf(&st->text, "%s %s", keywords[i].name, args) < 0) {
                st->text = NULL;
                return fail(err, st->line, "out of memory");
        }
        switch (st->kind) {
        case SPACEFILE_RUN:
                return parse_run(st, args, err);
        case SPACEFILE_COPY:
                return parse_copy(st, args, err);
        case SPACEFILE_ENV:
                return parse_pairs(st, args, true, err);
        case SPACEFILE_LABEL:
                return parse_pairs(st, args, false, err);
        case SPACEFILE_FROM:
                if (strpbrk(args, " \t"))
                        return fail(err, st->line, "FROM takes one template name (no AS, no --platform)");
                break;
        case SPACEFILE_WORKDIR:
                if (strpbrk(args, "\t\n"))
                        return fail(err, st->line, "WORKDIR takes one path");
                break;
        case SPACEFILE_USER:
                if (strpbrk(args, " \t"))
                        return fail(err, st->line, "USER takes one user[:group]");
                break;
        case SPACEFILE_IDLE:
                return parse_idle(st, args, err);
        case SPACEFILE_SUDO:
                if (strcasecmp(args, "on") != 0 && strcasecmp(args, "off") != 0)
                        return fail(err, st->line, "SUDO takes on or off");
                break;
        }
        st->value = strdup(args);
        return st->value ? 0 : fail(err, st->line, "out of memory");
}

static void step_release(struct spacefile_step *st)
{
        free(st->text);
        free(st->value);
        free(st->chown);
        struct strv v = { st->argv, st->argc };
        strv_free(&v);
}

void spacefile_release(struct spacefile *f)
{
        if (!f)
                return;
        for (size_t i = 0; i < f->nsteps; i++)
                step_release(&f->steps[i]);
        free(f->steps);
        f->steps = NULL;
        f->nsteps = 0;
}

static int add_step(struct spacefile *f, char *logical, unsigned line, struct spacefile_error *err)
{
        if (f->nsteps == SPACEFILE_MAX_STEPS)
                return fail(err, line, "more than %d instructions", SPACEFILE_MAX_STEPS);
        struct spacefile_step *grown = realloc(f->steps, (f->nsteps + 1) * sizeof(*grown));
        if (!grown)
                return fail(err, line, "out of memory");
        f->steps = grown;
        struct spacefile_step *st = &f->steps[f->nsteps];
        memset(st, 0, sizeof(*st));
        st->line = line;
        f->nsteps++; /* counted now so that spacefile_release frees a half-filled step */
        if (parse_instruction(st, logical, err) < 0)
                return -1;
        bool is_from = st->kind == SPACEFILE_FROM;
        if (f->nsteps == 1 && !is_from)
                return fail(err, line, "the first instruction must be FROM <template>");
        if (f->nsteps > 1 && is_from)
                return fail(err, line, "only one FROM is allowed (Spacefiles have one stage)");
        return 0;
}

int spacefile_parse(const char *text, size_t len, struct spacefile *ret, struct spacefile_error *err)
{
        struct spacefile f = { 0 };
        if (len > SPACEFILE_MAX_BYTES)
                return fail(err, 0, "the Spacefile is larger than %u bytes", SPACEFILE_MAX_BYTES);
        if (memchr(text, '\0', len))
                return fail(err, 0, "the Spacefile holds a NUL byte (is it a text file?)");
        char *logical = malloc(len + 1);
        if (!logical)
                return fail(err, 0, "out of memory");
        size_t llen = 0;
        unsigned lineno = 0, start = 0;
        const char *p = text, *end = text + len;
        int r = 0;
        while (r == 0 && p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                const char *eol = nl ? nl : end;
                lineno++;
                size_t n = (size_t)(eol - p);
                while (n && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
                        n--;
                const char *first = skip_space(p);
                bool blank_or_comment = first >= p + n || *first == '#';
                if (!blank_or_comment) {
                        bool cont = n > 0 && p[n - 1] == '\\';
                        if (llen == 0) {
                                start = lineno;
                                n -= (size_t)(first - p);
                                p = first;
                        }
                        size_t take = cont ? n - 1 : n;
                        memcpy(logical + llen, p, take);
                        llen += take;
                        if (!cont) {
                                logical[llen] = '\0';
                                r = add_step(&f, logical, start, err);
                                llen = 0;
                        }
                }
                p = nl ? nl + 1 : end;
        }
        if (r == 0 && llen > 0) {
                logical[llen] = '\0';
                r = add_step(&f, logical, start, err);
        }
        free(logical);
        if (r == 0 && f.nsteps == 0)
                r = fail(err, 0, "the Spacefile is empty: it needs at least FROM <template>");
        if (r < 0) {
                spacefile_release(&f);
                return -1;
        }
        *ret = f;
        return 0;
}
