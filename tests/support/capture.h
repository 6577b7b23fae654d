/*
 * capture.h — run a shell command and keep what it prints: how the unit tests ask the real
 * decoders (readelf, llvm-dwarfdump, ...) for their verdict.
 */
#ifndef JH_TEST_CAPTURE_H
#define JH_TEST_CAPTURE_H

#ifdef __cplusplus
extern "C" {
#endif

/* cmd run by /bin/sh, its stdout and stderr together in a malloc'd NUL-terminated string
 * (NULL if it could not be run or memory ran out); *status its exit status, -1 if it did
 * not exit (status may be NULL). */
char *capture(const char *cmd, int *status);

#ifdef __cplusplus
}
#endif

#endif
