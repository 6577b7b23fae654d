/*
 * eh_frame.h — a bounds-checked decoder of an .eh_frame and its .eh_frame_hdr, as a
 * jitdump's UNWINDING_INFO carries them for perf (fmt/jitdump.h): every length, pointer and
 * range is checked; records are read by the library's own reader (fmt/eh_frame.h) and the
 * CFA instructions walked by its decoder (fmt/cfa.h), so the CLI accepts exactly what the
 * library would.
 */
#ifndef JHR_EH_FRAME_H
#define JHR_EH_FRAME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Decode an .eh_frame run in perf's synthetic layout (text at text_addr, size code_size,
 * .eh_frame at eh_addr) and its .eh_frame_hdr, which follows it. 0, or JH_EFORMAT with a
 * message in err[errlen]. Prints the CIE/FDE rules to out if set, naming registers as
 * arch's (fmt/arch.h: the jitdump header's e_machine; NULL: "r?"). */
struct jh__arch;
int jhr_eh_frame_check(const uint8_t *eh, size_t eh_len, const uint8_t *hdr, size_t hdr_len,
                       uint64_t eh_addr, uint64_t text_addr, uint64_t code_size,
                       const struct jh__arch *arch, FILE *out, char *err, size_t errlen);

#endif
