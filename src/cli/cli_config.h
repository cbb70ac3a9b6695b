/* cli_config: where spaced is and which API key to present.
 *
 * URL: --url, else $SPACE_URL, else CLI_CONFIG_DEFAULT_URL.
 * Key: --key, else $SPACE_API_KEY, else the first line of <state-dir>/admin.key if this user
 * can read it, where <state-dir> is $SPACE_STATE_DIR or CLI_CONFIG_DEFAULT_STATE_DIR (so root
 * on the spaced host needs no configuration). Functions return -errno. */
#pragma once

#define CLI_CONFIG_DEFAULT_URL "http://127.0.0.1:7070"
#define CLI_CONFIG_DEFAULT_STATE_DIR "/var/lib/space"
#define CLI_CONFIG_KEY_FILE "admin.key"

/* Returns the base URL without trailing '/'. -EINVAL if it is not http:// or https://. */
int cli_config_url(const char *flag, char **ret_url);

/* Returns the key (a secret: free with erase_and_free) or NULL in *ret_key when there is
 * none. -EINVAL if the key holds whitespace or control characters; -errno if the key file
 * exists and is readable but reading it failed. */
int cli_config_key(const char *flag, char **ret_key);

/* The key file path that cli_config_key() would read. */
int cli_config_key_path(char **ret_path);
