/*
 * debuginfod.h — a file by its GNU build-id from the debuginfod servers DEBUGINFOD_URLS
 * names, through `debuginfod-find executable ID` (elfutils), for the readers of cores
 * (`jitherald core`) and of audit logs (code recorded by reference).
 */
#ifndef JHR_DEBUGINFOD_H
#define JHR_DEBUGINFOD_H

/* The path debuginfod-find answers for the build-id idhex (malloc'd), or NULL: no
 * DEBUGINFOD_URLS, not found, or idhex is not all hex digits (nothing else ever reaches
 * the command line). */
char *jhr_debuginfod_find(const char *idhex);

#endif
