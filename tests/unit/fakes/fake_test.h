/* fake_test: the cmocka fixtures and assertions the unit tests on fake_daemon share. */
#pragma once

#include "operations/sandbox_lifecycle.h"

#include "fake_daemon.h"

/* setup / teardown: a fake_daemon with two workers as *state. */
int fake_test_setup(void **state);
int fake_test_teardown(void **state);
/* Fails the test with fake_daemon_check's reason when the rows and the host disagree. */
void fake_test_assert_consistent(struct fake_daemon *fd);
/* The sandbox's state in the store (it must exist). */
enum sandbox_state fake_test_state(struct fake_daemon *fd, const char *id);
/* Waits for op and fails the test unless it succeeded. */
void fake_test_run_ok(struct fake_daemon *fd, const struct operation *op);
/* A sandbox made from the template and running (timeout 3600 s with on_timeout, NULL: stop). */
void fake_test_create_running(struct fake_daemon *fd, const char *on_timeout, char *ret_id);
/* Submits the action, waits for its success, and checks the state it ends in. */
void fake_test_act(struct fake_daemon *fd, const char *id, enum sandbox_action a, enum sandbox_state want);
