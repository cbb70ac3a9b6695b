#include "spaced/spaced_config.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "controller/warm_pool.h"
#include "spaced/log.h"
#include "state_store/state_store_postgres.h"

static const char usage[] =
        "Usage: spaced [OPTIONS]\n"
        "The space daemon: sandboxes for agents over HTTP.\n\n"
        "  --state-dir DIR        state directory (database, btrfs pool, run dirs, logs)\n"
        "                         [/var/lib/space; env SPACE_STATE_DIR]\n"
        "  --database URL         the state store: postgresql://USER@HOST:PORT/DB (docs/operating.md)\n"
        "                         [the SQLite file STATE_DIR/state.db; env SPACE_DATABASE]\n"
        "  --listen ADDR:PORT     HTTP listen address, [IPV6]:PORT for IPv6 [127.0.0.1:7070; env SPACE_LISTEN]\n"
        "  --unix-socket PATH     also serve the API on a unix socket [off]\n"
        "  --config FILE          read `key = value` lines (keys as these flags, no dashes)\n"
        "  --log-level LEVEL      debug|info|warn|error [info; env SPACE_LOG_LEVEL]\n"
        "  --log-format FORMAT    text (key=value) or json (one object per line) [text; env SPACE_LOG_FORMAT]\n"
        "                         (SIGHUP re-reads --config, env and flags: level and format change at\n"
        "                         once, and the --tls-cert/--tls-key files are read again)\n"
        "  --pool-size SIZE       size of the btrfs pool image when the state dir is not btrfs\n"
        "                         [20G; suffixes K M G T]; a new image is made no larger than its\n"
        "                         filesystem can hold: the default is capped, an explicit size refused\n"
        "  --pool-overcommit on|off  allow a pool image larger than its filesystem's free space [off]\n"
        "  --pool-low-space SIZE  host free space under the image below which the pool is low on space\n"
        "                         and new sandboxes, forks and builds are refused [1G]\n"
        "  --pool-trim-interval S give space freed in the pool back to the host every S s [600; 0 = off]\n"
        "  --destroyed-retention S  keep rows of destroyed sandboxes this long [604800 = 7 days]\n"
        "  --audit-retention S      keep audit log rows this long [7776000 = 90 days]\n"
        "  --operation-retention S  keep finished operations this long [2592000 = 30 days]\n"
        "  --durability MODE      process: nothing acknowledged is lost when spaced crashes; power: nor\n"
        "                         when the machine does (every acknowledgement is on disk first) [process]\n"
        "  --agent PATH           the static space-agent binary [next to spaced]\n"
        "  --debian-mirror URL    mirror for the debian template [http://deb.debian.org/debian]\n"
        "  --build-network MODE   network of template build sandboxes: slirp4netns|none\n"
        "                         [slirp4netns when installed, else none]\n"
        "  --presets-dir DIR      Spacefiles of the preset templates [the source tree's templates/presets]\n"
        "  --console-dir DIR      the web console's files, served at /console [the build tree's console/]\n"
        "  --max-context SIZE     largest build context or import archive accepted [2G]\n"
        "  --workers N            operation worker threads [4]\n"
        "  --max-body BYTES       largest request body accepted [1M]\n"
        "  --exec-output-cap SIZE bytes of stdout/stderr kept per exec stream [1M]\n"
        "  --header-timeout S     close a connection silent this long before a request of it\n"
        "                         is authenticated [10]\n"
        "  --idle-timeout S       close an authenticated connection silent this long [3700]\n"
        "  --max-connections N    connections per listener [4096]\n"
        "  --max-connections-per-ip N  connections per listener from one address [512]\n"
        "  --max-unauthenticated N     connections per listener with no authenticated request;\n"
        "                         past it the oldest is cut [a quarter of --max-connections,\n"
        "                         at most 1024; below --max-connections]\n"
        "  --rolling-interval S   default rolling snapshot interval for new sandboxes [0 = off; >= 60]\n"
        "  --hibernate-idle S     hibernate a sandbox paused this long, where its runtime can [0 = off]\n"
        "  --memory-import on|off clients may import memory images (POST /v1/snapshots/import/memory),\n"
        "                         which runsc restore parses: only for clients you trust [off]\n"
        "  --rolling-retain S     default retention of rolling snapshots [604800 = 7 days]\n"
        "  --rolling-max-count N  default number of rolling snapshots kept [168]\n"
        "  --session-ttl S        default lifetime of a data-plane attach token [3600; max 604800]\n"
        "  --approval-timeout S   a command held for approval is denied (expired) after S seconds [3600]\n"
        "  --approval-webhook URL POST each approval request, decision and expiry to URL (http or https),\n"
        "                         signed with HMAC-SHA256 [off; needs --approval-webhook-secret]\n"
        "  --approval-webhook-secret FILE  the webhook's signing key (its bytes as they are in FILE)\n"
        "  --migrate-from sqlite:PATH  copy the SQLite store PATH (spaced stopped) into the empty\n"
        "                         database of --database, then exit (docs/fleet.md)\n"
        "  --role all|control|node  control: the APIs and the database's work, no sandboxes and\n"
        "                         no claims (nodes run what it accepts); node: as all until the\n"
        "                         data plane goes through the control plane (docs/fleet.md) [all]\n"
        "  --claim-lease S        a node's claims on operations lapse S seconds after its last\n"
        "                         heartbeat, and another node takes them over (docs/fleet.md) [10]\n"
        "  --node-lost-after S    a node whose heartbeat stopped S seconds ago is marked lost [60]\n"
        "  --node-label K=V       a label of this node (repeatable), listed in its row for\n"
        "                         placement (docs/fleet.md)\n"
        "  --fleet-secret FILE    the key (at least 32 bytes, the same file on every spaced of the\n"
        "                         database) a node's forwarded data-plane requests are signed with\n"
        "                         [off: the data plane is served only by the sandbox's node]\n"
        "  --command-log-cap SIZE output kept per streamed command; older output is dropped [64M]\n"
        "  --sandbox-log-cap SIZE output kept per sandbox over all its commands; the oldest\n"
        "                         commands' output is dropped first [512M]\n"
        "  --disk-quota on|off    enforce per-sandbox disk limits with btrfs quotas [on]\n"
        "  --proc-views on|off    sandboxes' /proc/meminfo, stat, loadavg, uptime, cpuinfo show their own\n"
        "                         limits (FUSE views; docs/isolation.md) [on]\n"
        "  --warm-pool SPEC       sandboxes made ahead, per template, so that a create is a claim:\n"
        "                         TEMPLATE=N or TEMPLATE=MIN:MAX, comma-separated (docs/operating.md) [none]\n"
        "  --pool-reserve SIZE    pool space sandboxes together can never use [10% of the pool]\n"
        "  --sandbox-disk-mb N    disk limit of a sandbox that does not ask for one [10240]\n"
        "  --sandbox-disk-max-mb N  largest disk_mb a create may ask for [1048576]\n"
        "  --egress-profile NAME  egress of a sandbox whose create names none: none (only lo), public,\n"
        "                         or a profile of --egress-profiles (docs/network.md) [none]\n"
        "  --egress-profiles FILE the operator's egress profiles (JSON) [none]\n"
        "  --egress-subnet CIDR   IPv4 pool of the sandboxes' host links, a /30 each [10.201.0.0/16]\n"
        "  --egress-resolver ADDR[:PORT]  the DNS server space-egress resolves through [the host's]\n"
        "  --egress-gateway PATH  the space-egress binary [next to spaced]\n"
        "  --egress-upstream-ca FILE  the CA bundle intercepted HTTPS upstreams are verified against\n"
        "                         [/etc/ssl/certs/ca-certificates.crt]\n"
        "  --secret-key-file FILE the secret store's master key, 64 hex digits [STATE_DIR/secret.key, made 0600]\n"
        "  --secret-key-command CMD  a command (sh -c) that prints the master key, e.g. from a KMS\n"
        "  --vmlink PATH          the space-vmlink binary of the microvm runtime [next to spaced]\n"
        "  --microvm-accel MODE   auto|kvm|tcg: how microvm sandboxes run; auto takes KVM only where\n"
        "                         /dev/kvm really works [auto]\n"
        "  --e2b-listen ADDR:PORT also serve the E2B API and envd protocol there [off; env SPACE_E2B_LISTEN]\n"
        "  --metrics-listen ADDR:PORT  also serve /metrics there, without a key (the operator's network)\n"
        "                         [off; on --listen it needs an admin key]\n"
        "  --tls-cert FILE        serve every TCP listener over TLS with this PEM certificate (chain)\n"
        "                         [off; env SPACE_TLS_CERT]\n"
        "  --tls-key FILE         the PEM private key of --tls-cert [env SPACE_TLS_KEY]\n"
        "  --e2b-domain DOMAIN    the E2B listener serves sandbox ports for Host <port>-<id>.DOMAIN and\n"
        "                         reports DOMAIN to SDKs (getHost) [none: the path form only]\n"
        "  --ingress-timeout S    sandbox ports (ingress): connect, response headers and inactivity [30]\n"
        "  --ingress-connections N  connections to one sandbox's ports at once [64]\n"
        "  --e2b-templates MAP    E2B template ids to space templates, id=name|fallback,...\n"
        "                         (the first ready name is used) [base=e2b-base|python|busybox]\n"
        "  -h, --help             show this help\n"
        "  --version              print the version\n";

static int parse_size(const char *s, uint64_t *ret)
{
        char *end;
        if (!s || *s < '0' || *s > '9')
                return -1; /* no sign, no blanks */
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || end == s)
                return -1;
        unsigned shift = 0;
        switch (*end) {
        case 'K':
        case 'k':
                shift = 10;
                end++;
                break;
        case 'M':
        case 'm':
                shift = 20;
                end++;
                break;
        case 'G':
        case 'g':
                shift = 30;
                end++;
                break;
        case 'T':
        case 't':
                shift = 40;
                end++;
                break;
        default:
                break;
        }
        if (shift && *end == 'i')
                end++;
        if (*end == 'B' || *end == 'b')
                end++;
        if (*end || (shift && v > (UINT64_MAX >> shift)))
                return -1;
        *ret = (uint64_t)v << shift;
        return 0;
}

/* ADDR:PORT, or [IPV6]:PORT; addr gets the address without brackets. */
static int parse_listen(const char *v, char *addr, size_t addr_size, uint16_t *ret_port)
{
        const char *colon = strrchr(v, ':'), *from = v;
        if (v[0] == '[') {
                const char *close = strchr(v, ']');
                if (!close || close == v + 1 || close[1] != ':')
                        return -1;
                from = v + 1;
                colon = close + 1;
                if ((size_t)(close - from) >= addr_size)
                        return -1;
                snprintf(addr, addr_size, "%.*s", (int)(close - from), from);
        } else if (!colon || colon == v || (size_t)(colon - v) >= addr_size || memchr(v, ':', (size_t)(colon - v))) {
                return -1; /* an IPv6 address needs its brackets */
        } else {
                snprintf(addr, addr_size, "%.*s", (int)(colon - v), v);
        }
        char *end;
        if (colon[1] < '0' || colon[1] > '9')
                return -1;
        long port = strtol(colon + 1, &end, 10);
        if (*end || port < 0 || port > 65535)
                return -1;
        *ret_port = (uint16_t)port;
        return 0;
}

/* http:// or https:// and a host, printable ASCII without spaces (libcurl takes the rest). */
static bool webhook_url_ok(const char *v)
{
        size_t scheme = strncmp(v, "https://", 8) == 0 ? 8 : strncmp(v, "http://", 7) == 0 ? 7 : 0;
        if (!scheme || !v[scheme] || v[scheme] == '/')
                return false;
        for (const char *p = v; *p; p++)
                if (*p <= ' ' || *p >= 0x7f)
                        return false;
        return true;
}

/* "id=name|name,id=name": non-empty ids and names of [A-Za-z0-9._:-] (an empty map is
 * fine); a name list gives alternatives, the first ready one is used. */
static bool template_map_ok(const char *v)
{
        for (const char *p = v; *p;) {
                size_t len = strcspn(p, ","), id = strcspn(p, "=");
                if (id == 0 || id + 1 >= len ||
                    strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-=|") < len ||
                    memchr(p + id + 1, '=', len - id - 1) || memchr(p, '|', id) || p[id + 1] == '|' || p[len - 1] == '|')
                        return false;
                for (const char *q = p + id + 1; q < p + len - 1; q++)
                        if (q[0] == '|' && q[1] == '|')
                                return false;
                if (p[len] == ',' && p[len + 1] == '\0')
                        return false;
                p += len + (p[len] == ',');
        }
        return true;
}

/* Applies one setting by name; returns -1 with a message on stderr if the value is bad. */
/* k=v: a key of 1-31 of [A-Za-z0-9._/-] starting with a letter or digit, a value of 0-23
 * of [A-Za-z0-9._-] (eight of them fit the node row's labels); a key given again takes
 * the new value. */
static int add_node_label(struct spaced_config *cfg, const char *v)
{
        static const char value_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
        const char *eq = strchr(v, '=');
        size_t klen = eq ? (size_t)(eq - v) : 0, vlen = eq ? strlen(eq + 1) : 0;
        if (!eq || klen < 1 || klen > 31 || vlen > 23 || !isalnum((unsigned char)v[0]) || strspn(eq + 1, value_chars) != vlen)
                return -1;
        for (size_t i = 0; i < klen; i++)
                if (!strchr(value_chars, v[i]) && v[i] != '/')
                        return -1;
        for (int i = 0; i < cfg->node_label_count; i++)
                if (strncmp(cfg->node_labels[i], v, klen + 1) == 0) {
                        snprintf(cfg->node_labels[i], sizeof(cfg->node_labels[i]), "%s", v);
                        return 0;
                }
        if (cfg->node_label_count == SPACED_NODE_LABELS_MAX)
                return -1;
        snprintf(cfg->node_labels[cfg->node_label_count++], sizeof(cfg->node_labels[0]), "%s", v);
        return 0;
}

static int apply(struct spaced_config *cfg, const char *key, const char *v)
{
        uint64_t n;
        enum log_level lvl;
        if (strcmp(key, "state-dir") == 0)
                snprintf(cfg->state_dir, sizeof(cfg->state_dir), "%s", v);
        else if (strcmp(key, "database") == 0) {
                /* Only PostgreSQL URLs: the SQLite store is the state directory's file. */
                if (strlen(v) >= sizeof(cfg->database) || (*v && !state_store_postgres_location(v))) {
                        fprintf(stderr, "spaced: --database takes a postgresql:// or postgres:// URL\n");
                        return -1;
                }
                snprintf(cfg->database, sizeof(cfg->database), "%s", v);
        } else if (strcmp(key, "listen") == 0) {
                if (parse_listen(v, cfg->listen_addr, sizeof(cfg->listen_addr), &cfg->listen_port) < 0)
                        goto bad;
        } else if (strcmp(key, "e2b-listen") == 0) {
                if (parse_listen(v, cfg->e2b_listen_addr, sizeof(cfg->e2b_listen_addr), &cfg->e2b_listen_port) < 0)
                        goto bad;
                cfg->e2b_enabled = true;
        } else if (strcmp(key, "metrics-listen") == 0) {
                if (parse_listen(v, cfg->metrics_listen_addr, sizeof(cfg->metrics_listen_addr), &cfg->metrics_listen_port) < 0)
                        goto bad;
                cfg->metrics_listen_enabled = true;
        } else if (strcmp(key, "tls-cert") == 0 || strcmp(key, "tls-key") == 0) {
                char *dst = key[4] == 'c' ? cfg->tls_cert_path : cfg->tls_key_path;
                if (!*v || strlen(v) >= sizeof(cfg->tls_cert_path))
                        goto bad;
                snprintf(dst, sizeof(cfg->tls_cert_path), "%s", v);
        } else if (strcmp(key, "e2b-templates") == 0) {
                if (strlen(v) >= sizeof(cfg->e2b_templates) || !template_map_ok(v))
                        goto bad;
                snprintf(cfg->e2b_templates, sizeof(cfg->e2b_templates), "%s", v);
        } else if (strcmp(key, "unix-socket") == 0)
                snprintf(cfg->unix_socket, sizeof(cfg->unix_socket), "%s", v);
        else if (strcmp(key, "log-level") == 0) {
                if (log_parse_level(v, &lvl) < 0)
                        goto bad;
                cfg->log_level = (int)lvl;
        } else if (strcmp(key, "log-format") == 0) {
                enum log_format fmt;
                if (log_parse_format(v, &fmt) < 0)
                        goto bad;
                cfg->log_format = (int)fmt;
        } else if (strcmp(key, "pool-size") == 0) {
                if (parse_size(v, &n) < 0 || n < (256ULL << 20) || n > (1ULL << 50))
                        goto bad;
                cfg->pool_bytes = n;
                cfg->pool_size_explicit = true;
        } else if (strcmp(key, "pool-overcommit") == 0) {
                if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
                        goto bad;
                cfg->pool_overcommit = strcmp(v, "on") == 0;
        } else if (strcmp(key, "pool-low-space") == 0) {
                if (parse_size(v, &n) < 0 || n > (1ULL << 50))
                        goto bad;
                cfg->pool_low_space_bytes = n;
        } else if (strcmp(key, "pool-trim-interval") == 0) {
                if (parse_size(v, &n) < 0 || (n != 0 && n < 10) || n > 604800)
                        goto bad;
                cfg->pool_trim_interval_s = (int64_t)n;
        } else if (strcmp(key, "durability") == 0) {
                if (strcmp(v, "process") != 0 && strcmp(v, "power") != 0)
                        goto bad;
                cfg->durability_power = strcmp(v, "power") == 0;
        } else if (strcmp(key, "destroyed-retention") == 0) {
                if (parse_size(v, &n) < 0 || n < 1 || n > (366ULL * 86400))
                        goto bad;
                cfg->destroyed_retention_s = (int64_t)n;
        } else if (strcmp(key, "audit-retention") == 0) {
                if (parse_size(v, &n) < 0 || n < 1 || n > (3660ULL * 86400))
                        goto bad;
                cfg->audit_retention_s = (int64_t)n;
        } else if (strcmp(key, "operation-retention") == 0) {
                if (parse_size(v, &n) < 0 || n < 1 || n > (3660ULL * 86400))
                        goto bad;
                cfg->operation_retention_s = (int64_t)n;
        } else if (strcmp(key, "agent") == 0)
                snprintf(cfg->agent_path, sizeof(cfg->agent_path), "%s", v);
        else if (strcmp(key, "debian-mirror") == 0)
                snprintf(cfg->debian_mirror, sizeof(cfg->debian_mirror), "%s", v);
        else if (strcmp(key, "build-network") == 0) {
                if (strcmp(v, "none") != 0 && strcmp(v, "slirp4netns") != 0)
                        goto bad;
                snprintf(cfg->build_network, sizeof(cfg->build_network), "%s", v);
        } else if (strcmp(key, "presets-dir") == 0)
                snprintf(cfg->presets_dir, sizeof(cfg->presets_dir), "%s", v);
        else if (strcmp(key, "console-dir") == 0)
                snprintf(cfg->console_dir, sizeof(cfg->console_dir), "%s", v);
        else if (strcmp(key, "max-context") == 0) {
                if (parse_size(v, &n) < 0 || n < (1ULL << 20) || n > (1ULL << 40))
                        goto bad;
                cfg->max_context_bytes = n;
        } else if (strcmp(key, "workers") == 0) {
                if (parse_size(v, &n) < 0 || n < 1 || n > 64)
                        goto bad;
                cfg->workers = (int)n;
        } else if (strcmp(key, "max-body") == 0) {
                if (parse_size(v, &n) < 0 || n < 1024 || n > (1ULL << 30))
                        goto bad;
                cfg->max_body_bytes = n;
        } else if (strcmp(key, "exec-output-cap") == 0) {
                if (parse_size(v, &n) < 0 || n < 1024 || n > (64ULL << 20))
                        goto bad;
                cfg->exec_output_cap = (uint32_t)n;
        } else if (strcmp(key, "header-timeout") == 0) {
                if (parse_size(v, &n) < 0 || n < 1 || n > 3600)
                        goto bad;
                cfg->http_header_timeout_s = (unsigned)n;
        } else if (strcmp(key, "idle-timeout") == 0) {
                if (parse_size(v, &n) < 0 || n < 1 || n > 86400)
                        goto bad;
                cfg->http_idle_timeout_s = (unsigned)n;
        } else if (strcmp(key, "max-connections") == 0) {
                if (parse_size(v, &n) < 0 || n < 16 || n > 65536)
                        goto bad;
                cfg->http_max_connections = (unsigned)n;
        } else if (strcmp(key, "max-connections-per-ip") == 0) {
                if (parse_size(v, &n) < 0 || n < 1 || n > 65536)
                        goto bad;
                cfg->http_max_per_ip = (unsigned)n;
        } else if (strcmp(key, "max-unauthenticated") == 0) {
                if (parse_size(v, &n) < 0 || n < 1 || n > 65536)
                        goto bad;
                cfg->http_max_unauthenticated = (unsigned)n;
        } else if (strcmp(key, "rolling-interval") == 0) {
                if (parse_size(v, &n) < 0 || (n != 0 && n < 60) || n > 604800)
                        goto bad;
                cfg->rolling_interval_s = (int64_t)n;
        } else if (strcmp(key, "hibernate-idle") == 0) {
                if (parse_size(v, &n) < 0 || n > 604800)
                        goto bad;
                cfg->hibernate_idle_s = (int64_t)n;
        } else if (strcmp(key, "rolling-retain") == 0) {
                if (parse_size(v, &n) < 0 || n < 60 || n > 604800)
                        goto bad;
                cfg->rolling_retain_s = (int64_t)n;
        } else if (strcmp(key, "rolling-max-count") == 0) {
                if (parse_size(v, &n) < 0 || n < 1 || n > 10000)
                        goto bad;
                cfg->rolling_max_count = (int64_t)n;
        } else if (strcmp(key, "session-ttl") == 0) {
                if (parse_size(v, &n) < 0 || n < 1 || n > 604800)
                        goto bad;
                cfg->session_ttl_s = (int64_t)n;
        } else if (strcmp(key, "ingress-timeout") == 0) {
                if (parse_size(v, &n) < 0 || n < 1 || n > 86400)
                        goto bad;
                cfg->ingress_timeout_s = (unsigned)n;
        } else if (strcmp(key, "ingress-connections") == 0) {
                if (parse_size(v, &n) < 0 || n < 1 || n > 100000)
                        goto bad;
                cfg->ingress_connections = (unsigned)n;
        } else if (strcmp(key, "e2b-domain") == 0) {
                if (!*v || strlen(v) >= sizeof(cfg->e2b_domain) ||
                    strspn(v, "abcdefghijklmnopqrstuvwxyz0123456789.-") != strlen(v) || v[0] == '.' || v[0] == '-')
                        goto bad;
                snprintf(cfg->e2b_domain, sizeof(cfg->e2b_domain), "%s", v);
        } else if (strcmp(key, "migrate-from") == 0) {
                if (strncmp(v, "sqlite:", 7) != 0 || !v[7] || strlen(v + 7) >= sizeof(cfg->migrate_from)) {
                        fprintf(stderr, "spaced: --migrate-from takes sqlite:PATH (a state directory's state.db)\n");
                        return -1;
                }
                snprintf(cfg->migrate_from, sizeof(cfg->migrate_from), "%s", v + 7);
        } else if (strcmp(key, "role") == 0) {
                if (strcmp(v, "all") == 0)
                        cfg->role = SPACED_ROLE_ALL;
                else if (strcmp(v, "control") == 0)
                        cfg->role = SPACED_ROLE_CONTROL;
                else if (strcmp(v, "node") == 0)
                        cfg->role = SPACED_ROLE_NODE;
                else
                        goto bad;
        } else if (strcmp(key, "node-label") == 0) {
                if (add_node_label(cfg, v) < 0)
                        goto bad;
        } else if (strcmp(key, "fleet-secret") == 0) {
                if (!*v || strlen(v) >= sizeof(cfg->fleet_secret_path))
                        goto bad;
                snprintf(cfg->fleet_secret_path, sizeof(cfg->fleet_secret_path), "%s", v);
        } else if (strcmp(key, "claim-lease") == 0) {
                if (parse_size(v, &n) < 0 || n < 1 || n > 3600)
                        goto bad;
                cfg->claim_lease_s = (int64_t)n;
        } else if (strcmp(key, "node-lost-after") == 0) {
                if (parse_size(v, &n) < 0 || n < 1 || n > 86400)
                        goto bad;
                cfg->node_lost_after_s = (int64_t)n;
        } else if (strcmp(key, "approval-timeout") == 0) {
                if (parse_size(v, &n) < 0 || n < 1 || n > 604800)
                        goto bad;
                cfg->approval_timeout_s = (int64_t)n;
        } else if (strcmp(key, "approval-webhook") == 0) {
                if (strlen(v) >= sizeof(cfg->approval_webhook_url) || !webhook_url_ok(v))
                        goto bad;
                snprintf(cfg->approval_webhook_url, sizeof(cfg->approval_webhook_url), "%s", v);
        } else if (strcmp(key, "approval-webhook-secret") == 0) {
                if (!*v || strlen(v) >= sizeof(cfg->approval_webhook_secret_path))
                        goto bad;
                snprintf(cfg->approval_webhook_secret_path, sizeof(cfg->approval_webhook_secret_path), "%s", v);
        } else if (strcmp(key, "command-log-cap") == 0) {
                if (parse_size(v, &n) < 0 || n < (256ULL << 10) || n > (1ULL << 40))
                        goto bad;
                cfg->command_log_cap = n;
        } else if (strcmp(key, "sandbox-log-cap") == 0) {
                if (parse_size(v, &n) < 0 || n < (256ULL << 10) || n > (1ULL << 42))
                        goto bad;
                cfg->sandbox_log_cap = n;
        } else if (strcmp(key, "proc-views") == 0) {
                if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
                        goto bad;
                cfg->proc_views = strcmp(v, "on") == 0;
        } else if (strcmp(key, "warm-pool") == 0) {
                struct warm_pool_spec spec;
                struct space_error err = { 0 };
                if (strlen(v) >= sizeof(cfg->warm_pool) || warm_pool_spec_parse(v, &spec, &err) < 0) {
                        fprintf(stderr, "spaced: --warm-pool: %s\n", err.message[0] ? err.message : "too long");
                        return -1;
                }
                snprintf(cfg->warm_pool, sizeof(cfg->warm_pool), "%s", v);
        } else if (strcmp(key, "egress-profile") == 0) {
                if (!*v || strlen(v) >= sizeof(cfg->egress_profile))
                        goto bad;
                snprintf(cfg->egress_profile, sizeof(cfg->egress_profile), "%s", v);
        } else if (strcmp(key, "egress-profiles") == 0) {
                snprintf(cfg->egress_profiles_path, sizeof(cfg->egress_profiles_path), "%s", v);
        } else if (strcmp(key, "egress-subnet") == 0) {
                unsigned a, b, c4, d, bits;
                char tail;
                if (sscanf(v, "%u.%u.%u.%u/%u%c", &a, &b, &c4, &d, &bits, &tail) != 5 || a > 255 || b > 255 || c4 > 255 ||
                    d > 255 || bits < 8 || bits > 30)
                        goto bad;
                cfg->egress_subnet = a << 24 | b << 16 | c4 << 8 | d;
                cfg->egress_subnet_bits = (int)bits;
                if (cfg->egress_subnet & ~(~0u << (32 - bits)))
                        goto bad;
        } else if (strcmp(key, "egress-resolver") == 0) {
                if (!*v || strlen(v) >= sizeof(cfg->egress_resolver))
                        goto bad;
                snprintf(cfg->egress_resolver, sizeof(cfg->egress_resolver), "%s", v);
        } else if (strcmp(key, "egress-upstream-ca") == 0) {
                if (!*v || strlen(v) >= sizeof(cfg->egress_upstream_ca))
                        goto bad;
                snprintf(cfg->egress_upstream_ca, sizeof(cfg->egress_upstream_ca), "%s", v);
        } else if (strcmp(key, "secret-key-file") == 0) {
                if (!*v || strlen(v) >= sizeof(cfg->secret_key_file))
                        goto bad;
                snprintf(cfg->secret_key_file, sizeof(cfg->secret_key_file), "%s", v);
        } else if (strcmp(key, "secret-key-command") == 0) {
                if (!*v || strlen(v) >= sizeof(cfg->secret_key_command))
                        goto bad;
                snprintf(cfg->secret_key_command, sizeof(cfg->secret_key_command), "%s", v);
        } else if (strcmp(key, "egress-gateway") == 0) {
                snprintf(cfg->egress_gateway_path, sizeof(cfg->egress_gateway_path), "%s", v);
        } else if (strcmp(key, "vmlink") == 0) {
                snprintf(cfg->vmlink_path, sizeof(cfg->vmlink_path), "%s", v);
        } else if (strcmp(key, "microvm-accel") == 0) {
                if (strcmp(v, "auto") != 0 && strcmp(v, "kvm") != 0 && strcmp(v, "tcg") != 0)
                        goto bad;
                snprintf(cfg->microvm_accel, sizeof(cfg->microvm_accel), "%s", v);
        } else if (strcmp(key, "memory-import") == 0) {
                if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
                        goto bad;
                cfg->memory_import = strcmp(v, "on") == 0;
        } else if (strcmp(key, "disk-quota") == 0) {
                if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0)
                        goto bad;
                cfg->disk_quota = strcmp(v, "on") == 0;
        } else if (strcmp(key, "pool-reserve") == 0) {
                if (parse_size(v, &n) < 0 || n < (16ULL << 20) || n > (1ULL << 50))
                        goto bad;
                cfg->pool_reserve_bytes = n;
        } else if (strcmp(key, "sandbox-disk-mb") == 0) {
                if (parse_size(v, &n) < 0 || n < 16 || n > SPACED_DISK_MB_MAX)
                        goto bad;
                cfg->sandbox_disk_mb = (int64_t)n;
        } else if (strcmp(key, "sandbox-disk-max-mb") == 0) {
                if (parse_size(v, &n) < 0 || n < 16 || n > SPACED_DISK_MB_MAX)
                        goto bad;
                cfg->sandbox_disk_max_mb = (int64_t)n;
        } else {
                fprintf(stderr, "spaced: unknown setting \"%s\"\n", key);
                return -1;
        }
        return 0;
bad:
        fprintf(stderr, "spaced: invalid value for %s: \"%s\"\n", key, v);
        return -1;
}

static char *trim(char *s)
{
        while (*s == ' ' || *s == '\t')
                s++;
        char *e = s + strlen(s);
        while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
                *--e = '\0';
        return s;
}

static int load_file(struct spaced_config *cfg, const char *path)
{
        FILE *f = fopen(path, "re");
        if (!f) {
                fprintf(stderr, "spaced: cannot read config %s: %s\n", path, strerror(errno));
                return -1;
        }
        char line[1024];
        int lineno = 0, r = 0;
        while (r == 0 && fgets(line, sizeof(line), f)) {
                lineno++;
                char *s = trim(line);
                if (!*s || *s == '#')
                        continue;
                char *eq = strchr(s, '=');
                if (!eq) {
                        fprintf(stderr, "spaced: %s:%d: expected key = value\n", path, lineno);
                        r = -1;
                        break;
                }
                *eq = '\0';
                r = apply(cfg, trim(s), trim(eq + 1));
        }
        fclose(f);
        return r;
}

/* The first of candidates (relative to the directory spaced's binary is in) that access()
 * allows with mode, resolved, into out; out is left as it is when none is. */
static void beside_binary(const char *const *candidates, size_t n, int mode, char *out, size_t size)
{
        char self[PATH_MAX];
        ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (len <= 0)
                return;
        self[len] = '\0';
        char *dir = dirname(self);
        for (size_t i = 0; i < n; i++) {
                char path[PATH_MAX], real[PATH_MAX];
                snprintf(path, sizeof(path), "%s/%s", dir, candidates[i]);
                if (access(path, mode) == 0) {
                        snprintf(out, size, "%s", realpath(path, real) ? real : path);
                        return;
                }
        }
}

/* The build tree's programs, or installed ones (meson install: libexec/space). */
static void default_program_paths(struct spaced_config *cfg)
{
        static const char *const agent[] = { "space-agent", "../space_agent/space-agent", "../libexec/space/space-agent" };
        static const char *const egress[] = { "space-egress", "../egress/space-egress", "../libexec/space/space-egress" };
        beside_binary(agent, sizeof(agent) / sizeof(agent[0]), X_OK, cfg->agent_path, sizeof(cfg->agent_path));
        beside_binary(egress, sizeof(egress) / sizeof(egress[0]), X_OK, cfg->egress_gateway_path,
                      sizeof(cfg->egress_gateway_path));
        static const char *const vmlink[] = { "space-vmlink", "../vm_link/space-vmlink", "../libexec/space/space-vmlink" };
        static const char *const guest[] = { "../libexec/space/microvm-guest-image" };
        beside_binary(vmlink, sizeof(vmlink) / sizeof(vmlink[0]), X_OK, cfg->vmlink_path, sizeof(cfg->vmlink_path));
        beside_binary(guest, sizeof(guest) / sizeof(guest[0]), X_OK, cfg->microvm_guest_script,
                      sizeof(cfg->microvm_guest_script));
        if (!cfg->microvm_guest_script[0] && access(SPACE_MICROVM_GUEST_SCRIPT, X_OK) == 0)
                snprintf(cfg->microvm_guest_script, sizeof(cfg->microvm_guest_script), "%s", SPACE_MICROVM_GUEST_SCRIPT);
}

/* An installed spaced (bin/) uses the presets installed beside it (share/space/presets);
 * one in the build tree, the source tree's. */
static void default_presets_dir(struct spaced_config *cfg)
{
        static const char *const candidates[] = { "../share/space/presets" };
        snprintf(cfg->presets_dir, sizeof(cfg->presets_dir), "%s", SPACE_PRESETS_DIR);
        beside_binary(candidates, 1, R_OK | X_OK, cfg->presets_dir, sizeof(cfg->presets_dir));
}

/* The web console's files (docs/console.md): installed beside spaced (share/space/console),
 * or the build tree's (meson builds them into <build>/console). */
static void default_console_dir(struct spaced_config *cfg)
{
        static const char *const candidates[] = { "../share/space/console" };
        snprintf(cfg->console_dir, sizeof(cfg->console_dir), "%s", SPACE_CONSOLE_DIR);
        beside_binary(candidates, 1, R_OK | X_OK, cfg->console_dir, sizeof(cfg->console_dir));
}

int spaced_config_load(struct spaced_config *cfg, int argc, char **argv)
{
        memset(cfg, 0, sizeof(*cfg));
        snprintf(cfg->state_dir, sizeof(cfg->state_dir), "/var/lib/space");
        snprintf(cfg->listen_addr, sizeof(cfg->listen_addr), "127.0.0.1");
        cfg->listen_port = 7070;
        snprintf(cfg->debian_mirror, sizeof(cfg->debian_mirror), "http://deb.debian.org/debian");
        cfg->pool_bytes = 20ULL << 30;
        cfg->pool_low_space_bytes = 1ULL << 30;
        cfg->pool_trim_interval_s = 600;
        cfg->destroyed_retention_s = 604800;
        cfg->audit_retention_s = 7776000;
        cfg->operation_retention_s = 30 * 86400;
        cfg->max_body_bytes = 1ULL << 20;
        cfg->exec_output_cap = 1u << 20;
        cfg->http_header_timeout_s = 10;
        cfg->http_idle_timeout_s = 3700;
        cfg->http_max_connections = 4096;
        cfg->http_max_per_ip = 512;
        cfg->http_max_unauthenticated = 0; /* chosen after the flags: see below */
        cfg->workers = 4;
        cfg->max_context_bytes = 2ULL << 30;
        default_presets_dir(cfg);
        default_console_dir(cfg);
        cfg->log_level = LOG_INFO;
        cfg->rolling_retain_s = 604800;
        cfg->rolling_max_count = 168;
        cfg->session_ttl_s = 3600;
        cfg->approval_timeout_s = 3600;
        cfg->ingress_timeout_s = 30;
        cfg->ingress_connections = 64;
        cfg->claim_lease_s = 10;
        cfg->node_lost_after_s = 60;
        cfg->command_log_cap = 64ULL << 20;
        cfg->sandbox_log_cap = 512ULL << 20;
        cfg->disk_quota = true;
        cfg->proc_views = true;
        cfg->sandbox_disk_mb = 10240;
        cfg->sandbox_disk_max_mb = 1048576;
        snprintf(cfg->e2b_templates, sizeof(cfg->e2b_templates), "base=e2b-base|python|busybox");
        snprintf(cfg->egress_profile, sizeof(cfg->egress_profile), "none");
        snprintf(cfg->microvm_accel, sizeof(cfg->microvm_accel), "auto");
        cfg->egress_subnet = 10u << 24 | 201u << 16;
        cfg->egress_subnet_bits = 16;
        default_program_paths(cfg);

        static const struct option opts[] = {
                { "state-dir", required_argument, NULL, 0 },
                { "database", required_argument, NULL, 0 },
                { "listen", required_argument, NULL, 0 },
                { "unix-socket", required_argument, NULL, 0 },
                { "config", required_argument, NULL, 0 },
                { "log-level", required_argument, NULL, 0 },
                { "pool-size", required_argument, NULL, 0 },
                { "pool-overcommit", required_argument, NULL, 0 },
                { "pool-low-space", required_argument, NULL, 0 },
                { "pool-trim-interval", required_argument, NULL, 0 },
                { "destroyed-retention", required_argument, NULL, 0 },
                { "audit-retention", required_argument, NULL, 0 },
                { "operation-retention", required_argument, NULL, 0 },
                { "durability", required_argument, NULL, 0 },
                { "agent", required_argument, NULL, 0 },
                { "debian-mirror", required_argument, NULL, 0 },
                { "workers", required_argument, NULL, 0 },
                { "max-body", required_argument, NULL, 0 },
                { "exec-output-cap", required_argument, NULL, 0 },
                { "rolling-interval", required_argument, NULL, 0 },
                { "hibernate-idle", required_argument, NULL, 0 },
                { "memory-import", required_argument, NULL, 0 },
                { "rolling-retain", required_argument, NULL, 0 },
                { "rolling-max-count", required_argument, NULL, 0 },
                { "build-network", required_argument, NULL, 0 },
                { "presets-dir", required_argument, NULL, 0 },
                { "console-dir", required_argument, NULL, 0 },
                { "max-context", required_argument, NULL, 0 },
                { "session-ttl", required_argument, NULL, 0 },
                { "approval-timeout", required_argument, NULL, 0 },
                { "approval-webhook", required_argument, NULL, 0 },
                { "approval-webhook-secret", required_argument, NULL, 0 },
                { "ingress-timeout", required_argument, NULL, 0 },
                { "ingress-connections", required_argument, NULL, 0 },
                { "e2b-domain", required_argument, NULL, 0 },
                { "claim-lease", required_argument, NULL, 0 },
                { "fleet-secret", required_argument, NULL, 0 },
                { "node-label", required_argument, NULL, 0 },
                { "role", required_argument, NULL, 0 },
                { "migrate-from", required_argument, NULL, 0 },
                { "node-lost-after", required_argument, NULL, 0 },
                { "command-log-cap", required_argument, NULL, 0 },
                { "sandbox-log-cap", required_argument, NULL, 0 },
                { "disk-quota", required_argument, NULL, 0 },
                { "proc-views", required_argument, NULL, 0 },
                { "warm-pool", required_argument, NULL, 0 },
                { "pool-reserve", required_argument, NULL, 0 },
                { "sandbox-disk-mb", required_argument, NULL, 0 },
                { "sandbox-disk-max-mb", required_argument, NULL, 0 },
                { "egress-profile", required_argument, NULL, 0 },
                { "egress-profiles", required_argument, NULL, 0 },
                { "egress-subnet", required_argument, NULL, 0 },
                { "egress-resolver", required_argument, NULL, 0 },
                { "egress-upstream-ca", required_argument, NULL, 0 },
                { "egress-gateway", required_argument, NULL, 0 },
                { "secret-key-file", required_argument, NULL, 0 },
                { "secret-key-command", required_argument, NULL, 0 },
                { "vmlink", required_argument, NULL, 0 },
                { "microvm-accel", required_argument, NULL, 0 },
                { "e2b-listen", required_argument, NULL, 0 },
                { "e2b-templates", required_argument, NULL, 0 },
                { "log-format", required_argument, NULL, 0 },
                { "metrics-listen", required_argument, NULL, 0 },
                { "tls-cert", required_argument, NULL, 0 },
                { "tls-key", required_argument, NULL, 0 },
                { "header-timeout", required_argument, NULL, 0 },
                { "idle-timeout", required_argument, NULL, 0 },
                { "max-connections", required_argument, NULL, 0 },
                { "max-connections-per-ip", required_argument, NULL, 0 },
                { "max-unauthenticated", required_argument, NULL, 0 },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                { 0 },
        };
        /* First pass: only --config, --help and --version, so the file sits below env and flags. */
        int idx, c;
        opterr = 0;
        optind = 0; /* full re-initialisation, so loading twice in one process works */
        while ((c = getopt_long(argc, argv, "h", opts, &idx)) != -1) {
                if (c == 'h') {
                        fputs(usage, stdout);
                        return 1;
                }
                if (c == 'V') {
                        printf("spaced %s\n", SPACE_VERSION);
                        return 1;
                }
                if (c == '?') {
                        fprintf(stderr, "spaced: unknown or incomplete option %s\n%s", argv[optind - 1], usage);
                        return -1;
                }
                if (c == 0 && strcmp(opts[idx].name, "config") == 0 && load_file(cfg, optarg) < 0)
                        return -1;
        }
        if (optind < argc) {
                fprintf(stderr, "spaced: unexpected argument %s\n", argv[optind]);
                return -1;
        }
        static const struct {
                const char *env, *key;
        } envs[] = { { "SPACE_STATE_DIR", "state-dir" },   { "SPACE_DATABASE", "database" },
                     { "SPACE_LISTEN", "listen" },         { "SPACE_LOG_LEVEL", "log-level" },
                     { "SPACE_LOG_FORMAT", "log-format" }, { "SPACE_E2B_LISTEN", "e2b-listen" },
                     { "SPACE_TLS_CERT", "tls-cert" },     { "SPACE_TLS_KEY", "tls-key" } };
        for (size_t i = 0; i < sizeof(envs) / sizeof(envs[0]); i++) {
                const char *v = getenv(envs[i].env);
                if (v && *v && apply(cfg, envs[i].key, v) < 0)
                        return -1;
        }
        optind = 0;
        while ((c = getopt_long(argc, argv, "h", opts, &idx)) != -1)
                if (c == 0 && strcmp(opts[idx].name, "config") != 0 && apply(cfg, opts[idx].name, optarg) < 0)
                        return -1;
        /* The connections past --max-unauthenticated are the reserve of authenticated ones:
         * by default a quarter of the listener's, at most 1024. */
        if (!cfg->http_max_unauthenticated)
                cfg->http_max_unauthenticated = cfg->http_max_connections / 4 < 1024 ? cfg->http_max_connections / 4 : 1024;
        if (cfg->http_max_unauthenticated >= cfg->http_max_connections) {
                fprintf(stderr, "spaced: --max-unauthenticated (%u) must be below --max-connections (%u)\n",
                        cfg->http_max_unauthenticated, cfg->http_max_connections);
                return -1;
        }
        if (!cfg->approval_webhook_url[0] != !cfg->approval_webhook_secret_path[0]) {
                fprintf(stderr, "spaced: --approval-webhook and --approval-webhook-secret go together: give both or neither\n");
                return -1;
        }
        if (!cfg->tls_cert_path[0] != !cfg->tls_key_path[0]) {
                fprintf(stderr, "spaced: --tls-cert and --tls-key go together: give both or neither\n");
                return -1;
        }
        if (cfg->http_max_per_ip > cfg->http_max_connections)
                cfg->http_max_per_ip = cfg->http_max_connections;
        if (cfg->sandbox_disk_mb > cfg->sandbox_disk_max_mb) {
                fprintf(stderr, "spaced: --sandbox-disk-mb %lld is above --sandbox-disk-max-mb %lld\n",
                        (long long)cfg->sandbox_disk_mb, (long long)cfg->sandbox_disk_max_mb);
                return -1;
        }
        return 0;
}
