/* cli_request: one API call with the error reporting all verbs share.
 *
 * On a 2xx answer returns 0 with the status and the parsed answer (NULL when empty).
 * Otherwise it prints why on stderr — "space: <message> (<code>)" for API errors,
 * "space: cannot reach spaced at URL: ..." for connection failures — and returns -errno
 * (-EPROTO for an API error). Callers then just return CLI_EXIT_FAILURE. */
#pragma once

#include <jansson.h>

#include "cli/cli.h"
#include "cli/http_client.h"
#include "cli/http_path.h"

#define CLI_REQUEST_TIMEOUT_S 60L

/* ret_status may be NULL; it is also set for an answer with an API error. */
int cli_request(struct cli *cli, const char *method, const struct http_path *path, const json_t *body, long timeout_s,
                long *ret_status, json_t **ret_body);

/* The same without a body, printing nothing on failure (a question whose "no" the caller
 * handles) and without riding out restarts. */
int cli_request_quiet(struct cli *cli, const char *method, const struct http_path *path, long timeout_s, long *ret_status,
                      json_t **ret_body);

/* GET of a paged list (?limit=, ?cursor=): follows next_cursor to the last page and
 * answers {member: [every item], "next_cursor": null}, so a listing shows everything. */
int cli_request_list(struct cli *cli, const struct http_path *path, const char *member, json_t **ret_body);

/* The same for a streamed transfer (http_client_transfer): ret_body is NULL after a 2xx
 * answer that went to stream->write. A failure of the stream's own read or write
 * (-ECANCELED, stream->error says why) is left to the caller to report: it knows the file. */
int cli_request_stream(struct cli *cli, const char *method, const struct http_path *path, struct http_client_stream *stream,
                       long *ret_status, json_t **ret_body);

/* Prints the error carried by an answer with a non-2xx status. */
void cli_request_report(const struct cli *cli, long status, const json_t *answer);
