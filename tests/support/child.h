/*
 * child.h — wait for a forked child that might hang (a deadlock is what the test looks
 * for): a hung child is killed, not waited for forever.
 */
#ifndef JH_TEST_CHILD_H
#define JH_TEST_CHILD_H

#include <stdbool.h>
#include <sys/types.h>

/* Wait up to seconds for pid; *status its wait status. true if it ended by itself, false
 * if it hung and was killed (said on stderr). */
bool wait_child(pid_t pid, int seconds, int *status);

#endif
