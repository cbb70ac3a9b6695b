/* The stdin driver of every fuzz target: reads one input from stdin and hands it to the
 * target's LLVMFuzzerTestOneInput, so that a corpus replay (the 'fuzz' suite) or a fuzzer that
 * feeds files (AFL++, honggfuzz) drives it. A libFuzzer build (clang -fsanitize=fuzzer)
 * links the target without this file. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
