/* command_log: one command's output and end as sequence-numbered records on disk.
 *
 * A log is a directory of segment files named after the first sequence number they hold
 * ("00000000000000000001.seg"). A record is a 16-byte header (u32 payload length, u8 kind,
 * 3 zero bytes, u64 sequence number; host byte order) and its payload. Sequence numbers are
 * the agent's: they start at 1 and have no gaps, so a segment's successor is named after
 * the sequence number that follows its last record. When the segments together exceed
 * the log's cap the oldest is deleted and readers that were behind are told which
 * sequence numbers they missed.
 *
 * One writer (the sandbox's output channel) and any number of readers (event streams),
 * each with its own file descriptors. A writer opened on an existing log cuts a record
 * torn by a crash and carries on after the last whole one. Functions return -errno. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum command_log_kind {
        COMMAND_LOG_STDOUT = 1,
        COMMAND_LOG_STDERR = 2,
        COMMAND_LOG_PTY = 3,
        COMMAND_LOG_EXIT = 10, /* payload: JSON object, the last record */
};

#define COMMAND_LOG_HEADER_SIZE 16
#define COMMAND_LOG_RECORD_MAX (64u << 20)

struct command_log_writer;

/* Opens (creating it and its parents) the log in dir. cap_bytes bounds the segments kept. */
int command_log_open(const char *dir, uint64_t cap_bytes, struct command_log_writer **ret);
/* The sequence number of the last record, 0 for an empty log. */
uint64_t command_log_last_seq(const struct command_log_writer *w);
/* Appends one record; seq must be last_seq + 1 (-EINVAL otherwise). */
int command_log_append(struct command_log_writer *w, uint64_t seq, enum command_log_kind kind, const void *data, size_t len);
/* Durable: every append is on disk (fdatasync, and the directory on a new segment) before
 * it returns, so that what is acknowledged survives a power loss (--durability power). */
void command_log_set_durable(struct command_log_writer *w, bool durable);
void command_log_close(struct command_log_writer *w);

struct command_log_record {
        uint64_t seq;
        enum command_log_kind kind;
        uint8_t *data; /* owned by the reader, valid until the next call */
        size_t len;
        /* for COMMAND_LOG_READ_DROPPED: the first and last sequence numbers lost */
        uint64_t dropped_first, dropped_last;
};

enum command_log_read {
        COMMAND_LOG_READ_NONE = 0,    /* nothing after the position yet */
        COMMAND_LOG_READ_RECORD = 1,  /* a record */
        COMMAND_LOG_READ_DROPPED = 2, /* records were deleted before they were read */
};

struct command_log_reader;

/* A reader positioned after after_seq (0: from the start). */
int command_log_reader_open(const char *dir, uint64_t after_seq, struct command_log_reader **ret);
/* The sequence number of the last whole record of the log in dir (0 when it has none):
 * where a reader that wants only what comes next starts. -ENOENT when there is no log. */
int command_log_end_seq(const char *dir, uint64_t *ret);
/* Returns an enum command_log_read or -errno (-ENOENT: the log is gone). */
int command_log_reader_next(struct command_log_reader *r, struct command_log_record *ret);
/* The sequence number of the last record (or drop) returned. */
uint64_t command_log_reader_position(const struct command_log_reader *r);
void command_log_reader_close(struct command_log_reader *r);

/* For caps over many logs (sandbox_logs.h): a log's segments, oldest first. */
struct command_log_segment {
        uint64_t first_seq;
        uint64_t size;
        int64_t mtime_ns; /* last written */
};
int command_log_segments(const char *dir, struct command_log_segment **ret, size_t *ret_n);
/* Deletes one segment that is not the log's newest (-EBUSY for the newest): readers that
 * had not read it are told its records were dropped, as for the log's own cap. */
int command_log_drop_segment(const char *dir, uint64_t first_seq);
/* A finished log (its last record is the exit) keeps only that record: the newest segment
 * is replaced by one that holds just the exit, so readers see a drop and then the end.
 * *ret_freed gets the bytes freed; -EAGAIN if the log has not ended. */
int command_log_compact_end(const char *dir, uint64_t *ret_freed);

/* Deletes a log's directory and segments (a destroyed sandbox's). */
int command_log_remove(const char *dir);
/* Removes the log directories under root (one per sandbox) for which keep(name, userdata)
 * is false; returns how many were removed. */
int command_log_sweep(const char *root, bool (*keep)(const char *name, void *userdata), void *userdata);
