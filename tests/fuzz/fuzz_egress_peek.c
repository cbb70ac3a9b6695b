/* Fuzz target for space-egress's readers of hostile bytes: the SNI / Host peek of a
 * connection's first bytes (every prefix, as the bytes arrive) and the DNS query and answer
 * parsers. libFuzzer with clang -fsanitize=fuzzer; otherwise one input from stdin
 * (fuzz_stdin_main.c, the 'fuzz' suite's seed replay). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "egress/egress_dns.h"
#include "egress/egress_peek.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char name[256];
        size_t step = size > 512 ? size / 64 : 1;
        for (size_t i = 0; i <= size; i += step) {
                enum egress_peek_result r = egress_peek_name(data, i, name, sizeof(name));
                if (r == EGRESS_PEEK_NAME && (strlen(name) == 0 || strlen(name) > 253))
                        __builtin_trap();
        }
        struct egress_dns_question q;
        if (egress_dns_parse_query(data, size, &q) == 0) {
                uint8_t out[EGRESS_DNS_MAX];
                uint32_t a = 0x01020304;
                egress_dns_build_reply(&q, 0, &a, 1, 5, out, sizeof(out));
        }
        uint32_t addrs[16], ttl;
        size_t n;
        int rcode;
        if (size >= 2)
                egress_dns_parse_answer(data, size, (uint16_t)(data[0] << 8 | data[1]), addrs, 16, &n, &rcode, &ttl);
        return 0;
}
