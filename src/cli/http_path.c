/* http_path: escaped URL path and query building (curl_easy_escape does the encoding). */
#include "cli/http_path.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void http_path_append(struct http_path *p, const char *s)
{
        if (p->error < 0)
                return;

        size_t n = strlen(s);
        if (p->len + n + 1 > p->cap) {
                size_t cap = p->cap ? p->cap : 128;
                while (cap < p->len + n + 1)
                        cap *= 2;
                char *buf = realloc(p->buf, cap);
                if (!buf) {
                        p->error = -ENOMEM;
                        return;
                }
                p->buf = buf;
                p->cap = cap;
        }
        memcpy(p->buf + p->len, s, n + 1);
        p->len += n;
}

static void http_path_append_escaped(struct http_path *p, const char *s)
{
        if (p->error < 0)
                return;

        /* Since curl 7.82 the handle argument is ignored; before, it only mattered for
         * character set conversions that Linux builds do not have. */
        char *escaped = curl_easy_escape(NULL, s, 0);
        if (!escaped) {
                p->error = -ENOMEM;
                return;
        }
        http_path_append(p, escaped);
        curl_free(escaped);
}

void http_path_init(struct http_path *p, const char *literal)
{
        *p = (struct http_path){};
        http_path_append(p, literal);
}

void http_path_segment(struct http_path *p, const char *segment)
{
        if (segment[0] == '\0') {
                if (p->error == 0)
                        p->error = -EINVAL;
                return;
        }
        http_path_append(p, "/");
        /* curl leaves '.' alone; encode dot segments so they name no other route. */
        if (strcmp(segment, ".") == 0)
                http_path_append(p, "%2E");
        else if (strcmp(segment, "..") == 0)
                http_path_append(p, "%2E%2E");
        else
                http_path_append_escaped(p, segment);
}

void http_path_query(struct http_path *p, const char *name, const char *value)
{
        http_path_append(p, p->has_query ? "&" : "?");
        p->has_query = true;
        http_path_append_escaped(p, name);
        http_path_append(p, "=");
        http_path_append_escaped(p, value);
}

const char *http_path_string(const struct http_path *p)
{
        return p->error < 0 ? NULL : p->buf;
}

int http_path_error(const struct http_path *p)
{
        return p->error;
}

void http_path_release(struct http_path *p)
{
        free(p->buf);
        *p = (struct http_path){};
}
