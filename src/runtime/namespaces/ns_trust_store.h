/* ns_trust_store: the platform CA (runtime/platform_ca.h) in a sandbox's own trust store,
 * at every start of a sandbox with egress (docs/network.md, "Trusting the platform CA"):
 *  - /etc/ssl/certs/ca-certificates.crt (Debian's bundle; made from /etc/ssl/cert.pem, or
 *    holding the CA alone, where the template has none) gets the CA appended, and so does
 *    /etc/ssl/cert.pem (Alpine's, busybox's) where it exists; SSL_CERT_FILE and
 *    REQUESTS_CA_BUNDLE name the first;
 *  - /etc/ssl/certs/space-platform-ca.pem holds the CA alone (NODE_EXTRA_CA_CERTS).
 * Each file is written beside and renamed in (a crash leaves the old one and a stray
 * .space-ca.tmp, removed the next time), resolved inside the rootfs (the sandbox's symlinks
 * cannot point it out), owned as its directory is (the sandbox can still add to it), and
 * left as it is when it already holds the CA. Only the
 * certificate is written: the CA's key never enters a sandbox. */
#pragma once


/* 0 or -errno. */
int ns_trust_store_add(const char *rootfs, const char *ca_pem);
