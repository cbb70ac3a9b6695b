/* egress_leaf: the leaf certificates space-egress presents on the connections it
 * intercepts (docs/network.md, "HTTPS interception"): one per name, minted on demand with
 * the platform CA (runtime/platform_ca.h made it; the gateway reads its key at start,
 * before it drops to nobody), ECDSA P-256, valid one day, cached and minted again after
 * half of that. A leaf is counted: the cache and each TLS session using it hold it. */
#pragma once

#include <gnutls/gnutls.h>
#include <stddef.h>
#include <stdint.h>

#define EGRESS_LEAF_CACHE 64
#define EGRESS_LEAF_VALID_S (24 * 3600)

struct egress_leaf_minter;

struct egress_leaf {
        unsigned refs;
        char name[256];
        int64_t minted_s;
        gnutls_certificate_credentials_t creds; /* the leaf, then the CA certificate */
};

/* The CA of cert_file and key_file (PEM); 0, or -errno with a sentence in why. */
int egress_leaf_minter_open(const char *cert_file, const char *key_file, struct egress_leaf_minter **ret, char *why,
                            size_t why_size);
void egress_leaf_minter_free(struct egress_leaf_minter *m);
/* A held leaf for name (a normalized DNS name, as the SNI was), from the cache or minted
 * now (now_s: the wall clock); NULL on failure. Give it back with egress_leaf_put. */
struct egress_leaf *egress_leaf_get(struct egress_leaf_minter *m, const char *name, int64_t now_s);
void egress_leaf_put(struct egress_leaf *leaf);
