/* egress_http_inject: a bound destination's requests get the platform's header and lose
 * the client's, body by body (Content-Length, chunked, keep-alive); a Host that is not the
 * connection's, obs-fold and conflicting lengths end the connection. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "egress/egress_http_inject.h"

static struct egress_credentials creds(const char *methods)
{
        char line[512];
        snprintf(line, sizeof(line),
                 "[{\"binding\":\"bnd-1\",\"secret\":\"GH\",\"match\":\"api.test\",\"header\":\"Authorization\","
                 "\"value\":\"Bearer real-secret\"%s}]",
                 methods ? methods : "");
        json_t *j = json_loads(line, 0, NULL);
        struct egress_credentials c = { 0 };
        char why[200];
        assert_int_equal(egress_credentials_from_json(j, &c, why, sizeof(why)), 0);
        json_decref(j);
        return c;
}

static int uses;
static void used(void *arg, const struct egress_credential *cr, const char *method)
{
        (void)arg;
        (void)cr;
        (void)method;
        uses++;
}

/* Feeds text in pieces of step bytes; the rewritten stream into out. */
static bool read_only;

static int feed(struct egress_credentials *c, const char *name, const char *text, size_t step, char *out, size_t *ret_len)
{
        static struct egress_inject ij;
        memset(&ij, 0, sizeof(ij));
        size_t len = strlen(text), pos = 0, total = 0;
        while (pos < len || ij.in_len) {
                size_t n = len - pos < step ? len - pos : step;
                memcpy(ij.in + ij.in_len, text + pos, n);
                ij.in_len += n;
                pos += n;
                size_t w = 0, before = ij.in_len;
                int r = egress_inject_run(&ij, c, name, 80, read_only, (uint8_t *)out + total, 65536 - total, &w, used, NULL);
                if (r < 0)
                        return r;
                total += w;
                if (pos >= len && ij.in_len == before && w == 0)
                        break;
        }
        out[total] = '\0';
        *ret_len = total;
        return (int)ij.in_len;
}

static void test_injects_and_strips(void **state)
{
        (void)state;
        struct egress_credentials c = creds(NULL);
        static char out[65537];
        size_t len;
        const char *rq =
                "POST /x HTTP/1.1\r\nHost: API.test:80\r\nauthorization: Bearer space-placeholder-gh\r\n"
                "Content-Length: 5\r\n\r\nhello"
                "GET /y HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n"
                "3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n"
                "GET /z HTTP/1.1\r\nHost: api.test\r\nAuthorization: mine\r\n\r\n";
        for (size_t step = 1; step <= strlen(rq); step = step * 3 + 1) {
                uses = 0;
                assert_int_equal(feed(&c, "api.test", rq, step, out, &len), 0);
                assert_int_equal(uses, 3);
                assert_null(strstr(out, "placeholder"));
                assert_null(strstr(out, "mine"));
                const char *p = out;
                int n = 0;
                while ((p = strstr(p, "Authorization: Bearer real-secret\r\n"))) {
                        n++;
                        p++;
                }
                assert_int_equal(n, 3);
                assert_non_null(strstr(out, "\r\n\r\nhello"));
                assert_non_null(strstr(out, "3\r\nabc\r\n0\r\nX-T: 1\r\n\r\nGET /z"));
        }
        egress_credentials_release(&c);
}

static void test_methods(void **state)
{
        (void)state;
        struct egress_credentials c = creds(",\"methods\":[\"GET\"]");
        static char out[65537];
        size_t len;
        uses = 0;
        assert_int_equal(feed(&c, "api.test", "POST / HTTP/1.1\r\nHost: api.test\r\nAuthorization: x\r\n\r\n", 7, out, &len), 0);
        assert_int_equal(uses, 0);
        assert_null(strstr(out, "real-secret"));
        assert_null(strstr(out, "Authorization")); /* still stripped */
        egress_credentials_release(&c);
}

static void test_refused(void **state)
{
        (void)state;
        struct egress_credentials c = creds(NULL);
        static char out[65537];
        size_t len;
        uses = 0;
        assert_int_equal(feed(&c, "api.test", "GET / HTTP/1.1\r\nHost: other.test\r\n\r\n", 100, out, &len), -EPROTO);
        assert_int_equal(feed(&c, "api.test", "GET / HTTP/1.1\r\nHost: api.test\r\n\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n",
                              1000, out, &len),
                         -EPROTO);
        assert_int_equal(feed(&c, "api.test", "GET / HTTP/1.1\r\nHost: api.test\r\n folded\r\n\r\n", 100, out, &len), -EPROTO);
        assert_int_equal(feed(&c, "api.test", "GET / HTTP/1.1\r\nHost: api.test\r\nX: a\nB: c\r\n\r\n", 100, out, &len), -EPROTO);
        assert_int_equal(feed(&c, "api.test",
                              "GET / HTTP/1.1\r\nHost: api.test\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 100, out,
                              &len),
                         -EPROTO);
        assert_int_equal(feed(&c, "api.test", "GET / HTTP/1.1\r\nHost: api.test\r\nHost: api.test\r\n\r\n", 100, out, &len),
                         -EPROTO);
        assert_int_equal(feed(&c, "api.test", "GET / HTTP/1.1\r\nX: y\r\n\r\n", 100, out, &len), -EPROTO);
        egress_credentials_release(&c);
}

static void test_read_only(void **state)
{
        (void)state;
        struct egress_credentials none = { 0 };
        static char out[65537];
        size_t len;
        read_only = true;
        assert_int_equal(feed(&none, "api.test",
                              "GET /a HTTP/1.1\r\nHost: api.test\r\n\r\nHEAD /b HTTP/1.1\r\nHost: api.test\r\n\r\n"
                              "OPTIONS * HTTP/1.1\r\nHost: api.test\r\n\r\n",
                              5, out, &len),
                         0);
        assert_non_null(strstr(out, "OPTIONS * HTTP/1.1"));
        static const char *const unsafe[] = { "POST", "PUT", "DELETE", "PATCH", "CONNECT" };
        for (size_t i = 0; i < sizeof(unsafe) / sizeof(unsafe[0]); i++) {
                char rq[200];
                snprintf(rq, sizeof(rq), "GET /ok HTTP/1.1\r\nHost: api.test\r\n\r\n%s /x HTTP/1.1\r\nHost: api.test\r\n\r\n",
                         unsafe[i]);
                assert_int_equal(feed(&none, "api.test", rq, 1000, out, &len), -EACCES);
                assert_null(strstr(out, unsafe[i])); /* the refused request is not sent */
        }
        assert_int_equal(
                feed(&none, "api.test", "GET / HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\n\r\n", 100, out, &len),
                -EACCES);
        read_only = false;
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_injects_and_strips),
                cmocka_unit_test(test_methods),
                cmocka_unit_test(test_refused),
                cmocka_unit_test(test_read_only),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
