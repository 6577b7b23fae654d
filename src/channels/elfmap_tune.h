/*
 * elfmap_tune.h — what the elfmap channel lets its tests change, so that they need not
 * sleep past its swap budget (elfmap.c: swaps at once up to a burst, then one per refill
 * period). Nothing here is part of the public API.
 */
#ifndef JH__CHANNELS_ELFMAP_TUNE_H
#define JH__CHANNELS_ELFMAP_TUNE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The budget of every context: at most burst swaps at once, then one per refill_ns.
 * 0 restores a value's default (ELFMAP_BURST, ELFMAP_REFILL_NS). */
void jh__elfmap_tune(uint32_t burst, uint64_t refill_ns);

/* The budget's clock jumps ns ahead, as if the JIT had been idle that long. */
void jh__elfmap_clock_skip(uint64_t ns);

#ifdef __cplusplus
}
#endif

#endif
