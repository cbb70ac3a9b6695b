#include "api/output_encoding.h"

#include <openssl/evp.h>
#include <stdlib.h>

/* Length of the valid UTF-8 sequence at p (1-4), or 0 if invalid. */
static size_t utf8_sequence(const uint8_t *p, size_t left)
{
        uint8_t c = p[0];
        size_t n;
        uint32_t cp;
        if (c < 0x80)
                return 1;
        if ((c & 0xE0) == 0xC0)
                n = 2, cp = c & 0x1F;
        else if ((c & 0xF0) == 0xE0)
                n = 3, cp = c & 0x0F;
        else if ((c & 0xF8) == 0xF0)
                n = 4, cp = c & 0x07;
        else
                return 0;
        if (n > left)
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((p[i] & 0xC0) != 0x80)
                        return 0;
                cp = (cp << 6) | (p[i] & 0x3F);
        }
        /* Reject overlong forms, surrogates and values past U+10FFFF. */
        if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
                return 0;
        return n;
}

json_t *output_encoding_utf8(const uint8_t *data, size_t len)
{
        uint8_t *out = malloc(len * 3 + 1);
        if (!out)
                return NULL;
        size_t o = 0;
        for (size_t i = 0; i < len;) {
                size_t n = utf8_sequence(data + i, len - i);
                if (n == 0) {
                        out[o++] = 0xEF, out[o++] = 0xBF, out[o++] = 0xBD;
                        i++;
                        continue;
                }
                for (size_t k = 0; k < n; k++)
                        out[o++] = data[i + k];
                i += n;
        }
        json_t *s = json_stringn((const char *)out, o);
        free(out);
        return s;
}

json_t *output_encoding_base64(const uint8_t *data, size_t len)
{
        size_t cap = 4 * ((len + 2) / 3) + 1;
        unsigned char *out = malloc(cap);
        if (!out)
                return NULL;
        int n = EVP_EncodeBlock(out, data, (int)len);
        json_t *s = json_stringn((const char *)out, (size_t)n);
        free(out);
        return s;
}
