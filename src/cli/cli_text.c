/* cli_text: terminal-safe text. */
#include "cli/cli_text.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int cli_text_sanitize(const char *s, char **ret_text)
{
        char *out = strdup(s);
        if (!out)
                return -ENOMEM;

        for (unsigned char *p = (unsigned char *)out; *p; p++) {
                if (*p < 0x20 || *p == 0x7f)
                        *p = '?';
                else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
                        /* U+0080..U+009F: the C1 controls, e.g. CSI. Keep the byte count. */
                        p[0] = '?';
                        p[1] = '?';
                        p++;
                }
        }
        *ret_text = out;
        return 0;
}

size_t cli_text_width(const char *s)
{
        size_t w = 0;
        for (const unsigned char *p = (const unsigned char *)s; *p; p++)
                if ((*p & 0xc0) != 0x80)
                        w++;
        return w;
}
