/* console_static: the web console's files at /console (docs/console.md). Not an API route:
 * no key, GET and HEAD only, from the API's listener. */
#pragma once

#include <stdbool.h>

#include "api/api_request.h"

/* Whether url is the console's (/console or /console/...). */
bool console_static_path(const char *url);
/* The Content-Type of a console file name, or NULL when the name is refused (not one flat,
 * plain name with a known extension). */
const char *console_static_type(const char *name);
/* Answers a console file, index.html for /console itself. */
void route_console_static(struct api_request *req, struct api_response *resp);
