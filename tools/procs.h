/*
 * procs.h — what `jitherald clean` (cmd_clean.c) asks of the processes alive now, read
 * from /proc: whether the process that wrote a file still runs, and which files live
 * processes map.
 */
#ifndef JHC_PROCS_H
#define JHC_PROCS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <time.h>

/* When the machine booted (seconds since the epoch); 0 if unknown. */
time_t jhc_boot_time(void);

/* Is the process that wrote a file at mtime still running? The pid exists and that
 * process started before the file was last written (else the pid was reused). */
bool jhc_running(long pid, time_t mtime, time_t btime);

/* Every file the live processes map, from each /proc/PID/maps. */
struct jhc_mapped {
    struct jhc_mfile { dev_t dev; ino_t ino; long pid; char *path; } *v;
    size_t n, cap;
    struct jhc_unread { long pid; time_t start; } *unread;  /* processes of ours whose */
    size_t nunread, unread_cap;                             /* mappings cannot be read */
    time_t btime;
    bool incomplete;            /* out of memory: any file may be mapped */
};

/* Read them all (this process's excepted). The device and inode of every mapping are
 * kept; its path only when keep_path(its base name) says so (a file on an overlay shows
 * in maps with another device than stat gives, but with its path). */
void jhc_mapped_scan(struct jhc_mapped *m, time_t btime, bool (*keep_path)(const char *base));

/* The live process that maps the file st (at path), 0 if none. */
long jhc_mapped_by(const struct jhc_mapped *m, const struct stat *st, const char *path);

/* A process of ours whose mappings cannot be read and that may map a file made at birth
 * (0: unknown): its pid; -1 when the scan ran out of memory; 0 if none. */
long jhc_unread_may_map(const struct jhc_mapped *m, time_t birth);

void jhc_mapped_free(struct jhc_mapped *m);

#endif
