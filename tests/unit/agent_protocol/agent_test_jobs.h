/* agent_test_jobs: the jobs side of the space-agent test harness. Starting jobs and
 * sending their controls (each on a connection of its own), and reading one job's events
 * on a subscriber connection with its SEQ checked, its output gathered per stream and each
 * event acknowledged on arrival unless told otherwise. Assertions fail the calling test. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent_test_harness.h"

struct agent_test_job_spec {
        const char *id;
        const char *const *argv; /* NULL-terminated */
        const char *user;
        const char *cwd;
        const char *const *env; /* NULL-terminated, or NULL for the agent's default */
        bool stdin_open;
        uint32_t cols, rows; /* both set: on a pseudo-terminal */
        uint32_t timeout_ms;
        bool watch_exec; /* WATCH_EXEC: the subscriber answers JOB_EXEC_CHECKs */
};

/* One job's events as they arrive on a subscriber connection. */
struct agent_test_job_watch {
        int fd;
        const char *id;
        uint64_t next_seq;   /* the SEQ the next event must have */
        bool ack;            /* acknowledge each event on arrival */
        uint8_t want_stream; /* 0: stdout or stderr; else every OUTPUT must be on it */
        /* output per stream (index = STREAM), unless a sink takes it */
        uint8_t *out[4];
        size_t out_len[4];
        void (*sink)(void *ctx, const uint8_t *data, size_t len);
        void *sink_ctx;
        size_t out_total;
        struct agent_test_reply exit; /* the JOB_EXIT, once seen */
        bool exited;
        struct agent_test_reply last; /* the last event read, kept by agent_test_job_watch_step */
};

/* An empty job list, for agent_test_job_subscribe. */
extern const char *const agent_test_no_jobs[];

/* Starts a job; returns its pid. */
pid_t agent_test_job_start(const struct agent_test_job_spec *spec);
void agent_test_job_start_fails(const struct agent_test_job_spec *spec, int error);
/* A control request (JOB_INPUT, JOB_SIGNAL, …) begun for job id. */
void agent_test_job_control_begin(struct agent_frame_writer *w, enum agent_msg_type type, const char *id);
/* Sends a control request; the reply must be OK (error 0) or ERROR with that errno. */
void agent_test_job_control_expect(struct agent_frame_writer *w, int error);
void agent_test_job_input(const char *id, const void *data, size_t len, int error);
void agent_test_job_close_stdin(const char *id, int error);
void agent_test_job_signal(const char *id, int sig, int error);
void agent_test_job_resize(const char *id, uint32_t cols, uint32_t rows, int error);
/* Waits until the agent no longer knows the job (its exit was acknowledged). SIGNAL 0 is
 * refused with EINVAL for a known job and ENOENT for an unknown one. */
void agent_test_job_wait_forgotten(const char *id);
/* Subscribes on a new connection; the JOB_SUBSCRIBED reply must list exactly the ids in
 * expected (NULL-terminated, any order). */
int agent_test_job_subscribe(const char *const *expected);
void agent_test_job_ack(int fd, const char *id, uint64_t seq);
/* Makes sure the agent has handled everything sent on fd so far (acks have no reply):
 * frames on one connection are served in order, so a HELLO's reply comes after them. */
void agent_test_job_channel_sync(int fd);
void agent_test_job_watch_init(struct agent_test_job_watch *jw, int fd, const char *id);
void agent_test_job_watch_release(struct agent_test_job_watch *jw);
/* Reads one event of the job (no other job may send any) and checks its SEQ. */
void agent_test_job_watch_step(struct agent_test_job_watch *jw);
/* The same for an event the caller read (several jobs on one channel); takes *event. */
void agent_test_job_watch_take(struct agent_test_job_watch *jw, struct agent_test_reply *event);
void agent_test_job_watch_until_exit(struct agent_test_job_watch *jw);
/* Reads until the stream's output contains text. */
void agent_test_job_watch_until_contains(struct agent_test_job_watch *jw, uint8_t stream, const char *text);
/* The stream's whole output so far is expected; the JOB_EXIT says code, sig, timed_out. */
void agent_test_job_assert_output(const struct agent_test_job_watch *jw, uint8_t stream, const char *expected);
void agent_test_job_assert_exit(const struct agent_test_job_watch *jw, int code, int sig, int timed_out);
/* The job's exit was acknowledged on arrival: the agent forgets it. */
void agent_test_job_watch_finish(struct agent_test_job_watch *jw);
/* Runs spec to its end with a new subscriber; the caller checks and finishes *jw. */
void agent_test_job_run(const struct agent_test_job_spec *spec, struct agent_test_job_watch *jw);
/* Finishes *jw and closes its subscriber connection. */
void agent_test_job_run_close(struct agent_test_job_watch *jw);
