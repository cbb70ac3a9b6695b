/* agent_seccomp_abi: the kernel's seccomp user-notification interface (Linux 5.0+, CONTINUE
 * 5.5+) and classic BPF, as far as the agent's exec watch uses them. Written from the
 * published UAPI layout because the static musl build has no kernel headers; every struct
 * is checked against its UAPI size below. */
#pragma once

#include <stdint.h>

#define SECCOMP_ABI_SET_MODE_FILTER 1u
#define SECCOMP_ABI_FILTER_FLAG_NEW_LISTENER (1u << 3)
#define SECCOMP_ABI_RET_ALLOW 0x7fff0000u
#define SECCOMP_ABI_RET_USER_NOTIF 0x7fc00000u
#define SECCOMP_ABI_USER_NOTIF_FLAG_CONTINUE 1u

#define SECCOMP_ABI_AUDIT_ARCH_X86_64 0xc000003eu
#define SECCOMP_ABI_AUDIT_ARCH_I386 0x40000003u
#define SECCOMP_ABI_AUDIT_ARCH_AARCH64 0xc00000b7u
#define SECCOMP_ABI_X32_BIT 0x40000000u

struct seccomp_abi_data {
        int32_t nr;
        uint32_t arch;
        uint64_t instruction_pointer;
        uint64_t args[6];
};

struct seccomp_abi_notif {
        uint64_t id;
        uint32_t pid;
        uint32_t flags;
        struct seccomp_abi_data data;
};

struct seccomp_abi_notif_resp {
        uint64_t id;
        int64_t val;
        int32_t error;
        uint32_t flags;
};

_Static_assert(sizeof(struct seccomp_abi_data) == 64, "struct seccomp_data");
_Static_assert(sizeof(struct seccomp_abi_notif) == 80, "struct seccomp_notif");
_Static_assert(sizeof(struct seccomp_abi_notif_resp) == 24, "struct seccomp_notif_resp");

/* _IOWR('!', 0, struct seccomp_notif), _IOWR('!', 1, struct seccomp_notif_resp),
 * _IOW('!', 2, __u64) */
#define SECCOMP_ABI_IOCTL_NOTIF_RECV 0xc0502100u
#define SECCOMP_ABI_IOCTL_NOTIF_SEND 0xc0182101u
#define SECCOMP_ABI_IOCTL_NOTIF_ID_VALID 0x40082102u

/* classic BPF */
struct seccomp_abi_sock_filter {
        uint16_t code;
        uint8_t jt;
        uint8_t jf;
        uint32_t k;
};

struct seccomp_abi_sock_fprog {
        unsigned short len;
        struct seccomp_abi_sock_filter *filter;
};

#define SECCOMP_ABI_BPF_LD_W_ABS 0x20  /* BPF_LD | BPF_W | BPF_ABS */
#define SECCOMP_ABI_BPF_JEQ_K 0x15     /* BPF_JMP | BPF_JEQ | BPF_K */
#define SECCOMP_ABI_BPF_RET_K 0x06     /* BPF_RET | BPF_K */
#define SECCOMP_ABI_DATA_NR_OFFSET 0   /* offsetof(struct seccomp_data, nr) */
#define SECCOMP_ABI_DATA_ARCH_OFFSET 4 /* offsetof(struct seccomp_data, arch) */
