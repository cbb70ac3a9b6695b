/* policy_eval: deciding one request against the policies that apply to it.
 *
 * Each policy that governs the request's action gives its verdict: its first rule that
 * matches, else its default. The request is denied when any of them denies (so a policy
 * narrowed to one sandbox can add denials, never lift its project's); else it is held for
 * approval when any of them requires it; else allowed. docs/governance.md states the same. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/policy.h"

/* What is being asked, in the words rules match on. Fields that do not apply are NULL / 0. */
struct policy_request {
        enum policy_action action;
        const char *sandbox_id;  /* NULL on create */
        const char *templ;       /* the sandbox's template (the one asked for, on create) */
        const char *const *argv; /* command: NULL-terminated, as it is started */
        const char *user;        /* command, file: as it runs; NULL: the sandbox's default */
        const char *cwd;         /* command: NULL: the sandbox's default */
        const char *path;        /* file: absolute, as asked (normalised before matching) */
        int64_t count;           /* fork: how many children */
};

/* One policy's verdict. */
struct policy_verdict {
        const struct policy *policy;
        const struct policy_rule *rule; /* NULL: its default decided */
        enum policy_effect effect;
};

#define POLICY_MAX_VERDICTS 64

struct policy_decision {
        enum policy_effect effect;
        struct policy_verdict deciding; /* the first denial; else the first require_approval; else the last allow
                                           (policy NULL: no policy applied) */
        struct policy_verdict verdicts[POLICY_MAX_VERDICTS]; /* every policy that governs the action, in order */
        size_t nverdicts;
};

/* Decides rq against policies[0..n) (the project's, then the sandbox's). Policies narrowed
 * to another sandbox than rq->sandbox_id are skipped. */
void policy_decide(const struct policy *const *policies, size_t n, const struct policy_request *rq, struct policy_decision *ret);

/* The clear sentence of a denial: which policy and rule, and the rule's message. */
void policy_decision_describe(const struct policy_decision *d, const struct policy_request *rq, char *buf, size_t size);

/* The executables a command names (into ret[0..max), returns how many): argv[0], and when
 * it is a shell given a script (sh|bash|dash|ash|zsh … -c SCRIPT) the first word of each
 * simple command of the script, read lexically (after ; & | && || ( ) newlines and
 * backquotes, past VAR=value assignments and the wrappers exec, env, command, nohup, time,
 * sudo, xargs). Pointers into scratch (size bytes), which they borrow. */
size_t policy_request_executables(const char *const *argv, const char **ret, size_t max, char *scratch, size_t size);

/* path made absolute and lexical: repeated '/' folded, "." and ".." resolved (".." at / is
 * /). Into buf; -ENAMETOOLONG when it does not fit, -EINVAL when path is not absolute. */
int policy_path_normalise(const char *path, char *buf, size_t size);
