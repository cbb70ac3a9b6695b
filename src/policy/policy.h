/* policy: a project's rules on what its callers may do, enforced by spaced below the model
 * (docs/governance.md). A policy is a JSON document (an ordered list of rules and a
 * default) compiled once into a struct policy; policy_eval.h decides a request against the
 * policies that apply to it. This layer knows no store and no HTTP: src/service/ loads the
 * documents, caches the compiled set (policy_cache.h) and enforces the decision. */
#pragma once

#include <jansson.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a rule can be about. Append only: names are the documents' words. */
enum policy_action {
        POLICY_COMMAND = 0,     /* "command": exec, streamed commands, E2B processes */
        POLICY_FILE_READ,       /* "file.read": download, stat, list, watch */
        POLICY_FILE_WRITE,      /* "file.write": upload, mkdir, the destination of a move */
        POLICY_FILE_DELETE,     /* "file.delete": remove, the source of a move */
        POLICY_SANDBOX_CREATE,  /* "sandbox.create" */
        POLICY_SANDBOX_FORK,    /* "sandbox.fork" */
        POLICY_SNAPSHOT_EXPORT, /* "snapshot.export" */
        _POLICY_ACTION_MAX,
};
#define POLICY_ACTIONS_ALL ((1u << _POLICY_ACTION_MAX) - 1)

const char *policy_action_name(enum policy_action a);
/* -EINVAL when unknown. */
int policy_action_from_name(const char *name, enum policy_action *ret);

enum policy_effect { POLICY_ALLOW = 0, POLICY_DENY, POLICY_REQUIRE_APPROVAL };
const char *policy_effect_name(enum policy_effect e);

enum policy_argv_kind { POLICY_ARGV_NONE = 0, POLICY_ARGV_EXACT, POLICY_ARGV_PREFIX, POLICY_ARGV_GLOB, POLICY_ARGV_REGEX };

struct policy_rule {
        char id[64];
        enum policy_effect effect;
        char message[257];
        unsigned actions; /* mask of 1 << enum policy_action it applies to */
        /* What it matches: every condition given must hold; NULL / NONE / < 0: not asked. */
        char *executable; /* glob: the executables of the command (policy_request_executables) */
        enum policy_argv_kind argv_kind;
        char **argv_words; /* exact / prefix: NULL-terminated */
        char *argv_glob;   /* glob on the command line, words joined by one space */
        regex_t argv_regex;
        char *user;         /* exact user name or uid, as the command runs */
        char *cwd;          /* glob on the working directory */
        char *path;         /* glob on the file's normalised absolute path */
        char *templ;        /* glob on the sandbox's template (the one asked for, on create) */
        int64_t count_over; /* a fork of more than this many children */
};

struct policy {
        char id[32];
        char project_id[32];
        char name[64];
        char sandbox_id[32]; /* "" for the whole project */
        int64_t version;
        unsigned actions; /* what the default applies to (all when the document names none) */
        enum policy_effect default_effect;
        struct policy_rule *rules;
        size_t nrules;
};

/* The largest document policy_compile takes (rules per policy). */
#define POLICY_MAX_RULES 1000

/* Validates the document doc and compiles it into *ret (policy_free). On a bad document
 * fills why with what is wrong and where ("rules[2] (\"no-curl\"): match.argv.regex: …"),
 * sets *ret_unsupported when the document is well formed but asks for what this spaced
 * does not do yet (egress; require_approval on another action than command), and returns
 * -EINVAL. The record fields (id,
 * project, version) are the caller's: policy_compile leaves them empty. */
int policy_compile(const json_t *doc, struct policy **ret, bool *ret_unsupported, char *why, size_t why_size);
void policy_free(struct policy *p);
