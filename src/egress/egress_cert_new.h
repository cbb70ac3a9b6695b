/* egress_cert_new: the start both certificates of the egress path share, the platform CA
 * (src/runtime/platform_ca.c, in spaced) and the leaves minted from it
 * (src/egress/egress_leaf.c, in space-egress): a new ECDSA P-256 key and a version 3
 * certificate holding it, a random 127-bit serial (the top bit cleared: a positive
 * INTEGER), valid from an hour before now (clocks that lag) for valid_s seconds, with its
 * subject key id. The caller adds names, constraints and usage, then signs. */
#pragma once

#include <gnutls/x509.h>
#include <time.h>

/* 0, or a GnuTLS error; *ret_key and *ret_crt are set (or NULL) either way: the caller
 * deinits whichever is not NULL. */
int egress_cert_new(time_t now, time_t valid_s, gnutls_x509_privkey_t *ret_key, gnutls_x509_crt_t *ret_crt);
