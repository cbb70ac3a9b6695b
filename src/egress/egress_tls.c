#include "egress/egress_tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "egress/egress_peek.h"

struct tls_side {
        gnutls_session_t session;
        int fd;
        bool handshaken;
        size_t send_pending; /* a send that returned GNUTLS_E_AGAIN: that many bytes, retried */
};

struct egress_tls {
        struct tls_side client, server; /* client: toward the sandbox (we serve); server: upstream */
        struct egress_leaf *leaf;
        uint8_t peeked[EGRESS_PEEK_MAX];
        size_t peeked_len, peeked_off;
};

static const gnutls_datum_t http11 = { (unsigned char *)"http/1.1", 8 };

gnutls_certificate_credentials_t egress_tls_upstream_trust(const char *ca_file, char *why, size_t why_size)
{
        gnutls_certificate_credentials_t c = NULL;
        int r = gnutls_certificate_allocate_credentials(&c);
        if (r == 0) {
                r = gnutls_certificate_set_x509_trust_file(c, ca_file, GNUTLS_X509_FMT_PEM);
                if (r == 0)
                        r = GNUTLS_E_NO_CERTIFICATE_FOUND;
        }
        if (r < 0) {
                snprintf(why, why_size, "upstream CA bundle %s: %s", ca_file, gnutls_strerror(r));
                if (c)
                        gnutls_certificate_free_credentials(c);
                return NULL;
        }
        return c;
}

/* The sandbox side reads the peeked ClientHello first, then its socket. */
static ssize_t client_pull(gnutls_transport_ptr_t ptr, void *buf, size_t n)
{
        struct egress_tls *t = ptr;
        if (t->peeked_off < t->peeked_len) {
                size_t k = t->peeked_len - t->peeked_off;
                if (k > n)
                        k = n;
                memcpy(buf, t->peeked + t->peeked_off, k);
                t->peeked_off += k;
                return (ssize_t)k;
        }
        return recv(t->client.fd, buf, n, 0);
}

static ssize_t client_push(gnutls_transport_ptr_t ptr, const void *buf, size_t n)
{
        struct egress_tls *t = ptr;
        return send(t->client.fd, buf, n, MSG_NOSIGNAL);
}

static ssize_t server_push(gnutls_transport_ptr_t ptr, const void *buf, size_t n)
{
        struct egress_tls *t = ptr;
        return send(t->server.fd, buf, n, MSG_NOSIGNAL);
}

static ssize_t server_pull(gnutls_transport_ptr_t ptr, void *buf, size_t n)
{
        struct egress_tls *t = ptr;
        return recv(t->server.fd, buf, n, 0);
}

void egress_tls_free(struct egress_tls *t)
{
        if (!t)
                return;
        if (t->client.session)
                gnutls_deinit(t->client.session);
        if (t->server.session)
                gnutls_deinit(t->server.session);
        egress_leaf_put(t->leaf);
        explicit_bzero(t, sizeof(*t));
        free(t);
}

struct egress_tls *egress_tls_new(struct egress_leaf_minter *m, gnutls_certificate_credentials_t trust, const char *name,
                                  int client_fd, int server_fd, const uint8_t *peeked, size_t peeked_len, int64_t now_s)
{
        struct egress_tls *t = calloc(1, sizeof(*t));
        if (!t || peeked_len > sizeof(t->peeked)) {
                free(t);
                return NULL;
        }
        memcpy(t->peeked, peeked, peeked_len);
        t->peeked_len = peeked_len;
        t->client.fd = client_fd;
        t->server.fd = server_fd;
        t->leaf = egress_leaf_get(m, name, now_s);
        int r = t->leaf ? 0 : GNUTLS_E_MEMORY_ERROR;
        if (r == 0)
                r = gnutls_init(&t->client.session, GNUTLS_SERVER | GNUTLS_NONBLOCK);
        if (r == 0)
                r = gnutls_set_default_priority(t->client.session);
        if (r == 0)
                r = gnutls_credentials_set(t->client.session, GNUTLS_CRD_CERTIFICATE, t->leaf->creds);
        if (r == 0)
                r = gnutls_alpn_set_protocols(t->client.session, &http11, 1, 0);
        if (r == 0)
                r = gnutls_init(&t->server.session, GNUTLS_CLIENT | GNUTLS_NONBLOCK);
        if (r == 0)
                r = gnutls_set_default_priority(t->server.session);
        if (r == 0)
                r = gnutls_credentials_set(t->server.session, GNUTLS_CRD_CERTIFICATE, trust);
        if (r == 0)
                r = gnutls_server_name_set(t->server.session, GNUTLS_NAME_DNS, name, strlen(name));
        if (r == 0)
                r = gnutls_alpn_set_protocols(t->server.session, &http11, 1, 0);
        if (r < 0) {
                egress_tls_free(t);
                return NULL;
        }
        /* the upstream's certificate must chain to the trust and name the SNI */
        gnutls_session_set_verify_cert(t->server.session, name, 0);
        gnutls_transport_set_ptr(t->client.session, t);
        gnutls_transport_set_pull_function(t->client.session, client_pull);
        gnutls_transport_set_push_function(t->client.session, client_push);
        gnutls_transport_set_ptr(t->server.session, t);
        gnutls_transport_set_pull_function(t->server.session, server_pull);
        gnutls_transport_set_push_function(t->server.session, server_push);
        return t;
}

static uint32_t wants(struct tls_side *s)
{
        return gnutls_record_get_direction(s->session) ? EPOLLOUT : EPOLLIN;
}

int egress_tls_handshake(struct egress_tls *t, uint32_t *client_events, uint32_t *server_events, char *why, size_t why_size)
{
        *client_events = *server_events = 0;
        struct tls_side *order[2] = { &t->server, &t->client };
        for (int i = 0; i < 2; i++) {
                struct tls_side *s = order[i];
                if (s->handshaken)
                        continue;
                int r = gnutls_handshake(s->session);
                if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
                        *(s == &t->client ? client_events : server_events) = wants(s);
                        return 1;
                }
                if (r < 0) {
                        if (s == &t->server && r == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
                                gnutls_datum_t text = { 0 };
                                unsigned status = gnutls_session_get_verify_cert_status(s->session);
                                gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text, 0);
                                snprintf(why, why_size, "upstream certificate refused: %s",
                                         text.data ? (const char *)text.data : "not trusted");
                                gnutls_free(text.data);
                        } else {
                                snprintf(why, why_size, "%s TLS handshake failed: %s", s == &t->server ? "upstream" : "client",
                                         gnutls_strerror(r));
                        }
                        return -1;
                }
                s->handshaken = true;
        }
        return 0;
}

ssize_t egress_tls_recv(struct egress_tls *t, bool server_side, void *buf, size_t n)
{
        struct tls_side *s = server_side ? &t->server : &t->client;
        ssize_t r = gnutls_record_recv(s->session, buf, n);
        if (r >= 0)
                return r;
        if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
                errno = EAGAIN;
                return -1;
        }
        if (r == GNUTLS_E_PREMATURE_TERMINATION) /* a TCP end without close_notify: an end all the same */
                return 0;
        errno = EIO;
        return -1;
}

ssize_t egress_tls_send(struct egress_tls *t, bool server_side, const void *buf, size_t n)
{
        struct tls_side *s = server_side ? &t->server : &t->client;
        ssize_t r = s->send_pending ? gnutls_record_send(s->session, NULL, 0) : gnutls_record_send(s->session, buf, n);
        if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
                if (!s->send_pending)
                        s->send_pending = n;
                errno = EAGAIN;
                return -1;
        }
        s->send_pending = 0;
        if (r < 0) {
                errno = EIO;
                return -1;
        }
        return r;
}

bool egress_tls_pending(struct egress_tls *t, bool server_side)
{
        return gnutls_record_check_pending(server_side ? t->server.session : t->client.session) > 0;
}

void egress_tls_shut(struct egress_tls *t, bool server_side)
{
        struct tls_side *s = server_side ? &t->server : &t->client;
        (void)gnutls_bye(s->session, GNUTLS_SHUT_WR);
        shutdown(s->fd, SHUT_WR);
}
