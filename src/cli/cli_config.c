/* cli_config: URL and API key discovery (flag, environment, then the admin key file). */
#include "cli/cli_config.h"

#include <fcntl.h>
#include <stdbool.h>
#include <sys/stat.h>

#include "cleanup.h"

#define CLI_CONFIG_KEY_MAX 4096

static const char *cli_config_env(const char *name)
{
        const char *v = getenv(name);
        return v && *v ? v : NULL;
}

int cli_config_url(const char *flag, char **ret_url)
{
        const char *url = flag ? flag : cli_config_env("SPACE_URL");
        if (!url)
                url = CLI_CONFIG_DEFAULT_URL;

        if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0 &&
            !(strncmp(url, "unix:/", 6) == 0 && strlen(url) > 7))
                return -EINVAL;

        char *copy = strdup(url);
        if (!copy)
                return -ENOMEM;
        size_t n = strlen(copy);
        while (n > 0 && copy[n - 1] == '/')
                copy[--n] = '\0';

        *ret_url = copy;
        return 0;
}

int cli_config_key_path(char **ret_path)
{
        const char *dir = cli_config_env("SPACE_STATE_DIR");
        char *path;

        if (asprintf(&path, "%s/%s", dir ? dir : CLI_CONFIG_DEFAULT_STATE_DIR, CLI_CONFIG_KEY_FILE) < 0)
                return -ENOMEM;
        *ret_path = path;
        return 0;
}

/* Reads the first line of the key file. A missing or unreadable file is no key (0, NULL). */
static int cli_config_read_key_file(const char *path, char **ret_key)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                *ret_key = NULL;
                return 0;
        }

        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode)) {
                *ret_key = NULL;
                return 0;
        }

        _cleanup_erase_ char *buf = calloc(1, CLI_CONFIG_KEY_MAX + 1);
        if (!buf)
                return -ENOMEM;
        size_t len = 0;
        while (len < CLI_CONFIG_KEY_MAX) {
                ssize_t n = read(fd, buf + len, CLI_CONFIG_KEY_MAX - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        len = strcspn(buf, "\r\n");
        while (len > 0 && (buf[len - 1] == ' ' || buf[len - 1] == '\t'))
                len--;
        buf[len] = '\0';

        if (buf[0] == '\0') {
                *ret_key = NULL;
                return 0;
        }
        *ret_key = TAKE_PTR(buf);
        return 0;
}

static bool cli_config_key_valid(const char *key)
{
        for (const unsigned char *p = (const unsigned char *)key; *p; p++)
                if (*p <= ' ' || *p == 0x7f)
                        return false;
        return true;
}

int cli_config_key(const char *flag, char **ret_key)
{
        _cleanup_erase_ char *key = NULL;
        const char *given = flag ? flag : cli_config_env("SPACE_API_KEY");

        if (given) {
                key = strdup(given);
                if (!key)
                        return -ENOMEM;
        } else {
                _cleanup_free_ char *path = NULL;
                int r = cli_config_key_path(&path);
                if (r < 0)
                        return r;
                r = cli_config_read_key_file(path, &key);
                if (r < 0)
                        return r;
        }

        if (key && !cli_config_key_valid(key))
                return -EINVAL;

        *ret_key = TAKE_PTR(key);
        return 0;
}
