/* Fuzz target for the Spacefile parser. Built with clang -fsanitize=fuzzer it is a libFuzzer
 * target; built normally (tests/fuzz/meson.build) it reads one input from stdin, so any
 * fuzzer that feeds files (AFL++, honggfuzz) or a corpus replay can drive it. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "templates/spacefile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct spacefile f;
        struct spacefile_error err;
        if (spacefile_parse((const char *)data, size, &f, &err) == 0)
                spacefile_release(&f);
        return 0;
}

#ifndef SPACE_LIBFUZZER
int main(void)
{
        size_t cap = 1 << 16, len = 0;
        uint8_t *buf = malloc(cap);
        size_t n;
        while (buf && (n = fread(buf + len, 1, cap - len, stdin)) > 0) {
                len += n;
                if (len == cap) {
                        uint8_t *grown = realloc(buf, cap * 2);
                        if (!grown)
                                break;
                        buf = grown;
                        cap *= 2;
                }
        }
        if (buf)
                LLVMFuzzerTestOneInput(buf, len);
        free(buf);
        return 0;
}
#endif
