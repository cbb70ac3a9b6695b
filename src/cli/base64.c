/* base64: decoder. */
#include "cli/base64.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* 0-63 for the alphabet, 64 for anything else. */
static const unsigned char base64_table[256] = {
        64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
        64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 62, 64, 64, 64, 63, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61,
        64, 64, 64, 64, 64, 64, 64, 0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
        22, 23, 24, 25, 64, 64, 64, 64, 64, 64, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44,
        45, 46, 47, 48, 49, 50, 51, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
        64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
        64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
        64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
        64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64,
};

int base64_decode(const char *in, size_t len, unsigned char **ret_data, size_t *ret_len)
{
        const unsigned char *t = base64_table;
        const unsigned char *s = (const unsigned char *)in;
        if (len % 4 == 0)
                for (int pad = 0; pad < 2 && len > 0 && in[len - 1] == '='; pad++)
                        len--;
        if (len % 4 == 1)
                return -EINVAL;

        unsigned char *out = malloc(len / 4 * 3 + 3);
        if (!out)
                return -ENOMEM;

        size_t n = 0, i = 0;
        /* Whole groups of four characters, then the tail of two or three. */
        for (; i + 4 <= len; i += 4) {
                unsigned a = t[s[i]], b = t[s[i + 1]], c = t[s[i + 2]], d = t[s[i + 3]];
                if ((a | b | c | d) & 64) {
                        free(out);
                        return -EINVAL;
                }
                uint32_t v = a << 18 | b << 12 | c << 6 | d;
                out[n++] = (unsigned char)(v >> 16);
                out[n++] = (unsigned char)(v >> 8);
                out[n++] = (unsigned char)v;
        }
        if (i < len) {
                unsigned a = t[s[i]], b = t[s[i + 1]], c = len - i == 3 ? t[s[i + 2]] : 0;
                if ((a | b | c) & 64) {
                        free(out);
                        return -EINVAL;
                }
                uint32_t v = a << 18 | b << 12 | c << 6;
                out[n++] = (unsigned char)(v >> 16);
                if (len - i == 3)
                        out[n++] = (unsigned char)(v >> 8);
        }
        out[n] = '\0';

        *ret_data = out;
        *ret_len = n;
        return 0;
}
