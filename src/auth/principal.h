/* principal: who is calling, as authentication found it, and what that caller may do.
 *
 * A control-plane key has a project, a role and a permission set (the role's, narrowed
 * further when the key was made with a list), and may expire. The route tables name one
 * permission (or several, all needed) per route; the router checks it before the handler
 * runs; ownership (a caller sees only its project's objects) is checked by src/service/.
 * docs/tenancy.md states the same roles and permissions. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Ranked: a key never makes or revokes a key of a higher role. */
enum principal_role {
        ROLE_NONE = 0, /* not a control key (no auth, or a data-plane token) */
        ROLE_VIEWER,
        ROLE_DEVELOPER,
        ROLE_OWNER,
        ROLE_ADMIN,
};

/* One bit per permission. Append only: key rows store a mask of these bits. */
enum permission {
        PERM_SERVER_READ = 1u << 0,      /* version, capabilities */
        PERM_SANDBOX_READ = 1u << 1,     /* sandboxes, their sessions, metrics */
        PERM_SANDBOX_WRITE = 1u << 2,    /* create, change, stop, start, pause, resume, restore, fork, delete */
        PERM_SANDBOX_EXEC = 1u << 3,     /* exec, attach sessions (the data plane: commands, files) */
        PERM_SNAPSHOT_READ = 1u << 4,    /* snapshot rows */
        PERM_SNAPSHOT_WRITE = 1u << 5,   /* take, delete, export (the bytes), import */
        PERM_TEMPLATE_READ = 1u << 6,    /* templates, build logs */
        PERM_TEMPLATE_WRITE = 1u << 7,   /* build, import, delete the project's templates */
        PERM_OPERATION_READ = 1u << 8,   /* operations */
        PERM_OPERATION_WRITE = 1u << 9,  /* cancel */
        PERM_KEY_READ = 1u << 10,        /* the project's keys and its audit log */
        PERM_KEY_WRITE = 1u << 11,       /* make and revoke the project's keys */
        PERM_PROJECT_READ = 1u << 12,    /* the caller's project */
        PERM_PLATFORM = 1u << 13,        /* the operator: every project, projects, shared templates, layers */
        PERM_APPROVAL_WRITE = 1u << 14,  /* approve or deny a held command (never one's own) */
        PERM_SECRET_READ = 1u << 15,     /* the project's secrets (names, never values) and credential bindings */
        PERM_SECRET_WRITE = 1u << 16,    /* create and delete secrets, bind them, grant them to a sandbox */
        PERM_NETWORK_PROFILE = 1u << 17, /* give a sandbox another egress profile (PUT …/network) */
};
#define PERM_ALL ((uint32_t)((PERM_NETWORK_PROFILE << 1) - 1))

struct principal {
        char key_id[32];
        char project_id[32];
        enum principal_role role;
        uint32_t permissions;  /* effective: the role's, narrowed by the key's own list */
        int64_t expires_at_ms; /* 0 = never */
        char request_id[64];   /* filled by whoever numbers requests; carried here */
};

const char *principal_role_name(enum principal_role role);
/* "admin", "owner", "developer", "viewer"; -EINVAL otherwise. */
int principal_role_from_name(const char *name, enum principal_role *ret);
/* What a role may do. */
uint32_t principal_role_permissions(enum principal_role role);

/* The name of one permission bit ("sandbox.read"), or NULL. */
const char *permission_name(uint32_t bit);
/* One permission name -> its bit; -EINVAL when unknown. */
int permission_from_name(const char *name, uint32_t *ret);
/* The names of the bits in mask, joined by sep, into buf. */
void permission_format(uint32_t mask, const char *sep, char *buf, size_t size);

/* The daemon itself, for work no client asked for (samplers): every project, every
 * permission, no key. */
void principal_platform(struct principal *ret);
/* Whether p holds every permission in need. */
bool principal_may(const struct principal *p, uint32_t need);
/* The project whose objects a list shows p: its own; NULL (all) for the platform. */
const char *principal_list_project(const struct principal *p);
/* Whether p sees the objects of project_id (its own project; an admin sees all). */
bool principal_sees_project(const struct principal *p, const char *project_id);
/* Whether p may make (or revoke) a key of project_id with role, permissions and expiry
 * (0 = never): the other key never has more than p. When not, why says what is over. */
bool principal_may_grant(const struct principal *p, const char *project_id, enum principal_role role, uint32_t permissions,
                         int64_t expires_at_ms, char *why, size_t why_size);
