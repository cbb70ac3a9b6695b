/* base64: decoder. */
#include "cli/base64.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

static int base64_value(unsigned char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+')
                return 62;
        if (c == '/')
                return 63;
        return -1;
}

int base64_decode(const char *in, size_t len, unsigned char **ret_data, size_t *ret_len)
{
        if (len % 4 == 0)
                for (int pad = 0; pad < 2 && len > 0 && in[len - 1] == '='; pad++)
                        len--;
        if (len % 4 == 1)
                return -EINVAL;

        unsigned char *out = malloc(len / 4 * 3 + 3);
        if (!out)
                return -ENOMEM;

        uint32_t acc = 0;
        int bits = 0;
        size_t n = 0;
        for (size_t i = 0; i < len; i++) {
                int v = base64_value((unsigned char) in[i]);
                if (v < 0) {
                        free(out);
                        return -EINVAL;
                }
                acc = (acc << 6) | (uint32_t) v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[n++] = (unsigned char) (acc >> bits);
                }
        }
        out[n] = '\0';

        *ret_data = out;
        *ret_len = n;
        return 0;
}
