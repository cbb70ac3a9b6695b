/* cli_table: aligned columns. Cells are stored row-major in one growing array. */
#include "cli/cli_table.h"

#include <errno.h>
#include <stdlib.h>

#include "cleanup.h"
#include "cli/cli_text.h"

struct cli_table {
        size_t n_columns;
        size_t n_rows; /* including the header row, if any */
        size_t cap_cells;
        char **cells;
};

int cli_table_new(size_t n_columns, const char *const *headers, struct cli_table **ret_table)
{
        struct cli_table *t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->n_columns = n_columns;

        if (headers) {
                int r = cli_table_add_row(t, headers);
                if (r < 0) {
                        cli_table_free(t);
                        return r;
                }
        }
        *ret_table = t;
        return 0;
}

struct cli_table *cli_table_free(struct cli_table *t)
{
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_rows * t->n_columns; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t);
        return NULL;
}

int cli_table_add_row(struct cli_table *t, const char *const *cells)
{
        size_t used = t->n_rows * t->n_columns;

        if (used + t->n_columns > t->cap_cells) {
                size_t cap = t->cap_cells ? t->cap_cells * 2 : t->n_columns * 16;
                char **grown = realloc(t->cells, cap * sizeof(*grown));
                if (!grown)
                        return -ENOMEM;
                t->cells = grown;
                t->cap_cells = cap;
        }

        for (size_t c = 0; c < t->n_columns; c++) {
                int r = cli_text_sanitize(cells[c] && *cells[c] ? cells[c] : "-", &t->cells[used + c]);
                if (r < 0) {
                        while (c-- > 0)
                                free(t->cells[used + c]);
                        return r;
                }
        }
        t->n_rows++;
        return 0;
}

int cli_table_print(const struct cli_table *t, FILE *f)
{
        _cleanup_free_ size_t *widths = calloc(t->n_columns ? t->n_columns : 1, sizeof(*widths));
        if (!widths)
                return -ENOMEM;

        for (size_t i = 0; i < t->n_rows * t->n_columns; i++) {
                size_t w = cli_text_width(t->cells[i]);
                if (w > widths[i % t->n_columns])
                        widths[i % t->n_columns] = w;
        }

        for (size_t row = 0; row < t->n_rows; row++) {
                for (size_t c = 0; c < t->n_columns; c++) {
                        const char *cell = t->cells[row * t->n_columns + c];
                        fputs(cell, f);
                        if (c + 1 == t->n_columns)
                                break;
                        for (size_t pad = cli_text_width(cell); pad < widths[c] + 2; pad++)
                                fputc(' ', f);
                }
                fputc('\n', f);
        }
        return 0;
}
