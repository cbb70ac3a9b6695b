/* The file routes that answer with JSON: stat, list, mkdir, move, remove
 * (GET|POST|DELETE /v1/sandboxes/{id}/files...). The agent inside the sandbox does the work
 * (docs/agent-protocol.md, "Files"); spaced checks the input and renders the answer. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/api_json.h"
#include "api/api_routes.h"
#include "api/file_request.h"
#include "cleanup.h"
#include "spaced/log.h"
#include "service/policy_gate.h"

/* Sends the request, expects want, and answers 200/201 with the entry or entries. */
static void file_call(struct api_request *req, struct api_response *resp, enum agent_msg_type type,
                      const struct agent_file_args *args, enum agent_msg_type want, unsigned status)
{
        struct space_error err = { 0 };
        struct file_target t;
        struct agent_file_reply reply = { 0 };
        char msg[512] = "";
        int fd;
        if (file_target_load(req, &t, &err) < 0 || policy_gate_file_request(req->ctx, &t.sb, type, args, &err) < 0 ||
            (fd = file_target_connect(&t, FILE_REQUEST_TIMEOUT_MS, &err)) < 0)
                goto fail;
        int r = agent_files_call(fd, type, args, want, &reply, msg, sizeof(msg));
        close(fd);
        if (r < 0) {
                file_error_from_agent(&err, r, msg);
                goto fail;
        }
        struct agent_file_entry e;
        size_t cursor = 0;
        if (want == AGENT_MSG_FILE_DONE) {
                resp->status = 204;
        } else if (want == AGENT_MSG_FILE_ENTRY) {
                if (agent_files_next_entry(&reply.frame, &cursor, &e) != 1) {
                        space_error_set(&err, SPACE_E_INTERNAL, "the agent sent no entry");
                        goto fail;
                }
                api_response_json(resp, status, file_render_entry(&e));
        } else {
                json_t *list = json_array();
                int n;
                while ((n = agent_files_next_entry(&reply.frame, &cursor, &e)) == 1)
                        json_array_append_new(list, file_render_entry(&e));
                uint8_t truncated = 0;
                agent_frame_get_u8(&reply.frame, AGENT_F_FILE_TRUNCATED, &truncated);
                api_response_json(resp, status, json_pack("{s:o, s:b}", "entries", list, "truncated", truncated != 0));
        }
        agent_file_reply_release(&reply);
        file_target_release(&t);
        return;
fail:
        agent_file_reply_release(&reply);
        file_target_release(&t);
        api_response_error(resp, &err);
}

void route_file_stat(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct agent_file_args a = { 0 };
        if (file_query_path(req, "path", &a.path, &err) < 0 || file_query_user(req, &a.user, &err) < 0)
                return api_response_error(resp, &err);
        file_call(req, resp, AGENT_MSG_FILE_STAT, &a, AGENT_MSG_FILE_ENTRY, 200);
}

void route_file_list(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct agent_file_args a = { 0 };
        long long depth = 1;
        if (file_query_path(req, "path", &a.path, &err) < 0 || file_query_user(req, &a.user, &err) < 0 ||
            api_request_query_int(req, "depth", 1, AGENT_FILE_DEPTH_MAX, &depth, &err) < 0)
                return api_response_error(resp, &err);
        a.depth = (uint32_t)depth;
        file_call(req, resp, AGENT_MSG_FILE_LIST, &a, AGENT_MSG_FILE_ENTRIES, 200);
}

void route_file_remove(struct api_request *req, struct api_response *resp)
{
        struct space_error err = { 0 };
        struct agent_file_args a = { 0 };
        if (file_query_path(req, "path", &a.path, &err) < 0 || file_query_user(req, &a.user, &err) < 0 ||
            api_request_query_bool(req, "recursive", &a.recursive, &err) < 0)
                return api_response_error(resp, &err);
        file_call(req, resp, AGENT_MSG_FILE_REMOVE, &a, AGENT_MSG_FILE_DONE, 204);
}

/* {"path", "mode", "parents", "owner", "uid", "gid", "user"} shared by mkdir's body. */
static int body_path(const json_t *body, const char *key, bool required, const char **ret, struct space_error *err)
{
        const char *v = NULL;
        if (api_json_string(body, key, PATH_MAX, &v, err) < 0)
                return -1;
        if (!v && !required)
                return 0;
        if (file_path_check(key, v, v ? strlen(v) : 0, err) < 0)
                return -1;
        *ret = v;
        return 0;
}

static int body_user(const json_t *body, const char *key, const char **ret, struct space_error *err)
{
        const char *v = NULL;
        if (api_json_string(body, key, 255, &v, err) < 0)
                return -1;
        if (v && !file_user_name_ok(v))
                return space_error_set(err, SPACE_E_INVALID_REQUEST, "%s must be a user name or uid of the sandbox", key);
        if (v)
                *ret = v;
        return 0;
}

void route_file_mkdir(struct api_request *req, struct api_response *resp)
{
        static const char *const fields[] = { "path", "mode", "parents", "owner", "uid", "gid", "user", NULL };
        struct space_error err = { 0 };
        struct agent_file_args a = { 0 };
        json_t *body = NULL;
        const char *mode = NULL, *owner = NULL;
        long long uid = -1, gid = -1;
        if (api_request_json(req, &body, &err) < 0 || api_json_only(body, fields, "", &err) < 0 ||
            body_path(body, "path", true, &a.path, &err) < 0 || api_json_string(body, "mode", 8, &mode, &err) < 0 ||
            api_json_bool(body, "parents", &a.parents, &err) < 0 || body_user(body, "owner", &owner, &err) < 0 ||
            api_json_int(body, "uid", 0, 0xfffffffe, &uid, &err) < 0 ||
            api_json_int(body, "gid", 0, 0xfffffffe, &gid, &err) < 0 || body_user(body, "user", &a.user, &err) < 0)
                goto fail;
        if (mode) {
                if (file_mode_parse(mode, &a.mode) < 0) {
                        space_error_set(&err, SPACE_E_INVALID_REQUEST, "mode must be octal, e.g. \"0755\"");
                        goto fail;
                }
                a.has_mode = true;
        }
        file_owner_args(owner, uid, gid, &a);
        file_call(req, resp, AGENT_MSG_FILE_MKDIR, &a, AGENT_MSG_FILE_ENTRY, 201);
        json_decref(body);
        return;
fail:
        json_decref(body);
        api_response_error(resp, &err);
}

void route_file_move(struct api_request *req, struct api_response *resp)
{
        static const char *const fields[] = { "source", "destination", "user", NULL };
        struct space_error err = { 0 };
        struct agent_file_args a = { 0 };
        json_t *body = NULL;
        if (api_request_json(req, &body, &err) < 0 || api_json_only(body, fields, "", &err) < 0 ||
            body_path(body, "source", true, &a.path, &err) < 0 || body_path(body, "destination", true, &a.dest, &err) < 0 ||
            body_user(body, "user", &a.user, &err) < 0) {
                json_decref(body);
                return api_response_error(resp, &err);
        }
        file_call(req, resp, AGENT_MSG_FILE_MOVE, &a, AGENT_MSG_FILE_ENTRY, 200);
        json_decref(body);
}
