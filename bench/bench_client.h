/* bench_client: one keep-alive HTTP connection to spaced (one libcurl easy handle), owned by
 * one thread. Answers are parsed as JSON. */
#pragma once

#include <jansson.h>

struct bench_client;

/* Returns 0 and a client in *ret, or -errno. */
int bench_client_new(const char *base_url, const char *key, struct bench_client **ret);
void bench_client_free(struct bench_client *c);

/* Sends one request (method GET, POST or DELETE; body NULL for none) to base_url + path.
 * On 0, *ret_status is the HTTP status and *ret_json the parsed answer (NULL when the
 * answer is empty or not JSON; the caller owns it). On a transport failure returns -EIO
 * and bench_client_error() says why; the out-parameters are untouched. */
int bench_client_call(struct bench_client *c, const char *method, const char *path, const char *body, long *ret_status,
                      json_t **ret_json);

/* The reason of the last failure: transport error, or the API's error message. */
const char *bench_client_error(const struct bench_client *c);

/* Records an error message for the caller to read back with bench_client_error(). */
void bench_client_set_error(struct bench_client *c, long status, const json_t *answer);
