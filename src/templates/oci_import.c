#include "templates/oci_import.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "templates/rootfs_archive.h"
#include "templates/rootfs_path.h"

#define MAX_LAYERS 256

/* A file inside the unpacked outer archive, by relative path: an O_RDONLY fd or -1. */
static int open_inside(int outerfd, const char *rel)
{
        char clean[PATH_MAX];
        if (!rel || rootfs_path_clean(rel, false, clean, sizeof(clean)) < 0)
                return -1;
        int fd = rootfs_path_open(outerfd, clean, O_RDONLY | O_NOFOLLOW, 0);
        return fd < 0 ? -1 : fd;
}

static int blob_by_digest(int outerfd, const char *digest)
{
        if (!digest || strncmp(digest, "sha256:", 7) != 0 || strlen(digest) != 71)
                return -1;
        for (const char *p = digest + 7; *p; p++)
                if (!isxdigit((unsigned char)*p))
                        return -1;
        char rel[128];
        snprintf(rel, sizeof(rel), "blobs/sha256/%s", digest + 7);
        return open_inside(outerfd, rel);
}

static json_t *load_json_fd(int fd)
{
        if (fd < 0)
                return NULL;
        json_t *j = json_loadfd(fd, JSON_DISABLE_EOF_CHECK, NULL);
        close(fd);
        return j;
}

static int apply_layer(int fd, const char *root, uint64_t max_bytes, size_t index, struct space_error *err)
{
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        struct rootfs_archive_options o = { .keep_owner = true, .whiteouts = true, .max_bytes = max_bytes };
        int r = rootfs_archive_extract(path, root, &o, NULL, err);
        close(fd);
        if (r < 0)
                space_error_wrap(err, "layer %zu", index + 1);
        return r;
}

/* Returns a new reference: the parts of an image config a template keeps. */
static json_t *image_config_new(json_t *cfg)
{
        json_t *c = json_object_get(cfg, "config"), *env = json_object(), *e;
        size_t i;
        json_array_foreach(json_object_get(c, "Env"), i, e)
        {
                const char *kv = json_string_value(e), *eq = kv ? strchr(kv, '=') : NULL;
                if (eq && eq > kv) {
                        char key[256];
                        snprintf(key, sizeof(key), "%.*s", (int)(eq - kv), kv);
                        json_object_set_new(env, key, json_string(eq + 1));
                }
        }
        const char *wd = json_string_value(json_object_get(c, "WorkingDir")),
                   *user = json_string_value(json_object_get(c, "User"));
        return json_pack("{s:o, s:s, s:s, s:{}}", "env", env, "workdir", wd && *wd == '/' ? wd : "/", "user", user ? user : "",
                         "labels");
}

int oci_import_apply(const char *archive, const char *workdir, const char *root, uint64_t max_bytes, json_t **ret_config,
                     struct space_error *err)
{
        struct rootfs_archive_options o = { .keep_owner = false, .max_bytes = max_bytes };
        if (rootfs_archive_extract(archive, workdir, &o, NULL, err) < 0)
                return -1;
        _cleanup_close_ int outer = open(workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (outer < 0)
                return space_error_errno(err, -errno, "open %s", workdir);
        int layers[MAX_LAYERS];
        size_t n = 0;
        _cleanup_json_ json_t *config = NULL;
        _cleanup_json_ json_t *top = NULL;
        _cleanup_json_ json_t *manifest = NULL;
        int r = 0;
        if ((top = load_json_fd(open_inside(outer, "index.json")))) {
                /* OCI layout: index → (nested index →) manifest → layers, config. */
                json_t *m = json_array_get(json_object_get(top, "manifests"), 0);
                manifest = load_json_fd(blob_by_digest(outer, json_string_value(json_object_get(m, "digest"))));
                if (manifest && json_object_get(manifest, "manifests")) {
                        m = json_array_get(json_object_get(manifest, "manifests"), 0);
                        json_t *inner = load_json_fd(blob_by_digest(outer, json_string_value(json_object_get(m, "digest"))));
                        json_decref(manifest);
                        manifest = inner;
                }
                json_t *l;
                size_t i;
                json_array_foreach(json_object_get(manifest, "layers"), i, l)
                {
                        if (n == MAX_LAYERS)
                                break;
                        layers[n] = blob_by_digest(outer, json_string_value(json_object_get(l, "digest")));
                        if (layers[n] < 0) {
                                r = space_error_set(err, SPACE_E_INVALID_REQUEST, "layer %zu of the image is missing", i + 1);
                                break;
                        }
                        n++;
                }
                config = load_json_fd(
                        blob_by_digest(outer, json_string_value(json_object_get(json_object_get(manifest, "config"), "digest"))));
        } else if ((top = load_json_fd(open_inside(outer, "manifest.json")))) {
                /* docker save: [{"Config": "x.json", "Layers": ["a/layer.tar", …]}] */
                json_t *m = json_array_get(top, 0), *l;
                size_t i;
                json_array_foreach(json_object_get(m, "Layers"), i, l)
                {
                        if (n == MAX_LAYERS)
                                break;
                        layers[n] = open_inside(outer, json_string_value(l));
                        if (layers[n] < 0) {
                                r = space_error_set(err, SPACE_E_INVALID_REQUEST, "layer %zu of the image is missing", i + 1);
                                break;
                        }
                        n++;
                }
                config = load_json_fd(open_inside(outer, json_string_value(json_object_get(m, "Config"))));
        } else {
                r = space_error_set(err, SPACE_E_INVALID_REQUEST, "not an image archive: neither index.json nor manifest.json");
        }
        if (r == 0 && n == 0)
                r = space_error_set(err, SPACE_E_INVALID_REQUEST, "the image has no layers");
        size_t applied = 0;
        for (; r == 0 && applied < n; applied++)
                r = apply_layer(layers[applied], root, max_bytes, applied, err);
        for (size_t i = applied; i < n; i++)
                close(layers[i]);
        if (r == 0)
                *ret_config = image_config_new(config);
        return r;
}
