/* platform_ca: the per-host certificate authority of the egress gateway's TLS interception
 * (docs/network.md, "HTTPS interception"). An ECDSA P-256 key and a self-signed CA
 * certificate in STATE_DIR/egress-ca/ (key.pem 0600, cert.pem 0644), made once: both are
 * written to egress-ca.tmp/, synced, and the directory is renamed in, so a crash leaves
 * either no CA (made again at the next start) or a whole one. The key stays in the state
 * directory (0700) and is read by space-egress only; the certificate is what sandboxes are
 * given to trust. */
#pragma once

#include <stddef.h>

#include "spaced/space_error.h"

/* Where a sandbox finds it (runtime/namespaces/ns_trust_store.h writes them): its bundle
 * with the CA (SSL_CERT_FILE, REQUESTS_CA_BUNDLE), and the CA alone (NODE_EXTRA_CA_CERTS). */
#define PLATFORM_CA_SANDBOX_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define PLATFORM_CA_SANDBOX_CA "/etc/ssl/certs/space-platform-ca.pem"

struct platform_ca {
        char cert_path[4096]; /* STATE_DIR/egress-ca/cert.pem */
        char key_path[4096];  /* STATE_DIR/egress-ca/key.pem */
        char *cert_pem;       /* the certificate, PEM, NUL-terminated */
        size_t cert_pem_len;
};

/* Loads the CA of state_dir, making it first when there is none. */
int platform_ca_ensure(const char *state_dir, struct platform_ca *ca, struct space_error *err);
void platform_ca_release(struct platform_ca *ca);
