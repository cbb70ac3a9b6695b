/* seccomp_policy: the allow-list every namespace sandbox runs under, compiled once at start
 * into a BPF program that the clone()d child loads with a single system call. */
#pragma once

#include <linux/filter.h>

/* Builds the program; ret->filter is malloc'd. Returns 0 or -errno. */
int seccomp_policy_build(struct sock_fprog *ret);
