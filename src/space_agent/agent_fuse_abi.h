/* agent_fuse_abi: the few messages of the kernel's FUSE wire protocol (version 7) that the
 * agent's /proc views use. Written from the protocol's published layout because the static
 * musl build has no kernel headers; every struct is checked against its wire size below. */
#pragma once

#include <stdint.h>

#define FUSE_ABI_MAJOR 7
#define FUSE_ABI_MINOR 31

enum fuse_abi_opcode {
        FUSE_ABI_LOOKUP = 1,
        FUSE_ABI_FORGET = 2,
        FUSE_ABI_GETATTR = 3,
        FUSE_ABI_OPEN = 14,
        FUSE_ABI_READ = 15,
        FUSE_ABI_STATFS = 17,
        FUSE_ABI_RELEASE = 18,
        FUSE_ABI_FLUSH = 25,
        FUSE_ABI_INIT = 26,
        FUSE_ABI_INTERRUPT = 36,
        FUSE_ABI_DESTROY = 38,
        FUSE_ABI_BATCH_FORGET = 42,
};

#define FUSE_ABI_FOPEN_DIRECT_IO (1u << 0)
#define FUSE_ABI_ROOT_ID 1

struct fuse_abi_in_header {
        uint32_t len;
        uint32_t opcode;
        uint64_t unique;
        uint64_t nodeid;
        uint32_t uid;
        uint32_t gid;
        uint32_t pid;
        uint16_t total_extlen;
        uint16_t padding;
};

struct fuse_abi_out_header {
        uint32_t len;
        int32_t error; /* 0 or -errno */
        uint64_t unique;
};

struct fuse_abi_init_in {
        uint32_t major;
        uint32_t minor;
        uint32_t max_readahead;
        uint32_t flags;
};

struct fuse_abi_init_out {
        uint32_t major;
        uint32_t minor;
        uint32_t max_readahead;
        uint32_t flags;
        uint16_t max_background;
        uint16_t congestion_threshold;
        uint32_t max_write;
        uint32_t time_gran;
        uint16_t max_pages;
        uint16_t map_alignment;
        uint32_t flags2;
        uint32_t unused[7];
};

struct fuse_abi_attr {
        uint64_t ino;
        uint64_t size;
        uint64_t blocks;
        uint64_t atime;
        uint64_t mtime;
        uint64_t ctime;
        uint32_t atimensec;
        uint32_t mtimensec;
        uint32_t ctimensec;
        uint32_t mode;
        uint32_t nlink;
        uint32_t uid;
        uint32_t gid;
        uint32_t rdev;
        uint32_t blksize;
        uint32_t flags;
};

struct fuse_abi_attr_out {
        uint64_t attr_valid;
        uint32_t attr_valid_nsec;
        uint32_t dummy;
        struct fuse_abi_attr attr;
};

struct fuse_abi_open_in {
        uint32_t flags;
        uint32_t open_flags;
};

struct fuse_abi_open_out {
        uint64_t fh;
        uint32_t open_flags;
        int32_t backing_id;
};

struct fuse_abi_read_in {
        uint64_t fh;
        uint64_t offset;
        uint32_t size;
        uint32_t read_flags;
        uint64_t lock_owner;
        uint32_t flags;
        uint32_t padding;
};

struct fuse_abi_release_in {
        uint64_t fh;
        uint32_t flags;
        uint32_t release_flags;
        uint64_t lock_owner;
};

struct fuse_abi_statfs_out {
        uint64_t blocks, bfree, bavail, files, ffree;
        uint32_t bsize, namelen, frsize, padding;
        uint32_t spare[6];
};

_Static_assert(sizeof(struct fuse_abi_in_header) == 40, "fuse_in_header");
_Static_assert(sizeof(struct fuse_abi_out_header) == 16, "fuse_out_header");
_Static_assert(sizeof(struct fuse_abi_init_out) == 64, "fuse_init_out");
_Static_assert(sizeof(struct fuse_abi_attr) == 88, "fuse_attr");
_Static_assert(sizeof(struct fuse_abi_attr_out) == 104, "fuse_attr_out");
_Static_assert(sizeof(struct fuse_abi_open_out) == 16, "fuse_open_out");
_Static_assert(sizeof(struct fuse_abi_read_in) == 40, "fuse_read_in");
_Static_assert(sizeof(struct fuse_abi_release_in) == 24, "fuse_release_in");
_Static_assert(sizeof(struct fuse_abi_statfs_out) == 80, "fuse_statfs_out");
