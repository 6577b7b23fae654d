/*
 * elfmap_tune.h — what the elfmap channel lets its tests reach. Nothing here is part of the
 * public API.
 */
#ifndef JH__CHANNELS_ELFMAP_TUNE_H
#define JH__CHANNELS_ELFMAP_TUNE_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Called with [lo, hi) right before live pages are replaced by a mapping of an image file
 * (after elfmap copied their bytes), so a test can play a JIT thread writing there at the
 * worst moment. NULL: none. */
typedef void jh__elfmap_swap_hook_fn(void *arg, uintptr_t lo, uintptr_t hi);
void jh__elfmap_swap_hook(jh__elfmap_swap_hook_fn *fn, void *arg);

/* Keep at most files older-generation files and bytes of them per context (0: the
 * defaults, EM_KEEP_FILES and EM_KEEP_BYTES), so a test need not make hundreds. */
void jh__elfmap_keep(unsigned files, uint64_t bytes);

/* Images made from now on carry a build-id of zeros instead of their own (off): the
 * baseline of bench/buildid. Default on. */
void jh__elfmap_build_ids(bool on);

#ifdef __cplusplus
}
#endif

#endif
