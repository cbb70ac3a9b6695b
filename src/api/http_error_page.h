/* http_error_page: the errors libmicrohttpd answers by itself — a malformed request line or
 * header, a bad Content-Length, a header or URI larger than the connection's memory, a chunk
 * size too large, an HTTP version it refuses — go out in the listener's JSON error shape
 * instead of the library's built-in HTML pages:
 *   spaced's API: {"error": {"code": "headers_too_large", "message": "..."}}
 *   E2B's front door: {"code": 431, "message": "..."}
 * with the library's status (and its Connection: close) kept.
 *
 * libmicrohttpd (0.9.75, Debian's) has no hook for these pages. It builds each one with
 * MHD_create_response_from_buffer() and queues it at once with MHD_queue_response(), both
 * called through its PLT, so spaced, which defines both functions, is called first: a
 * response created from inside the library is remembered (per thread), and when the same
 * response is queued spaced writes the JSON answer of the same status to the client itself
 * and ends the stream (not queued: after a bad Content-Length the library builds a queued
 * error's header twice). Responses spaced creates itself are never touched: it makes them
 * with the other constructors, and the caller's address tells them apart anyway. Every call
 * goes on to the library's own function. http_error_page_ready() checks at start that the
 * library's functions were found and that the library's calls reach spaced's. */
#pragma once

#include <microhttpd.h>
#include <stdbool.h>

/* Whether the JSON error pages are in force; with reason (why not) otherwise. */
bool http_error_page_ready(char *reason, size_t reason_size);

/* The listener's shape for conn (http_listener.c): E2B's front door, or spaced's. */
bool http_listener_e2b_errors(struct MHD_Connection *conn);
