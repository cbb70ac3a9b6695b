/* The web console's files (docs/console.md), served at /console from cfg.console_dir on the
 * API's own listener. The directory is flat: /console is its index.html and /console/<name>
 * one file, whose name is letters, digits, '.', '_' and '-', starting with a letter or
 * digit (no dot files, no '..', no subdirectory) and ending in an extension of the table
 * below; anything else is a 404. The file is opened without following a symlink and must be
 * a regular file. Every answer carries the console's Content-Security-Policy. */
#include "api/console_static.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "spaced/spaced_context.h"

/* Scripts and connections only from spaced itself; no inline script, no frames, no forms
 * elsewhere. Styles allow inline: xterm.js sets its cell styles from script. */
#define CONSOLE_CSP                                                                                                        \
        "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self'; " \
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

bool console_static_path(const char *url)
{
        return strcmp(url, "/console") == 0 || strncmp(url, "/console/", 9) == 0;
}

const char *console_static_type(const char *name)
{
        static const struct {
                const char *ext, *type;
        } types[] = {
                { ".html", "text/html; charset=utf-8" },
                { ".js", "text/javascript; charset=utf-8" },
                { ".mjs", "text/javascript; charset=utf-8" },
                { ".css", "text/css; charset=utf-8" },
                { ".svg", "image/svg+xml" },
                { ".png", "image/png" },
                { ".json", "application/json" },
        };
        size_t n = strlen(name);
        if (!n ||
            !((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= '0' && name[0] <= '9')))
                return NULL;
        for (size_t i = 0; i < n; i++) {
                char c = name[i];
                bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                        c == '-';
                if (!ok || (c == '.' && name[i + 1] == '.'))
                        return NULL;
        }
        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
                size_t e = strlen(types[i].ext);
                if (n > e && strcmp(name + n - e, types[i].ext) == 0)
                        return types[i].type;
        }
        return NULL;
}

struct file_body {
        int fd;
};

static ssize_t file_read(void *cls, char *buf, size_t max)
{
        struct file_body *f = cls;
        ssize_t n;
        do
                n = read(f->fd, buf, max);
        while (n < 0 && errno == EINTR);
        return n;
}

static void file_free(void *cls)
{
        struct file_body *f = cls;
        close(f->fd);
        free(f);
}

static void add_header(struct api_response *resp, const char *name, const char *value)
{
        if (!resp->headers)
                resp->headers = json_object();
        json_object_set_new(resp->headers, name, json_string(value));
}

static void not_found(struct api_response *resp)
{
        struct space_error err;
        space_error_set(&err, SPACE_E_NOT_FOUND, "no such console file");
        api_response_error(resp, &err);
}

void route_console_static(struct api_request *req, struct api_response *resp)
{
        struct space_error err;
        add_header(resp, "Content-Security-Policy", CONSOLE_CSP);
        add_header(resp, "X-Content-Type-Options", "nosniff");
        add_header(resp, "Referrer-Policy", "no-referrer");
        add_header(resp, "Cache-Control", "no-cache");
        if (strcmp(req->method, "GET") != 0 && strcmp(req->method, "HEAD") != 0) {
                space_error_set(&err, SPACE_E_METHOD_NOT_ALLOWED, "%s is not allowed on the console's files", req->method);
                return api_response_error(resp, &err);
        }
        /* segments[0] is "console" (console_static_path) */
        const char *name = req->nsegments == 1 ? "index.html" : req->nsegments == 2 ? req->segments[1] : NULL;
        const char *type = name ? console_static_type(name) : NULL;
        if (!type)
                return not_found(resp);
        _cleanup_close_ int dir = open(req->ctx->cfg.console_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0) {
                space_error_set(&err, SPACE_E_UNAVAILABLE, "the console's files are not installed (--console-dir)");
                return api_response_error(resp, &err);
        }
        _cleanup_close_ int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return not_found(resp);
        struct file_body *f = malloc(sizeof(*f));
        if (!f) {
                space_error_set(&err, SPACE_E_INTERNAL, "out of memory");
                return api_response_error(resp, &err);
        }
        f->fd = TAKE_FD(fd);
        resp->status = 200;
        resp->content_type = type;
        resp->stream = (struct api_stream){
                .read = file_read, .free = file_free, .cls = f, .sized = true, .size = (uint64_t)st.st_size
        };
}
