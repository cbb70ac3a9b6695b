/* Fuzz target for the btrfs send stream check. The first byte of the input picks the size
 * of the pieces the rest is fed in (1-256 bytes); the verdict (and the subvolume named) must
 * be the same as when the whole stream is fed at once, or the target aborts. The parent
 * snapshot is known by the UUID of sixteen 0x11 bytes. Built with clang -fsanitize=fuzzer
 * it is a libFuzzer target; built normally (with fuzz_stdin_main.c) it reads one input from stdin. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/send_stream_check.h"

static int run(const uint8_t *data, size_t size, size_t step, char *name, size_t name_size)
{
        uint8_t parent[1][16];
        memset(parent, 0x11, sizeof(parent));
        struct send_stream_check *c;
        if (send_stream_check_new((const uint8_t(*)[16])parent, 1, &c) < 0)
                abort();
        int r = 0;
        for (size_t off = 0; off < size && r == 0; off += step)
                r = send_stream_check_feed(c, data + off, off + step > size ? size - off : step);
        if (r == 0)
                r = send_stream_check_finish(c);
        if (r < 0 && send_stream_check_error(c)[0] == '\0')
                abort(); /* every refusal says why */
        snprintf(name, name_size, "%s", send_stream_check_subvolume(c));
        send_stream_check_free(c);
        return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char a[64], b[64];
        if (size < 1)
                return 0;
        size_t step = (size_t)data[0] + 1;
        int whole = run(data + 1, size - 1, size, a, sizeof(a));
        int pieces = run(data + 1, size - 1, step, b, sizeof(b));
        if (whole != pieces || strcmp(a, b) != 0)
                abort();
        return 0;
}
