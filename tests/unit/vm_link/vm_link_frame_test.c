/* vm_link_frame: frames round-trip; a header no honest peer sends is -EPROTO; a partial
 * frame waits for more bytes; the stream table. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "vm_link/vm_link_frame.h"
#include "vm_link/vm_link_streams.h"

static void test_round_trip(void **state)
{
        struct vm_link_buffer b = { 0 };
        struct vm_link_header h;
        const uint8_t *payload;
        assert_int_equal(vm_link_buffer_frame(&b, 7, VM_LINK_DATA, "abcd", 4), 0);
        assert_int_equal(vm_link_buffer_frame(&b, 7, VM_LINK_CLOSE, NULL, 0), 0);
        assert_int_equal(vm_link_buffer_next(&b, &h, &payload), 1);
        assert_int_equal(h.stream, 7);
        assert_int_equal(h.type, VM_LINK_DATA);
        assert_int_equal(h.length, 4);
        assert_memory_equal(payload, "abcd", 4);
        vm_link_buffer_consume(&b, VM_LINK_HEADER_SIZE + h.length);
        assert_int_equal(vm_link_buffer_next(&b, &h, &payload), 1);
        assert_int_equal(h.type, VM_LINK_CLOSE);
        vm_link_buffer_consume(&b, VM_LINK_HEADER_SIZE);
        assert_int_equal(vm_link_buffer_next(&b, &h, &payload), 0);
        vm_link_buffer_release(&b);
}

static void test_partial_frame_waits(void **state)
{
        struct vm_link_buffer whole = { 0 }, b = { 0 };
        struct vm_link_header h;
        const uint8_t *payload;
        assert_int_equal(vm_link_buffer_frame(&whole, 1, VM_LINK_DATA, "hello", 5), 0);
        for (size_t n = 0; n < whole.len; n++) {
                b.len = 0;
                assert_int_equal(vm_link_buffer_append(&b, whole.data, n), 0);
                assert_int_equal(vm_link_buffer_next(&b, &h, &payload), 0);
        }
        vm_link_buffer_release(&whole);
        vm_link_buffer_release(&b);
}

static void test_hostile_headers(void **state)
{
        uint8_t raw[VM_LINK_HEADER_SIZE];
        struct vm_link_header h;
        /* too long */
        vm_link_header_encode(&(struct vm_link_header){ .stream = 1, .type = VM_LINK_DATA, .length = VM_LINK_MAX_PAYLOAD + 1 },
                              raw);
        assert_int_equal(vm_link_header_decode(raw, &h), -EPROTO);
        /* unknown types */
        for (unsigned t = 0; t < 300; t++) {
                vm_link_header_encode(&(struct vm_link_header){ .stream = 1, .type = (uint16_t)t, .length = 0 }, raw);
                assert_int_equal(vm_link_header_decode(raw, &h), t >= VM_LINK_HELLO && t <= VM_LINK_PONG ? 0 : -EPROTO);
        }
        /* reserved bytes */
        vm_link_header_encode(&(struct vm_link_header){ .stream = 1, .type = VM_LINK_DATA, .length = 1 }, raw);
        raw[6] = 1;
        assert_int_equal(vm_link_header_decode(raw, &h), -EPROTO);
        /* a payload on a frame that has none */
        vm_link_header_encode(&(struct vm_link_header){ .stream = 1, .type = VM_LINK_OPEN, .length = 3 }, raw);
        assert_int_equal(vm_link_header_decode(raw, &h), -EPROTO);
        /* garbage in a buffer is corrupt, not "more bytes needed" */
        struct vm_link_buffer b = { 0 };
        const uint8_t *payload;
        assert_int_equal(vm_link_buffer_append(&b, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 12), 0);
        assert_int_equal(vm_link_buffer_next(&b, &h, &payload), -EPROTO);
        vm_link_buffer_release(&b);
}

static void test_streams(void **state)
{
        struct vm_link_streams s;
        int fds[2];
        vm_link_streams_init(&s);
        assert_int_equal(pipe(fds), 0);
        int slot = vm_link_streams_add(&s, 42, fds[0]);
        assert_true(slot >= 0);
        assert_int_equal(vm_link_streams_find(&s, 42), slot);
        assert_int_equal(vm_link_streams_find_fd(&s, fds[0]), slot);
        assert_int_equal(vm_link_streams_find(&s, 43), -1);
        vm_link_streams_drop(&s, slot);
        assert_int_equal(vm_link_streams_find(&s, 42), -1);
        vm_link_streams_drop(&s, slot); /* twice: a no-op */
        close(fds[1]);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip),
                cmocka_unit_test(test_partial_frame_waits),
                cmocka_unit_test(test_hostile_headers),
                cmocka_unit_test(test_streams),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
