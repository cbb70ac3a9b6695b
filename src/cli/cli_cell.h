/* cli_cell: how a table shows a value so that tables fit 100 columns, as docker and kubectl
 * show them: a time as an age ("45s", "12m", "3h", "9d"; "in 29d" ahead), a digest by its
 * first 12 hex digits, free text cut to a width with "…". --json and `get` show values whole. */
#pragma once

#include <stddef.h>

enum cli_cell_kind {
        CLI_CELL_TEXT = 0, /* as it is */
        CLI_CELL_AGE,      /* an RFC 3339 UTC time */
        CLI_CELL_TIME,     /* an RFC 3339 UTC time, to the second: "2026-12-02 03:38:23" */
        CLI_CELL_DIGEST,   /* "sha256:<hex>" */
};

/* Rewrites *text (a malloc'd cell) in place for kind and the width cap (0: none). Text that
 * does not have the expected form is left as it is (then cut to the cap). */
int cli_cell_shape(char **text, enum cli_cell_kind kind, size_t max);
