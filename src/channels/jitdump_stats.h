/*
 * jitdump_stats.h — what the jitdump channel (jitdump.c) shows to its tests. Nothing here
 * is part of the public API.
 */
#ifndef JH__CHANNELS_JITDUMP_STATS_H
#define JH__CHANNELS_JITDUMP_STATS_H

#include <stdint.h>

/* Units written again at a patch from the records kept when the function was last
 * written (not encoded again), in this process, ever. */
uint64_t jh__jitdump_reused(void);

#endif
