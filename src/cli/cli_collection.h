/* cli_collection: the two verbs every API collection has in the CLI.
 *
 * `ls` is a paged GET of the collection shown as a table (or the JSON answer with
 * --json); `rm` is a DELETE of one member, answered by its id (or the JSON answer).
 * Both print why on failure (cli_request) and return the CLI's exit status. */
#pragma once

#include <stddef.h>

#include "cli/cli.h"
#include "cli/cli_output.h"
#include "cli/http_path.h"

/* GET path (every page), the answer's array `member` shown with columns. */
int cli_collection_list(struct cli *cli, const struct http_path *path, const char *member,
                        const struct cli_output_column *columns, size_t n_columns);

/* DELETE path; on success prints shown_id (the id as the user gave it). */
int cli_collection_delete(struct cli *cli, const struct http_path *path, const char *shown_id);
