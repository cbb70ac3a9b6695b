/* agent_frame: the framed protocol between spaced and space-agent.
 *
 * Wire format (all integers little-endian):
 *   frame  = u32 payload_len | u8 type | u8 version (AGENT_PROTOCOL_VERSION) | u16 reserved (0)
 *            | payload (payload_len bytes)
 *   payload = field*
 *   field  = u16 tag | u32 len | len bytes
 * A field may repeat (ARGV, ENV). Unknown tags are skipped by readers so either side can
 * grow new fields. A frame (header + payload) larger than AGENT_FRAME_MAX is a protocol error,
 * a frame of another version -EPROTONOSUPPORT (both sides come from one build).
 *
 * This file is compiled into both spaced (glibc) and the static space-agent (musl or glibc):
 * it uses only libc and returns -errno on failure.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* 2: file bytes travel in-band (FILE_FETCH, FILE_DATA) instead of as passed descriptors. */
#define AGENT_PROTOCOL_VERSION 2
/* HELLO is the version probe: spaced sends it with version 1, which every agent since the
 * first accepts, and the reply's header carries the agent's version. A frame of another
 * version is otherwise refused (-EPROTONOSUPPORT), so a mismatched agent is told apart
 * from one that does not answer. */
#define AGENT_HELLO_VERSION 1
#define AGENT_FRAME_HEADER_SIZE 8
#define AGENT_FRAME_MAX (64u * 1024u * 1024u)

enum agent_msg_type {
        AGENT_MSG_HELLO = 1,       /* spaced -> agent: no fields */
        AGENT_MSG_HELLO_REPLY = 2, /* agent -> spaced: VERSION, AGENT_PID, BOOT_ID */
        AGENT_MSG_EXEC = 3,        /* spaced -> agent: ARGV+, ENV*, CWD?, STDIN?, TIMEOUT_MS?, OUTPUT_CAP? */
        AGENT_MSG_EXEC_RESULT = 4, /* agent -> spaced: see tags below */
        AGENT_MSG_ERROR = 5,       /* agent -> spaced: ERRNO, MESSAGE */
        /* Files (docs/agent-protocol.md, "Files"). Paths are absolute and resolved inside the
         * agent's root; every request may carry FILE_USER. */
        AGENT_MSG_FILE_STAT = 40,    /* FILE_PATH -> FILE_ENTRY */
        AGENT_MSG_FILE_ENTRY = 41,   /* agent -> spaced: one entry (FILE_PATH first) */
        AGENT_MSG_FILE_READ = 42,    /* FILE_PATH -> FILE_ENTRY; the file stays open for FILE_FETCH */
        AGENT_MSG_FILE_LIST = 43,    /* FILE_PATH, FILE_DEPTH? -> FILE_ENTRIES */
        AGENT_MSG_FILE_ENTRIES = 44, /* agent -> spaced: entries, each starting at FILE_PATH; FILE_TRUNCATED? */
        AGENT_MSG_FILE_MKDIR = 45,   /* FILE_PATH, FILE_MODE?, FILE_PARENTS?, owner? -> FILE_ENTRY */
        AGENT_MSG_FILE_MOVE = 46,    /* FILE_PATH, FILE_DEST -> FILE_ENTRY (of FILE_DEST) */
        AGENT_MSG_FILE_REMOVE = 47,  /* FILE_PATH, FILE_RECURSIVE? -> FILE_DONE */
        AGENT_MSG_FILE_DONE = 48,    /* agent -> spaced: no fields */
        AGENT_MSG_FILE_CREATE = 49,  /* FILE_PATH, FILE_MODE?, FILE_PARENTS?, owner? -> FILE_UPLOAD */
        AGENT_MSG_FILE_UPLOAD = 50,  /* agent -> spaced: FILE_PATH, FILE_MEMORY?; then FILE_DATA* from spaced */
        AGENT_MSG_FILE_COMMIT = 51,  /* spaced -> agent: FILE_SYNC?; link the filled file into place -> FILE_ENTRY */
        AGENT_MSG_FILE_WATCH = 52,   /* FILE_PATH, FILE_RECURSIVE? -> FILE_DONE, then FILE_EVENT* */
        AGENT_MSG_FILE_EVENT = 53,   /* agent -> spaced: FILE_EVENT_KIND, FILE_PATH, FILE_NAME, FILE_TYPE */
        AGENT_MSG_FILE_FETCH = 54,   /* spaced -> agent: FILE_OFFSET, FILE_LENGTH of the file FILE_READ opened -> FILE_DATA* */
        AGENT_MSG_FILE_DATA = 55,    /* either way: FILE_OFFSET, DATA (1..AGENT_FILE_CHUNK bytes); no reply */
        /* Jobs: commands that outlive connections, with sequence-numbered output pushed to a
         * subscriber that acknowledges what it has stored (docs/agent-protocol.md). */
        AGENT_MSG_JOB_START = 10,       /* JOB_ID, ARGV+, ENV*, CWD?, USER?, STDIN_OPEN?, TTY_COLS/ROWS?, TIMEOUT_MS? */
        AGENT_MSG_JOB_STARTED = 11,     /* JOB_ID, JOB_PID */
        AGENT_MSG_JOB_SUBSCRIBE = 12,   /* no fields; the connection becomes the output channel */
        AGENT_MSG_JOB_SUBSCRIBED = 13,  /* JOB_ID* of every job the agent holds */
        AGENT_MSG_JOB_OUTPUT = 14,      /* JOB_ID, SEQ, STREAM, DATA */
        AGENT_MSG_JOB_EXIT = 15,        /* JOB_ID, SEQ, EXIT_CODE, TERM_SIGNAL, TIMED_OUT, DURATION_US, ERRNO?, MESSAGE? */
        AGENT_MSG_JOB_ACK = 16,         /* JOB_ID, SEQ: stored up to SEQ; no reply */
        AGENT_MSG_JOB_INPUT = 17,       /* JOB_ID, DATA -> OK */
        AGENT_MSG_JOB_CLOSE_STDIN = 18, /* JOB_ID -> OK */
        AGENT_MSG_JOB_SIGNAL = 19,      /* JOB_ID, SIGNAL -> OK */
        AGENT_MSG_JOB_RESIZE = 20,      /* JOB_ID, TTY_COLS, TTY_ROWS -> OK */
        AGENT_MSG_OK = 21,              /* no fields */
        /* Exec watch (JOB_START with WATCH_EXEC): on the subscriber channel, an exec of the
         * job's tree waits for spaced's verdict (docs/agent-protocol.md, "Exec watch"). */
        AGENT_MSG_JOB_EXEC_CHECK = 22,   /* agent -> spaced: JOB_ID, EXEC_CHECK_ID, JOB_PID, FILE_PATH, EXEC_REAL, ARGV* */
        AGENT_MSG_JOB_EXEC_VERDICT = 23, /* spaced -> agent: EXEC_CHECK_ID, EXEC_ALLOW, MESSAGE?; no reply */
        /* Ingress where spaced cannot join the sandbox's network (gVisor's own stack): the
         * agent connects to 127.0.0.1:PORT inside and, after its OK, the connection carries
         * that TCP stream's bytes both ways, unframed, until either side closes. */
        AGENT_MSG_PORT_CONNECT = 60, /* PORT -> OK (or ERROR: ECONNREFUSED when nothing listens) */
};

enum agent_field_tag {
        AGENT_F_VERSION = 1,           /* string */
        AGENT_F_AGENT_PID = 2,         /* u32 */
        AGENT_F_BOOT_ID = 3,           /* string: 32 hex digits, random per agent start */
        AGENT_F_ARGV = 10,             /* string, repeated, in order */
        AGENT_F_ENV = 11,              /* "KEY=VALUE", repeated; replaces the agent's default env */
        AGENT_F_CWD = 12,              /* string, default "/" */
        AGENT_F_STDIN = 13,            /* bytes fed to the command's stdin, then closed */
        AGENT_F_TIMEOUT_MS = 14,       /* u32, 0 = none; on expiry the process group gets SIGKILL */
        AGENT_F_OUTPUT_CAP = 15,       /* u32 bytes kept per stream; the rest is counted, not kept */
        AGENT_F_EXIT_CODE = 20,        /* i32, 128+N when killed by signal N; 127 when exec failed */
        AGENT_F_TERM_SIGNAL = 21,      /* i32, 0 when exited normally */
        AGENT_F_STDOUT = 22,           /* bytes */
        AGENT_F_STDERR = 23,           /* bytes */
        AGENT_F_TRUNCATED = 24,        /* u8: bit0 stdout, bit1 stderr */
        AGENT_F_TIMED_OUT = 25,        /* u8 */
        AGENT_F_DURATION_US = 26,      /* u64 */
        AGENT_F_ERRNO = 30,            /* i32, positive errno (e.g. ENOENT when exec failed) */
        AGENT_F_MESSAGE = 31,          /* string */
        AGENT_F_JOB_ID = 40,           /* string, chosen by spaced: [A-Za-z0-9_-]{1,63} */
        AGENT_F_USER = 41,             /* string: a user name or uid of the sandbox's /etc/passwd */
        AGENT_F_TTY_COLS = 42,         /* u32 */
        AGENT_F_TTY_ROWS = 43,         /* u32 */
        AGENT_F_STDIN_OPEN = 44,       /* u8: 1 = stdin is a pipe fed by JOB_INPUT until JOB_CLOSE_STDIN */
        AGENT_F_SEQ = 45,              /* u64, per job, from 1, no gaps */
        AGENT_F_STREAM = 46,           /* u8: 1 stdout, 2 stderr, 3 pty */
        AGENT_F_DATA = 47,             /* bytes */
        AGENT_F_SIGNAL = 48,           /* i32 */
        AGENT_F_JOB_PID = 49,          /* u32, pid in the sandbox */
        AGENT_F_WATCH_EXEC = 50,       /* u8: JOB_START: every exec of the job's tree is checked (JOB_EXEC_CHECK) */
        AGENT_F_EXEC_CHECK_ID = 51,    /* u64: the agent's id of one check */
        AGENT_F_EXEC_REAL = 52,        /* string: the file an exec runs, symlinks resolved */
        AGENT_F_EXEC_ALLOW = 53,       /* u8: 1 the exec continues, 0 it fails with EACCES */
        AGENT_F_FILE_PATH = 80,        /* string: absolute path inside the sandbox */
        AGENT_F_FILE_DEST = 81,        /* string: destination of a move */
        AGENT_F_FILE_USER = 82,        /* string: do the operation as this user of the sandbox */
        AGENT_F_FILE_MODE = 83,        /* u32: permission bits (request); st_mode (entry) */
        AGENT_F_FILE_UID = 84,         /* u32 */
        AGENT_F_FILE_GID = 85,         /* u32 */
        AGENT_F_FILE_OWNER = 86,       /* string: user name (request: chown to it; entry: the owner) */
        AGENT_F_FILE_PARENTS = 87,     /* u8: create missing parent directories */
        AGENT_F_FILE_RECURSIVE = 88,   /* u8 */
        AGENT_F_FILE_DEPTH = 89,       /* u32: levels listed, 1 = the directory's own entries */
        AGENT_F_FILE_NAME = 90,        /* string: last path component */
        AGENT_F_FILE_TYPE = 91,        /* u8: enum agent_file_type */
        AGENT_F_FILE_SIZE = 92,        /* u64 */
        AGENT_F_FILE_MTIME_MS = 93,    /* u64: modification time, ms since the epoch */
        AGENT_F_FILE_LINK = 94,        /* string: a symlink's target */
        AGENT_F_FILE_GROUP = 95,       /* string: group name (entry) */
        AGENT_F_FILE_TRUNCATED = 96,   /* u8: a list stopped at AGENT_FILE_LIST_MAX entries */
        AGENT_F_FILE_EVENT_KIND = 97,  /* u8: enum agent_file_event */
        AGENT_F_FILE_OFFSET = 98,      /* u64: where a FILE_FETCH or FILE_DATA starts in the file */
        AGENT_F_FILE_LENGTH = 99,      /* u64: bytes a FILE_FETCH asks for */
        AGENT_F_FILE_MEMORY = 100,     /* u8: an upload's target is in the sandbox's memory (tmpfs, ramfs) */
        AGENT_F_FILE_SYNC = 101,       /* u8: FILE_COMMIT makes the data durable (fdatasync) before linking */
        AGENT_F_FILE_META = 102,       /* "key\0value\0" pairs: user metadata (entry: its own; FILE_CREATE: set at commit) */
        AGENT_F_FILE_WITH_ENTRY = 103, /* u8: FILE_WATCH: each event is followed by its path's entry, when it is there */
        AGENT_F_FILE_EXCL = 104,       /* u8: FILE_CREATE: FILE_COMMIT fails (EEXIST) rather than replace what is there */
        AGENT_F_FILE_WITH_META = 105,  /* u8: the entries of the reply (and of FILE_COMMIT's, on FILE_CREATE) carry FILE_META */
        AGENT_F_PORT = 106,            /* u32: a TCP port, 1-65535 (PORT_CONNECT) */
};

enum agent_file_type {
        AGENT_FILE_OTHER = 0,
        AGENT_FILE_REGULAR = 1,
        AGENT_FILE_DIRECTORY = 2,
        AGENT_FILE_SYMLINK = 3,
};

enum agent_file_event {
        AGENT_FILE_EVENT_CREATE = 1,
        AGENT_FILE_EVENT_WRITE = 2,
        AGENT_FILE_EVENT_REMOVE = 3,
        AGENT_FILE_EVENT_RENAME = 4,
        AGENT_FILE_EVENT_CHMOD = 5,
        AGENT_FILE_EVENT_OVERFLOW = 6, /* events were lost: rescan */
};

#define AGENT_FILE_LIST_MAX 100000u
#define AGENT_FILE_DEPTH_MAX 64u
#define AGENT_FILE_META_MAX 8192u /* bytes of FILE_META in a request */

enum agent_job_stream { AGENT_STREAM_STDOUT = 1, AGENT_STREAM_STDERR = 2, AGENT_STREAM_PTY = 3 };

/* A growable buffer that builds one outgoing frame. */
struct agent_frame_writer {
        uint8_t *data;
        size_t len;
        size_t cap;
        int failed; /* sticky -ENOMEM / -E2BIG */
};

void agent_frame_writer_begin(struct agent_frame_writer *w, enum agent_msg_type type);
/* begin again on a writer (zeroed, or released, or used before), keeping its buffer: a
 * stream of frames of one size without an allocation each. */
void agent_frame_writer_restart(struct agent_frame_writer *w, enum agent_msg_type type);
void agent_frame_writer_put(struct agent_frame_writer *w, uint16_t tag, const void *data, size_t len);
void agent_frame_writer_put_str(struct agent_frame_writer *w, uint16_t tag, const char *s);
void agent_frame_writer_put_u8(struct agent_frame_writer *w, uint16_t tag, uint8_t v);
void agent_frame_writer_put_u32(struct agent_frame_writer *w, uint16_t tag, uint32_t v);
void agent_frame_writer_put_i32(struct agent_frame_writer *w, uint16_t tag, int32_t v);
void agent_frame_writer_put_u64(struct agent_frame_writer *w, uint16_t tag, uint64_t v);
/* Appends a field of len bytes and returns where its bytes go (the caller fills them), or
 * NULL once the writer failed. */
uint8_t *agent_frame_writer_put_space(struct agent_frame_writer *w, uint16_t tag, size_t len);
/* Patches the header's length; returns 0 or the sticky error. data/len then hold the frame. */
int agent_frame_writer_finish(struct agent_frame_writer *w);
void agent_frame_writer_release(struct agent_frame_writer *w);

/* A parsed frame (points into caller-owned memory). */
struct agent_frame {
        uint8_t type;
        const uint8_t *payload;
        uint32_t payload_len;
};

/* Decodes the 8-byte header. Returns payload length (>= 0), -EPROTONOSUPPORT for another
 * protocol version, or -E2BIG. */
int64_t agent_frame_header_decode(const uint8_t header[AGENT_FRAME_HEADER_SIZE], uint8_t *ret_type);

/* Iterates fields: set *cursor = 0 first; returns 1 with tag/data/len filled, 0 at end,
 * -EPROTO on a truncated field. */
int agent_frame_next_field(const struct agent_frame *f, size_t *cursor, uint16_t *ret_tag, const uint8_t **ret_data,
                           uint32_t *ret_len);

/* Finds the first field with tag; returns 1 found, 0 absent, -EPROTO on a truncated field. */
int agent_frame_find(const struct agent_frame *f, uint16_t tag, const uint8_t **ret_data, uint32_t *ret_len);
/* Typed getters: 1 found, 0 absent, -EPROTO when the field has the wrong size. */
int agent_frame_get_u8(const struct agent_frame *f, uint16_t tag, uint8_t *ret);
int agent_frame_get_u32(const struct agent_frame *f, uint16_t tag, uint32_t *ret);
int agent_frame_get_i32(const struct agent_frame *f, uint16_t tag, int32_t *ret);
int agent_frame_get_u64(const struct agent_frame *f, uint16_t tag, uint64_t *ret);

/* Blocking helpers on a stream socket (retry on EINTR, handle short reads/writes).
 * agent_frame_read allocates *ret_buf (payload only); caller frees. Returns 0, -errno,
 * or -ECONNRESET on clean EOF before a header. */
int agent_frame_send(int fd, const struct agent_frame_writer *w);
/* All len bytes to fd (send with MSG_NOSIGNAL, write where fd is no socket); 0 or -errno
 * (-EAGAIN when a send timeout ran out). Also the relays' of ingress (api/port_proxy.c,
 * the agent's PORT_CONNECT). */
int agent_frame_write_all(int fd, const void *data, size_t len);
int agent_frame_read(int fd, struct agent_frame *ret_frame, uint8_t **ret_buf);

/* Incremental reader for non-blocking fds (event loops). Zero-initialise it (or call
 * agent_frame_reader_release) before use. It never reads past the end of the frame it
 * is assembling, so no bytes of the next frame are held back. */
struct agent_frame_reader {
        uint8_t header[AGENT_FRAME_HEADER_SIZE];
        uint32_t header_got;
        uint8_t type;
        uint8_t *buf;
        uint32_t len;
        uint32_t got;
        uint8_t *spare; /* a payload buffer given back (agent_frame_reader_recycle) */
        uint32_t spare_size;
};

/* Reads what is available. Returns 1 when a whole frame is buffered (then call
 * agent_frame_reader_take), 0 on EAGAIN, -ECONNRESET on EOF between frames, -EPROTO on
 * EOF inside a frame or a bad header, -E2BIG, -ENOMEM, or another -errno. */
int agent_frame_reader_fill(struct agent_frame_reader *r, int fd);
/* Hands over the buffered frame: *ret_buf owns the payload (caller frees) and the
 * reader is reset for the next frame. Only valid after fill returned 1. */
void agent_frame_reader_take(struct agent_frame_reader *r, struct agent_frame *ret_frame, uint8_t **ret_buf);
/* Gives back a payload buffer of size bytes that take handed out, for the next frame that
 * fits in it: a stream of data frames then costs no allocation (and no fresh pages) each.
 * Buffers over AGENT_FRAME_READER_SPARE_MAX are freed instead. Takes buf. */
void agent_frame_reader_recycle(struct agent_frame_reader *r, uint8_t *buf, uint32_t size);
void agent_frame_reader_release(struct agent_frame_reader *r);
#define AGENT_FRAME_READER_SPARE_MAX (320u << 10) /* a FILE_DATA frame fits */
