/* Fuzz target for the Spacefile parser. Built with clang -fsanitize=fuzzer it is a libFuzzer
 * target; built normally (with fuzz_stdin_main.c, tests/fuzz/meson.build) it reads one input from stdin, so any
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
