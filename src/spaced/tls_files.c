#include "spaced/tls_files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "spaced/spaced_context.h"

#define TLS_FILE_MAX (1u << 20)

/* The whole file as a NUL-terminated string; st is its stat. 0 or -errno. */
static int read_pem(const char *path, char **ret, struct stat *st)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        if (fstat(fd, st) < 0)
                return -errno;
        if (!S_ISREG(st->st_mode))
                return -EINVAL;
        if (st->st_size <= 0 || st->st_size > TLS_FILE_MAX)
                return -EFBIG;
        char *buf = malloc((size_t)st->st_size + 1);
        if (!buf)
                return -ENOMEM;
        size_t got = 0;
        while (got < (size_t)st->st_size) {
                ssize_t n = read(fd, buf + got, (size_t)st->st_size - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        free(buf);
                        return n < 0 ? -errno : -EIO;
                }
                got += (size_t)n;
        }
        buf[got] = '\0';
        *ret = buf;
        return 0;
}

static int load_one(const char *what, const char *path, const char *marker, char **ret, struct stat *st, char *reason,
                    size_t reason_size)
{
        int r = read_pem(path, ret, st);
        if (r == -EFBIG)
                snprintf(reason, reason_size, "%s %s is empty or larger than 1 MiB", what, path);
        else if (r == -EINVAL)
                snprintf(reason, reason_size, "%s %s is not a regular file", what, path);
        else if (r < 0)
                snprintf(reason, reason_size, "cannot read %s %s: %s", what, path, strerror(-r));
        else if (!strstr(*ret, marker) || !strstr(*ret, "-----END ")) {
                snprintf(reason, reason_size, "%s %s holds no PEM block (%s...)", what, path, marker);
                free(*ret);
                *ret = NULL;
                r = -EINVAL;
        }
        return r;
}

int tls_files_load(struct spaced_config *cfg, char *reason, size_t reason_size, char *warning, size_t warning_size)
{
        struct stat st;
        warning[0] = '\0';
        if (!cfg->tls_cert_path[0])
                return 0;
        int r = load_one("certificate", cfg->tls_cert_path, "-----BEGIN CERTIFICATE-----", &cfg->tls_cert_pem, &st, reason,
                         reason_size);
        if (r == 0)
                r = load_one("private key", cfg->tls_key_path, "PRIVATE KEY-----", &cfg->tls_key_pem, &st, reason, reason_size);
        if (r < 0) {
                tls_files_release(cfg);
                return r;
        }
        if (st.st_mode & (S_IRWXG | S_IRWXO))
                snprintf(warning, warning_size, "the private key %s is readable by others than its owner (mode %04o)",
                         cfg->tls_key_path, (unsigned)(st.st_mode & 07777));
        return 0;
}

void tls_files_release(struct spaced_config *cfg)
{
        if (cfg->tls_key_pem) /* the key is wiped before its memory goes back */
                explicit_bzero(cfg->tls_key_pem, strlen(cfg->tls_key_pem));
        free(cfg->tls_key_pem);
        free(cfg->tls_cert_pem);
        cfg->tls_key_pem = cfg->tls_cert_pem = NULL;
}
