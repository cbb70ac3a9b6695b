/* egress_peek: SNI and Host extraction from hostile first bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "egress/egress_peek.h"

/* A ClientHello record carrying server_name (NULL: no extension). */
static size_t client_hello(const char *sni, uint8_t *out)
{
        uint8_t body[1024];
        size_t n = 0;
        body[n++] = 3, body[n++] = 3;
        memset(body + n, 7, 32), n += 32;
        body[n++] = 0;                                                 /* session id */
        body[n++] = 0, body[n++] = 2, body[n++] = 0x13, body[n++] = 1; /* one cipher suite */
        body[n++] = 1, body[n++] = 0;                                  /* compression: null */
        size_t ext_start = n;
        n += 2;
        /* an unrelated extension first */
        body[n++] = 0, body[n++] = 0x0a, body[n++] = 0, body[n++] = 2, body[n++] = 0, body[n++] = 0;
        if (sni) {
                size_t l = strlen(sni);
                body[n++] = 0, body[n++] = 0;
                body[n++] = (uint8_t)((l + 5) >> 8), body[n++] = (uint8_t)(l + 5);
                body[n++] = (uint8_t)((l + 3) >> 8), body[n++] = (uint8_t)(l + 3);
                body[n++] = 0;
                body[n++] = (uint8_t)(l >> 8), body[n++] = (uint8_t)l;
                memcpy(body + n, sni, l), n += l;
        }
        size_t ext_len = n - ext_start - 2;
        body[ext_start] = (uint8_t)(ext_len >> 8), body[ext_start + 1] = (uint8_t)ext_len;
        size_t hs = n + 4;
        out[0] = 0x16, out[1] = 3, out[2] = 1, out[3] = (uint8_t)(hs >> 8), out[4] = (uint8_t)hs;
        out[5] = 1, out[6] = 0, out[7] = (uint8_t)(n >> 8), out[8] = (uint8_t)n;
        memcpy(out + 9, body, n);
        return n + 9;
}

static void tls_sni(void **state)
{
        uint8_t msg[2048];
        char name[256];
        size_t n = client_hello("api.example.com", msg);
        assert_int_equal(egress_peek_name(msg, n, name, sizeof(name)), EGRESS_PEEK_NAME);
        assert_string_equal(name, "api.example.com");
        /* every strict prefix asks for more, never misreads */
        for (size_t i = 0; i < n; i++)
                assert_int_equal(egress_peek_name(msg, i, name, sizeof(name)), EGRESS_PEEK_MORE);
        n = client_hello(NULL, msg);
        assert_int_equal(egress_peek_name(msg, n, name, sizeof(name)), EGRESS_PEEK_NO_NAME);
        /* a length that points past the record */
        n = client_hello("a.example.com", msg);
        msg[n - 16] = 0xff;
        assert_int_equal(egress_peek_name(msg, n, name, sizeof(name)), EGRESS_PEEK_MALFORMED);
        /* a control byte in the name */
        n = client_hello("a.exa\x01ple.com", msg);
        assert_int_equal(egress_peek_name(msg, n, name, sizeof(name)), EGRESS_PEEK_MALFORMED);
        /* not a handshake record */
        n = client_hello("a.example.com", msg);
        msg[5] = 2;
        assert_int_equal(egress_peek_name(msg, n, name, sizeof(name)), EGRESS_PEEK_MALFORMED);
}

static void tls_split_records(void **state)
{
        uint8_t one[2048], two[2048];
        char name[256];
        size_t n = client_hello("split.example.com", one);
        size_t body = n - 5, first = 20;
        /* the same handshake in two records */
        memcpy(two, one, 5);
        two[3] = 0, two[4] = (uint8_t)first;
        memcpy(two + 5, one + 5, first);
        two[5 + first] = 0x16, two[6 + first] = 3, two[7 + first] = 1;
        two[8 + first] = (uint8_t)((body - first) >> 8), two[9 + first] = (uint8_t)(body - first);
        memcpy(two + 10 + first, one + 5 + first, body - first);
        assert_int_equal(egress_peek_name(two, n + 5, name, sizeof(name)), EGRESS_PEEK_NAME);
        assert_string_equal(name, "split.example.com");
}

static void http_host(void **state)
{
        char name[256];
        const char *ok = "GET /x HTTP/1.1\r\nUser-Agent: t\r\nhOsT:  www.Example.com:8080 \r\n\r\n";
        assert_int_equal(egress_peek_name((const uint8_t *)ok, strlen(ok), name, sizeof(name)), EGRESS_PEEK_NAME);
        assert_string_equal(name, "www.Example.com");
        for (size_t i = 0; i < strlen(ok); i++)
                assert_int_equal(egress_peek_name((const uint8_t *)ok, i, name, sizeof(name)), EGRESS_PEEK_MORE);
        const char *two = "GET / HTTP/1.1\r\nHost: a.com\r\nHost: b.com\r\n\r\n";
        assert_int_equal(egress_peek_name((const uint8_t *)two, strlen(two), name, sizeof(name)), EGRESS_PEEK_MALFORMED);
        const char *none = "GET / HTTP/1.0\r\nAccept: */*\r\n\r\n";
        assert_int_equal(egress_peek_name((const uint8_t *)none, strlen(none), name, sizeof(name)), EGRESS_PEEK_NO_NAME);
        const char *v6 = "GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n";
        assert_int_equal(egress_peek_name((const uint8_t *)v6, strlen(v6), name, sizeof(name)), EGRESS_PEEK_NO_NAME);
        const char *ssh = "SSH-2.0-OpenSSH_9.2\r\n";
        assert_int_equal(egress_peek_name((const uint8_t *)ssh, strlen(ssh), name, sizeof(name)), EGRESS_PEEK_NO_NAME);
        uint8_t bin[4] = { 0, 1, 2, 3 };
        assert_int_equal(egress_peek_name(bin, sizeof(bin), name, sizeof(name)), EGRESS_PEEK_NO_NAME);
        /* headers that never end are refused once they pass the bound */
        static uint8_t big[EGRESS_PEEK_MAX + 100];
        memset(big, 'a', sizeof(big));
        memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
        assert_int_equal(egress_peek_name(big, sizeof(big), name, sizeof(name)), EGRESS_PEEK_MALFORMED);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(tls_sni),
                cmocka_unit_test(tls_split_records),
                cmocka_unit_test(http_host),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
