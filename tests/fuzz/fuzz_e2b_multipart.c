/* Fuzz target for the incremental multipart/form-data parser of E2B uploads. The first
 * byte of the input picks the size of the pieces the rest is fed in (1-256 bytes), so that
 * boundaries straddle pieces in every way; the boundary is "XyZ". Built with clang
 * -fsanitize=fuzzer it is a libFuzzer target; built normally (with fuzz_stdin_main.c) it reads one input from stdin. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2b/e2b_multipart.h"

static size_t seen;

static int on_begin(void *cls, const char *headers, size_t len)
{
        char name[256];
        e2b_multipart_filename(headers, len, name, sizeof(name));
        return 0;
}

static int on_data(void *cls, const char *data, size_t len)
{
        for (size_t i = 0; i < len; i++)
                seen += (unsigned char)data[i]; /* touch every byte handed on */
        return 0;
}

static int on_end(void *cls)
{
        return 0;
}

static const struct e2b_multipart_ops ops = { on_begin, on_data, on_end };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct e2b_multipart *m;
        if (size < 1 || e2b_multipart_new("multipart/form-data; boundary=XyZ", &ops, NULL, &m) < 0)
                return 0;
        size_t step = (size_t)data[0] + 1;
        for (size_t off = 1; off < size; off += step)
                if (e2b_multipart_feed(m, (const char *)data + off, off + step > size ? size - off : step) < 0)
                        break;
        e2b_multipart_finish(m);
        e2b_multipart_free(m);
        return 0;
}
