/* The undo log of the powercut filesystem: for every backing file changed since it was
 * last fsync'ed, the bytes and the size it had at that sync, so that a power cut can put
 * every file back to what was durable.
 *
 * The model: data written to a file is durable only once fsync() or fdatasync() of that
 * file (through any of its descriptors) returned; a write, a truncation, a hole punched or
 * a range zeroed since then is lost at the cut, block by block (UNDO_LOG_BLOCK bytes), and
 * so is a size change. Metadata (create, unlink, rename, mkdir, chmod, link) is durable at
 * once: a stricter model would lose it too.
 *
 * Thread-safe: every call takes the log's lock (or the file's own lock). Functions return
 * 0 or -errno. */
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define UNDO_LOG_BLOCK 4096u

struct undo_log;
struct undo_file;

struct undo_log_stats {
        uint64_t files;          /* files with anything to undo */
        uint64_t blocks;         /* blocks whose synced bytes are kept */
        uint64_t bytes_beyond;   /* bytes past the synced size (dropped by truncation) */
};

struct undo_log *undo_log_new(void);
void undo_log_free(struct undo_log *log);

/* The record of the file open at fd (created on first use: its synced state is the file as
 * it is now), locked; give it back with undo_file_unlock(). name is kept for reports. */
int undo_log_lock_file(struct undo_log *log, int fd, const char *name, struct undo_file **ret_file);
void undo_file_unlock(struct undo_file *f);

/* Before the bytes [offset, offset+length) of the locked file change (write, punch,
 * zero range): keep what they held at the last sync. */
int undo_file_save_range(struct undo_file *f, uint64_t offset, uint64_t length);
/* Before the locked file is truncated to size. */
int undo_file_save_truncate(struct undo_file *f, uint64_t size);
/* The file at fd was fsync'ed: what it holds now is durable. */
int undo_log_synced(struct undo_log *log, int fd);

/* Torn mode (seed != 0): at the cut, as a disk whose volatile cache wrote out some of what
 * it held, each unsynced block keeps its new bytes or gets its synced ones back by a coin
 * flip, and a file grown since its sync keeps its new size or not, with the new blocks
 * past its synced size each kept or zeroed. What was synced is never touched. */
void undo_log_set_torn(struct undo_log *log, uint64_t seed);

/* The power cut: puts every file back to its state at its last sync and forgets the
 * records. Fills ret_stats with what was undone (may be NULL); with out, one line per file
 * as undo_log_stats() writes them. */
int undo_log_apply(struct undo_log *log, struct undo_log_stats *ret_stats, FILE *out);

/* What would be undone now; with out, one line per file ("name size synced blocks"). */
void undo_log_stats(struct undo_log *log, struct undo_log_stats *ret_stats, FILE *out);
