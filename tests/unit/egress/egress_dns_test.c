/* egress_dns: queries and answers, malformed messages refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "egress/egress_dns.h"

static void query_round_trip(void **state)
{
        uint8_t msg[EGRESS_DNS_MAX];
        size_t n = egress_dns_build_query(0x1234, "pypi.org", EGRESS_DNS_A, msg, sizeof(msg));
        assert_true(n > 12);
        struct egress_dns_question q;
        assert_int_equal(egress_dns_parse_query(msg, n, &q), 0);
        assert_int_equal(q.id, 0x1234);
        assert_string_equal(q.name, "pypi.org");
        assert_int_equal(q.qtype, EGRESS_DNS_A);
        assert_true(q.rd);
        for (size_t i = 0; i < n; i++)
                assert_int_equal(egress_dns_parse_query(msg, i, &q), -EBADMSG);
        assert_int_equal(egress_dns_build_query(1, "a..b", EGRESS_DNS_A, msg, sizeof(msg)), 0);
        assert_int_equal(egress_dns_build_query(1, "a b.c", EGRESS_DNS_A, msg, sizeof(msg)), 0);
}

static void reply_round_trip(void **state)
{
        uint8_t q_msg[EGRESS_DNS_MAX], r_msg[EGRESS_DNS_MAX];
        size_t n = egress_dns_build_query(77, "a.example.com", EGRESS_DNS_A, q_msg, sizeof(q_msg));
        struct egress_dns_question q;
        assert_int_equal(egress_dns_parse_query(q_msg, n, &q), 0);
        uint32_t addrs[2] = { 0x0a000001, 0x5db8d822 }, got[4], ttl;
        size_t len = egress_dns_build_reply(&q, EGRESS_DNS_NOERROR, addrs, 2, 30, r_msg, sizeof(r_msg));
        assert_true(len > n);
        size_t count;
        int rcode;
        assert_int_equal(egress_dns_parse_answer(r_msg, len, 77, got, 4, &count, &rcode, &ttl), 0);
        assert_int_equal(count, 2);
        assert_int_equal(got[0], addrs[0]);
        assert_int_equal(got[1], addrs[1]);
        assert_int_equal(rcode, 0);
        assert_int_equal(ttl, 30);
        assert_int_equal(egress_dns_parse_answer(r_msg, len, 78, got, 4, &count, &rcode, &ttl), -EBADMSG);
        /* a reply is not a query */
        assert_int_equal(egress_dns_parse_query(r_msg, len, &q), -EBADMSG);
        /* truncated answers */
        for (size_t i = 12; i < len; i++)
                if (egress_dns_parse_answer(r_msg, i, 77, got, 4, &count, &rcode, &ttl) == 0)
                        assert_true(count < 2);
        len = egress_dns_build_reply(&q, EGRESS_DNS_NXDOMAIN, NULL, 0, 0, r_msg, sizeof(r_msg));
        assert_int_equal(egress_dns_parse_answer(r_msg, len, 77, got, 4, &count, &rcode, &ttl), 0);
        assert_int_equal(rcode, EGRESS_DNS_NXDOMAIN);
        assert_int_equal(count, 0);
}

static void compression_loop(void **state)
{
        /* an answer whose name points at itself */
        uint8_t msg[] = { 0, 5, 0x81, 0x80, 0, 0, 0, 1, 0, 0, 0, 0, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 5, 0, 4, 1, 2, 3, 4 };
        uint32_t got[4], ttl;
        size_t count;
        int rcode;
        assert_int_equal(egress_dns_parse_answer(msg, sizeof(msg), 5, got, 4, &count, &rcode, &ttl), 0);
        assert_int_equal(count, 1);
        uint8_t loop[] = { 0, 5, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'a', 'b', 'c', 0xc0, 12, 0, 1, 0, 1 };
        assert_int_equal(egress_dns_parse_answer(loop, sizeof(loop), 5, got, 4, &count, &rcode, &ttl), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(query_round_trip),
                cmocka_unit_test(reply_round_trip),
                cmocka_unit_test(compression_loop),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
