/* cli_table: rows of text printed as aligned columns (two spaces apart, no trailing blanks). */
#pragma once

#include <stddef.h>
#include <stdio.h>

struct cli_table;

/* headers may be NULL for a table without a header line. */
int cli_table_new(size_t n_columns, const char *const *headers, struct cli_table **ret_table);
struct cli_table *cli_table_free(struct cli_table *t);

/* Copies n_columns cells (NULL and "" print as "-", so every column has a word), made safe
 * for the terminal. */
int cli_table_add_row(struct cli_table *t, const char *const *cells);

int cli_table_print(const struct cli_table *t, FILE *f);

static inline void cli_table_freep(struct cli_table **t)
{
        cli_table_free(*t);
}
#define _cleanup_cli_table_ __attribute__((cleanup(cli_table_freep)))
