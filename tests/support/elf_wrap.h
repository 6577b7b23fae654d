/*
 * elf_wrap.h — a minimal ELF file around an .eh_frame run (and its .eh_frame_hdr), with
 * .text as NOBITS at the address the run describes: what `readelf --debug-dump=frames`
 * and `llvm-dwarfdump-14 --eh-frame` need to decode CFI that lives in memory.
 */
#ifndef JH_TEST_ELF_WRAP_H
#define JH_TEST_ELF_WRAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Writes path: .text [text_addr, +text_size), .eh_frame (eh, eh_len) at eh_addr, and if
 * hdr is not NULL .eh_frame_hdr (hdr, hdr_len) at hdr_addr. 0, or -1 with errno. */
int elf_wrap_eh_frame(const char *path, uint64_t text_addr, uint64_t text_size,
                      uint64_t eh_addr, const uint8_t *eh, size_t eh_len,
                      uint64_t hdr_addr, const uint8_t *hdr, size_t hdr_len);

#ifdef __cplusplus
}
#endif

#endif
