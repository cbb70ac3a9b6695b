/* agent_test_harness: what the black-box tests of space-agent share. It starts the real
 * binary with --listen on a socket in a temporary directory (once per cmocka group),
 * connects to it with a receive timeout, and sends and reads frames with cmocka
 * assertions, so a test reads as the conversation it has with the agent. */
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/types.h>

#include <cmocka.h>

#include "agent_protocol/agent_frame.h"

/* The agent under test, valid between agent_test_setup and agent_test_teardown. */
struct agent_test_agent {
        const char *path; /* the space-agent binary */
        char dir[64];     /* temporary directory, emptied and removed by the teardown */
        char sock_path[128];
        pid_t pid;
        const char *root; /* when set, the agent runs with --root ROOT */
};

extern struct agent_test_agent agent_test;

/* A frame read from the agent; release frees its payload. */
struct agent_test_reply {
        struct agent_frame f;
        uint8_t *buf;
};

/* Skips the running test and counts it: a skip must not pass for a pass (cmocka's own
 * skip() leaves the exit status 0), so agent_test_exit() then exits 77, which meson
 * reports as SKIP and CI (SPACE_CI=1) counts as failed. */
extern int agent_test_skipped;
#define agent_test_skip(why)                                      \
        do {                                                      \
                agent_test_skipped++;                             \
                print_message("[  SKIP    ] because: %s\n", why); \
                skip();                                           \
        } while (0)
/* What main returns after cmocka_run_group_tests gave failed: 1 on failures, 77 when any
 * test was skipped, else 0. */
int agent_test_exit(int failed);

/* Takes the binary's path from argv[1] and ignores SIGPIPE. Returns 0, or 2 after printing
 * the usage. */
int agent_test_init(int argc, char **argv);
/* cmocka group setup / teardown: start the agent, kill it and remove the directory. */
int agent_test_setup(void **state);
int agent_test_teardown(void **state);

uint64_t agent_test_now_ms(void);
void agent_test_sleep_ms(long ms);
/* A file name inside agent_test.dir. */
void agent_test_path_in_dir(const char *name, char *buf, size_t size);

/* A new connection whose reads give up after timeout_s seconds (a hung agent fails the
 * test instead of hanging it). */
int agent_test_connect_timeout(int timeout_s);
int agent_test_connect(void); /* 20 s */

/* Finishes and sends w (released). */
void agent_test_send(int fd, struct agent_frame_writer *w);
void agent_test_read(int fd, struct agent_test_reply *r);
void agent_test_reply_release(struct agent_test_reply *r);

/* Field getters that fail the test when the field is absent. */
int32_t agent_test_get_i32(const struct agent_test_reply *r, uint16_t tag);
uint32_t agent_test_get_u32(const struct agent_test_reply *r, uint16_t tag);
uint64_t agent_test_get_u64(const struct agent_test_reply *r, uint16_t tag);
uint8_t agent_test_get_u8(const struct agent_test_reply *r, uint16_t tag);
uint32_t agent_test_get_bytes(const struct agent_test_reply *r, uint16_t tag, const uint8_t **data);
/* The field equals the string. */
void agent_test_assert_str(const struct agent_test_reply *r, uint16_t tag, const char *expected);
/* The reply is an ERROR with this errno. */
void agent_test_assert_error(const struct agent_test_reply *r, int error);

/* Waits (up to 5 s) until pid no longer exists. */
void agent_test_wait_pid_gone(pid_t pid);
/* VmRSS of a process in KiB, or -1 when /proc does not say. */
long agent_test_rss_kib(pid_t pid);
