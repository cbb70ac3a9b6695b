/* spacefile: the parser of Spacefiles, the documented subset of Dockerfile syntax that
 * template builds accept (docs/spacefile.md). Pure: no I/O, no globals, so it can be fuzzed
 * (spacefile_parse on any bytes never crashes and never leaks). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum spacefile_kind {
        SPACEFILE_FROM,
        SPACEFILE_RUN,
        SPACEFILE_COPY,
        SPACEFILE_ENV,
        SPACEFILE_WORKDIR,
        SPACEFILE_USER,
        SPACEFILE_LABEL,
        SPACEFILE_IDLE, /* space's own: IDLE <after_s> [hibernate|stop], the idle policy of its sandboxes */
        SPACEFILE_SUDO, /* space's own: SUDO on|off, the template's users may become root inside */
};

struct spacefile_step {
        enum spacefile_kind kind;
        unsigned line; /* where the instruction starts, from 1 */
        char *text;    /* "KEYWORD args", continuations joined: what the cache key and the log use */
        char *value;   /* FROM, WORKDIR, USER, SUDO: the argument; RUN shell form: the command */
        char **argv;   /* RUN exec form: the argv; COPY: sources then the destination;
                         * ENV, LABEL: key, value, key, value…; IDLE: after_s, action */
        size_t argc;
        char *chown;  /* COPY --chown=user[:group], or NULL */
        mode_t chmod; /* COPY --chmod=, when has_chmod */
        bool has_chmod;
};

struct spacefile {
        struct spacefile_step *steps;
        size_t nsteps;
};

struct spacefile_error {
        unsigned line;
        char message[256];
};

#define SPACEFILE_MAX_BYTES (1u << 20)
#define SPACEFILE_MAX_STEPS 256

/* Parses text (len bytes, need not be NUL-terminated). Returns 0, or -1 with err filled
 * (the line and what is wrong); *ret is untouched on failure. The first step is FROM. */
int spacefile_parse(const char *text, size_t len, struct spacefile *ret, struct spacefile_error *err);
void spacefile_release(struct spacefile *f);
const char *spacefile_kind_name(enum spacefile_kind k);
