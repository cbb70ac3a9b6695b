/* cli_output: how an answer is shown — pretty JSON (--json) or text for people: "key: value"
 * lines for one object, aligned tables for lists. Everything goes to stdout. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "cli/cli_cell.h"

struct cli_output_column {
        const char *header;
        const char *path;        /* dotted member path, e.g. "environment.base" */
        enum cli_cell_kind cell; /* how the value shows (cli_cell.h) */
        size_t max;              /* at most this many columns wide (0: no cap) */
};

/* Pretty JSON and a newline; nothing for NULL (an empty answer). */
int cli_output_json(const json_t *answer);

/* One "key: value" line per member, nested objects flattened to "parent.child". */
int cli_output_object(const json_t *object);

/* A table with one row per element of list. */
int cli_output_list(const json_t *list, const struct cli_output_column *columns, size_t n_columns);

/* The member at a dotted path, or NULL. */
json_t *cli_output_lookup(const json_t *object, const char *path);

/* The string at a dotted path, or NULL if missing or not a string. */
const char *cli_output_string(const json_t *object, const char *path);

/* A value as text: strings as is, "-" for null or missing, arrays joined with ',', objects
 * as compact JSON. */
int cli_output_format(const json_t *value, char **ret_text);

/* An answer for `get`-like verbs: pretty JSON with --json, else "key: value" lines.
 * Returns the exit status. */
int cli_output_show(bool json, const json_t *answer);
/* An answer for `ls`-like verbs: pretty JSON with --json, else a table of answer[member]. */
int cli_output_show_list(bool json, const json_t *answer, const char *member, const struct cli_output_column *columns,
                         size_t n_columns);

/* Turns the result of printing into an exit status, saying on stderr what went wrong
 * (-EBADMSG: the answer does not have the expected shape). */
int cli_output_exit(int r);
