/* See http_error_page.h: libmicrohttpd's own error pages, answered in JSON. */
#include "api/http_error_page.h"

#include <dlfcn.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <poll.h>
#include <sys/socket.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct MHD_Response *create_fn(size_t, void *, enum MHD_ResponseMemoryMode);
typedef enum MHD_Result queue_fn(struct MHD_Connection *, unsigned int, struct MHD_Response *);

/* The page the library just made on this thread, and its text (the library's buffers are
 * static: PERSISTENT). */
static __thread struct MHD_Response *library_page;
static __thread const char *library_text;
static __thread size_t library_len;

static create_fn *real_create(void)
{
        static create_fn *fn;
        if (!fn)
                *(void **)&fn = dlsym(RTLD_NEXT, "MHD_create_response_from_buffer");
        return fn;
}

static queue_fn *real_queue(void)
{
        static queue_fn *fn;
        if (!fn)
                *(void **)&fn = dlsym(RTLD_NEXT, "MHD_queue_response");
        return fn;
}

/* Whether addr lies in libmicrohttpd (the object real_create came from). */
static bool in_library(const void *addr)
{
        Dl_info mine, lib;
        create_fn *fn = real_create();
        return fn && dladdr(addr, &mine) && dladdr(*(void **)&fn, &lib) && mine.dli_fbase == lib.dli_fbase;
}

struct MHD_Response *MHD_create_response_from_buffer(size_t size, void *buffer, enum MHD_ResponseMemoryMode mode)
{
        create_fn *fn = real_create();
        if (!fn)
                return NULL;
        struct MHD_Response *r = fn(size, buffer, mode);
        if (r && in_library(__builtin_return_address(0))) {
                library_page = r;
                library_text = buffer;
                library_len = size;
        }
        return r;
}

static const char *status_code_name(unsigned status)
{
        switch (status) {
        case 400:
                return "invalid_request";
        case 413:
                return "payload_too_large";
        case 414:
                return "uri_too_long";
        case 431:
                return "headers_too_large";
        case 501:
                return "not_implemented";
        case 505:
                return "http_version_not_supported";
        default:
                return status >= 500 ? "internal" : "invalid_request";
        }
}

/* The words of the library's page: its <body> without tags and entities. */
static void page_words(const char *html, size_t len, char *out, size_t size)
{
        out[0] = '\0';
        const char *end = html ? html + len : NULL;
        const char *p = html ? memmem(html, len, "<body>", 6) : NULL;
        if (!p)
                return;
        p += 6;
        const char *stop = memmem(p, (size_t)(end - p), "</body>", 7);
        if (stop)
                end = stop;
        size_t n = 0;
        static const struct {
                const char *entity, *text;
        } entities[] = { { "&quot;", "\"" }, { "&amp;", "&" }, { "&lt;", "<" }, { "&gt;", ">" } };
        while (p < end && n + 1 < size) {
                if (*p == '<') {
                        const char *close = memchr(p, '>', (size_t)(end - p));
                        p = close ? close + 1 : end;
                        continue;
                }
                bool replaced = false;
                for (size_t i = 0; i < sizeof(entities) / sizeof(entities[0]) && *p == '&'; i++) {
                        size_t el = strlen(entities[i].entity);
                        if ((size_t)(end - p) >= el && memcmp(p, entities[i].entity, el) == 0) {
                                out[n++] = entities[i].text[0];
                                p += el;
                                replaced = true;
                                break;
                        }
                }
                if (!replaced)
                        out[n++] = *p++;
        }
        out[n] = '\0';
}

/* The JSON answer for the library's page, as the whole HTTP response text. Returns its
 * length, or 0. */
static size_t json_answer(struct MHD_Connection *conn, unsigned status, const char *html, size_t len, char *out, size_t size)
{
        char words[256];
        page_words(html, len, words, sizeof(words));
        if (!words[0])
                snprintf(words, sizeof(words), "the HTTP server refused the request (status %u)", status);
        json_t *body = http_listener_e2b_errors(conn)
                ? json_pack("{s:i, s:s}", "code", (int)status, "message", words)
                : json_pack("{s:{s:s, s:s}}", "error", "code", status_code_name(status), "message", words);
        char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        json_decref(body);
        if (!text)
                return 0;
        const char *phrase = MHD_get_reason_phrase_for(status);
        int n = snprintf(out, size,
                         "HTTP/1.1 %u %s\r\nConnection: close\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"
                         "Content-Length: %zu\r\n\r\n%s",
                         status, phrase && phrase[0] ? phrase : "Error", strlen(text), text);
        free(text);
        return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

/* Writes all of buf to the client, in TLS when the connection has it; the socket is
 * non-blocking, so a full buffer waits (a bounded time) for room. */
static bool write_answer(struct MHD_Connection *conn, const char *buf, size_t len)
{
        const union MHD_ConnectionInfo *fd_info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!fd_info)
                return false;
        int fd = fd_info->connect_fd;
        const union MHD_ConnectionInfo *tls_info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        gnutls_session_t tls = tls_info ? (gnutls_session_t)tls_info->tls_session : NULL;
        size_t done = 0;
        for (int waits = 0; done < len && waits < 50;) {
                ssize_t n =
                        tls ? gnutls_record_send(tls, buf + done, len - done) : send(fd, buf + done, len - done, MSG_NOSIGNAL);
                if (n > 0) {
                        done += (size_t)n;
                        continue;
                }
                bool again =
                        tls ? (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) : (n < 0 && (errno == EAGAIN || errno == EINTR));
                if (!again)
                        return false;
                struct pollfd p = { .fd = fd, .events = POLLOUT };
                (void)poll(&p, 1, 100);
                waits++;
        }
        if (done < len)
                return false;
        if (tls)
                (void)gnutls_bye(tls, GNUTLS_SHUT_WR);
        /* Whatever the library sends after this fails: the client has the whole answer and
         * then the end of the stream. */
        (void)shutdown(fd, SHUT_WR);
        return true;
}

enum MHD_Result MHD_queue_response(struct MHD_Connection *conn, unsigned int status, struct MHD_Response *response)
{
        queue_fn *fn = real_queue();
        if (!fn)
                return MHD_NO;
        if (!response || response != library_page)
                return fn(conn, status, response);
        library_page = NULL;
        /* Written here rather than queued: after a bad Content-Length libmicrohttpd 0.9.75
         * builds a queued error's header twice, so that what follows the first header is not
         * the body it announces. The library's own page then goes to a closed stream. */
        char answer[1024];
        size_t n = json_answer(conn, status, library_text, library_len, answer, sizeof(answer));
        if (n)
                (void)write_answer(conn, answer, n);
        return fn(conn, status, response);
}

bool http_error_page_ready(char *reason, size_t reason_size)
{
        void *create_seen = dlsym(RTLD_DEFAULT, "MHD_create_response_from_buffer");
        void *queue_seen = dlsym(RTLD_DEFAULT, "MHD_queue_response");
        if (!real_create() || !real_queue()) {
                snprintf(reason, reason_size, "libmicrohttpd's response functions were not found");
                return false;
        }
        if (create_seen != (void *)MHD_create_response_from_buffer || queue_seen != (void *)MHD_queue_response) {
                snprintf(reason, reason_size, "libmicrohttpd's calls do not reach spaced (is spaced linked without -rdynamic?)");
                return false;
        }
        return true;
}
