#include "auth/principal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const role_names[] = {
        [ROLE_NONE] = "none",   [ROLE_VIEWER] = "viewer", [ROLE_DEVELOPER] = "developer",
        [ROLE_OWNER] = "owner", [ROLE_ADMIN] = "admin",
};

static const char *const permission_names[] = {
        "server.read",   "sandbox.read",   "sandbox.write",  "sandbox.exec",    "snapshot.read", "snapshot.write",
        "template.read", "template.write", "operation.read", "operation.write", "key.read",      "key.write",
        "project.read",  "platform",       "approval.write", "secret.read",     "secret.write",  "network.profile",
};
_Static_assert(sizeof(permission_names) / sizeof(permission_names[0]) == 18, "one name per permission bit");

#define READS \
        (PERM_SERVER_READ | PERM_SANDBOX_READ | PERM_SNAPSHOT_READ | PERM_TEMPLATE_READ | PERM_OPERATION_READ | PERM_PROJECT_READ)
#define DEVELOPS \
        (READS | PERM_SANDBOX_WRITE | PERM_SANDBOX_EXEC | PERM_SNAPSHOT_WRITE | PERM_TEMPLATE_WRITE | PERM_OPERATION_WRITE)

const char *principal_role_name(enum principal_role role)
{
        return role >= ROLE_NONE && role <= ROLE_ADMIN ? role_names[role] : "none";
}

int principal_role_from_name(const char *name, enum principal_role *ret)
{
        for (int r = ROLE_VIEWER; r <= ROLE_ADMIN; r++)
                if (name && strcmp(name, role_names[r]) == 0) {
                        *ret = (enum principal_role)r;
                        return 0;
                }
        return -EINVAL;
}

uint32_t principal_role_permissions(enum principal_role role)
{
        switch (role) {
        case ROLE_ADMIN:
                return PERM_ALL;
        case ROLE_OWNER:
                return DEVELOPS | PERM_KEY_READ | PERM_KEY_WRITE | PERM_APPROVAL_WRITE | PERM_SECRET_READ | PERM_SECRET_WRITE;
        case ROLE_DEVELOPER:
                return DEVELOPS;
        case ROLE_VIEWER:
                return READS;
        case ROLE_NONE:
                break;
        }
        return 0;
}

const char *permission_name(uint32_t bit)
{
        for (size_t i = 0; i < sizeof(permission_names) / sizeof(permission_names[0]); i++)
                if (bit == 1u << i)
                        return permission_names[i];
        return NULL;
}

int permission_from_name(const char *name, uint32_t *ret)
{
        for (size_t i = 0; name && i < sizeof(permission_names) / sizeof(permission_names[0]); i++)
                if (strcmp(name, permission_names[i]) == 0) {
                        *ret = 1u << i;
                        return 0;
                }
        return -EINVAL;
}

void permission_format(uint32_t mask, const char *sep, char *buf, size_t size)
{
        size_t len = 0;
        if (size)
                buf[0] = '\0';
        for (size_t i = 0; i < sizeof(permission_names) / sizeof(permission_names[0]) && len < size; i++) {
                if (!(mask & (1u << i)))
                        continue;
                int n = snprintf(buf + len, size - len, "%s%s", len ? sep : "", permission_names[i]);
                if (n < 0)
                        break;
                len += (size_t)n;
        }
}

void principal_platform(struct principal *ret)
{
        memset(ret, 0, sizeof(*ret));
        ret->role = ROLE_ADMIN;
        ret->permissions = PERM_ALL;
}

bool principal_may(const struct principal *p, uint32_t need)
{
        return (p->permissions & need) == need;
}

const char *principal_list_project(const struct principal *p)
{
        return (p->permissions & PERM_PLATFORM) ? NULL : p->project_id;
}

bool principal_sees_project(const struct principal *p, const char *project_id)
{
        return (p->permissions & PERM_PLATFORM) || (p->project_id[0] && strcmp(p->project_id, project_id) == 0);
}

bool principal_may_grant(const struct principal *p, const char *project_id, enum principal_role role, uint32_t permissions,
                         int64_t expires_at_ms, char *why, size_t why_size)
{
        char extra[256];
        if (!principal_sees_project(p, project_id)) {
                snprintf(why, why_size, "a key of project %s cannot make or revoke keys of another project", p->project_id);
                return false;
        }
        if (role > p->role) {
                snprintf(why, why_size, "a %s key cannot make or revoke a %s key", principal_role_name(p->role),
                         principal_role_name(role));
                return false;
        }
        if (permissions & ~p->permissions) {
                permission_format(permissions & ~p->permissions, ", ", extra, sizeof(extra));
                snprintf(why, why_size, "this key lacks what the other would have: %s", extra);
                return false;
        }
        if (p->expires_at_ms && (expires_at_ms == 0 || expires_at_ms > p->expires_at_ms)) {
                snprintf(why, why_size, "this key expires: a key it makes must expire no later");
                return false;
        }
        return true;
}
