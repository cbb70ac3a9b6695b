#include "runtime/platform_ca.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"

#define CA_DIR "egress-ca"
#define CA_VALID_S (10LL * 365 * 24 * 3600)

/* data → dir/name (mode), synced. */
static int write_file_at(int dir, const char *name, const void *data, size_t len, mode_t mode)
{
        _cleanup_close_ int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0)
                return -errno;
        if (fchmod(fd, mode) < 0 || write(fd, data, len) != (ssize_t)len || fsync(fd) < 0)
                return -EIO;
        return 0;
}

static void remove_tmp_dir(const char *path)
{
        _cleanup_close_ int dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir >= 0) {
                unlinkat(dir, "key.pem", 0);
                unlinkat(dir, "cert.pem", 0);
        }
        rmdir(path);
}

/* A new key and self-signed CA certificate, PEM, into key and cert (gnutls_free them). */
static int generate(gnutls_datum_t *key_pem, gnutls_datum_t *cert_pem, char *why, size_t why_size)
{
        gnutls_x509_privkey_t key = NULL;
        gnutls_x509_crt_t crt = NULL;
        unsigned char serial[16], id[20];
        size_t id_size = sizeof(id);
        char cn[96], host[64] = "";
        gethostname(host, sizeof(host) - 1);
        snprintf(cn, sizeof(cn), "space egress CA %.60s", host[0] ? host : "host");
        time_t now = time(NULL);
        int r = getrandom(serial, sizeof(serial), 0) == (ssize_t)sizeof(serial) ? 0 : GNUTLS_E_RANDOM_FAILED;
        serial[0] &= 0x7f;
        if (r == 0)
                r = gnutls_x509_privkey_init(&key);
        if (r == 0)
                r = gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
        if (r == 0)
                r = gnutls_x509_crt_init(&crt);
        if (r == 0)
                r = gnutls_x509_crt_set_version(crt, 3);
        if (r == 0)
                r = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial));
        if (r == 0)
                r = gnutls_x509_crt_set_activation_time(crt, now - 3600);
        if (r == 0)
                r = gnutls_x509_crt_set_expiration_time(crt, (time_t)(now + CA_VALID_S));
        if (r == 0)
                r = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn, (unsigned)strlen(cn));
        if (r == 0)
                r = gnutls_x509_crt_set_key(crt, key);
        if (r == 0)
                r = gnutls_x509_crt_set_basic_constraints(crt, 1, 0); /* a CA of leaves only */
        if (r == 0)
                r = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN);
        if (r == 0)
                r = gnutls_x509_crt_get_key_id(crt, 0, id, &id_size);
        if (r == 0)
                r = gnutls_x509_crt_set_subject_key_id(crt, id, id_size);
        if (r == 0)
                r = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0);
        if (r == 0)
                r = gnutls_x509_privkey_export2(key, GNUTLS_X509_FMT_PEM, key_pem);
        if (r == 0)
                r = gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, cert_pem);
        if (r < 0)
                snprintf(why, why_size, "make the egress CA: %s", gnutls_strerror(r));
        if (crt)
                gnutls_x509_crt_deinit(crt);
        if (key)
                gnutls_x509_privkey_deinit(key);
        return r < 0 ? -EIO : 0;
}

static int create(const char *state_dir, char *why, size_t why_size)
{
        char tmp[4096], final[4096];
        snprintf(tmp, sizeof(tmp), "%s/%s.tmp", state_dir, CA_DIR);
        snprintf(final, sizeof(final), "%s/%s", state_dir, CA_DIR);
        remove_tmp_dir(tmp);
        if (mkdir(tmp, 0700) < 0)
                return snprintf(why, why_size, "mkdir %s: %s", tmp, strerror(errno)), -errno;
        gnutls_datum_t key = { 0 }, cert = { 0 };
        int r = generate(&key, &cert, why, why_size);
        _cleanup_close_ int dir = r == 0 ? open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        if (r == 0 && dir < 0)
                r = -errno;
        if (r == 0)
                r = write_file_at(dir, "key.pem", key.data, key.size, 0600);
        if (r == 0)
                r = write_file_at(dir, "cert.pem", cert.data, cert.size, 0644);
        if (r == 0 && fsync(dir) < 0)
                r = -errno;
        if (r == 0 && rename(tmp, final) < 0)
                r = -errno;
        if (key.data) {
                explicit_bzero(key.data, key.size);
                gnutls_free(key.data);
        }
        gnutls_free(cert.data);
        if (r < 0) {
                if (!why[0])
                        snprintf(why, why_size, "write the egress CA in %s: %s", tmp, strerror(-r));
                remove_tmp_dir(tmp);
        }
        return r;
}

/* The certificate of path, checked to be a CA certificate. */
static int load_cert(const char *path, char **ret, size_t *ret_len, char *why, size_t why_size)
{
        gnutls_datum_t pem = { 0 };
        int r = gnutls_load_file(path, &pem);
        gnutls_x509_crt_t crt = NULL;
        if (r == 0)
                r = gnutls_x509_crt_init(&crt);
        if (r == 0)
                r = gnutls_x509_crt_import(crt, &pem, GNUTLS_X509_FMT_PEM);
        unsigned ca = 0;
        if (r == 0 && gnutls_x509_crt_get_basic_constraints(crt, NULL, &ca, NULL) < 0)
                ca = 0;
        if (r == 0 && !ca)
                r = GNUTLS_E_CERTIFICATE_ERROR;
        if (crt)
                gnutls_x509_crt_deinit(crt);
        if (r < 0) {
                snprintf(why, why_size, "%s is not a CA certificate: %s", path, gnutls_strerror(r));
                gnutls_free(pem.data);
                return -EINVAL;
        }
        *ret = malloc(pem.size + 1);
        if (!*ret) {
                gnutls_free(pem.data);
                return -ENOMEM;
        }
        memcpy(*ret, pem.data, pem.size);
        (*ret)[pem.size] = '\0';
        *ret_len = pem.size;
        gnutls_free(pem.data);
        return 0;
}

int platform_ca_ensure(const char *state_dir, struct platform_ca *ca, struct space_error *err)
{
        memset(ca, 0, sizeof(*ca));
        char dir[4096], why[512] = "";
        snprintf(dir, sizeof(dir), "%s/%s", state_dir, CA_DIR);
        snprintf(ca->cert_path, sizeof(ca->cert_path), "%s/cert.pem", dir);
        snprintf(ca->key_path, sizeof(ca->key_path), "%s/key.pem", dir);
        struct stat st;
        if (lstat(dir, &st) < 0) {
                if (errno != ENOENT)
                        return space_error_errno(err, errno, "%s", dir);
                int r = create(state_dir, why, sizeof(why));
                if (r < 0)
                        return space_error_set(err, SPACE_E_INTERNAL, "%s", why);
        } else if (!S_ISDIR(st.st_mode)) {
                return space_error_set(err, SPACE_E_INTERNAL, "%s is not a directory", dir);
        }
        if (lstat(ca->key_path, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) || st.st_uid != geteuid())
                return space_error_set(err, SPACE_E_INTERNAL, "%s: missing, not a file, or readable by others (0600)",
                                       ca->key_path);
        if (load_cert(ca->cert_path, &ca->cert_pem, &ca->cert_pem_len, why, sizeof(why)) < 0)
                return space_error_set(err, SPACE_E_INTERNAL, "%s", why);
        return 0;
}

void platform_ca_release(struct platform_ca *ca)
{
        free(ca->cert_pem);
        ca->cert_pem = NULL;
}
