/*
 * test_smaps_bti.c — the reader of /proc/self/smaps that tells elfmap whether code pages are
 * BTI-guarded (arm64 PROT_BTI: "bt" in VmFlags), on text as a kernel writes it: all
 * guarded, none, a mix, the flag among others, flags that only look like it, a range
 * outside every mapping, and text cut short. (Under qemu-user smaps is the host's, so the
 * arm64 tier cannot read a real "bt": tests/arm64/test_a64_bti.c covers JH_OPT_CODE_BTI.)
 */
#include <string.h>

#include "channels/pageswap.h"
#include "check.h"

static const char smaps[] =
    "7f0000000000-7f0000002000 r-xp 00000000 00:00 0 \n"
    "Size:                  8 kB\n"
    "KernelPageSize:        4 kB\n"
    "Anonymous:             8 kB\n"
    "VmFlags: rd ex mr mw me ac bt\n"
    "7f0000002000-7f0000003000 r-xp 00000000 00:00 0 \n"
    "AnonHugePages:         0 kB\n"
    "VmFlags: rd ex bt mr mw me ac\n"
    "7f0000003000-7f0000004000 r-xp 00000000 fd:01 917        /tmp/jitherald-0/jit-1-1.elf\n"
    "Size:                  4 kB\n"
    "VmFlags: rd ex mr mw me\n"
    "7f0000004000-7f0000005000 r-xp 00000000 00:00 0 \n"
    "VmFlags: rd ex mr mw me abt btx mt\n"
    "7f0000005000-7f0000006000 rw-p 00000000 00:00 0 \n"
    "VmFlags: bt";

int main(void)
{
    const uintptr_t b = 0x7f0000000000;
    CHECK_EQ(jh__smaps_guarded(smaps, b, b + 0x1000), 1);             /* bt last */
    CHECK_EQ(jh__smaps_guarded(smaps, b + 0x1000, b + 0x3000), 1);    /* two VMAs, bt inside */
    CHECK_EQ(jh__smaps_guarded(smaps, b + 0x3000, b + 0x4000), 0);    /* no bt */
    CHECK_EQ(jh__smaps_guarded(smaps, b + 0x2000, b + 0x4000), -1);   /* a mix */
    CHECK_EQ(jh__smaps_guarded(smaps, b + 0x4000, b + 0x5000), 0);    /* abt, btx: not bt */
    CHECK_EQ(jh__smaps_guarded(smaps, b + 0x5000, b + 0x6000), 1);    /* no newline at the end */
    CHECK_EQ(jh__smaps_guarded(smaps, b + 0x9000, b + 0xa000), -1);   /* no mapping there */
    CHECK_EQ(jh__smaps_guarded("", b, b + 0x1000), -1);
    /* cut inside a VMA's lines: what was read of it decides nothing */
    char cut[64];
    memcpy(cut, smaps, 50);
    cut[50] = 0;
    CHECK_EQ(jh__smaps_guarded(cut, b, b + 0x1000), -1);
    CHECK_EQ(jh__smaps_guarded("VmFlags: bt\n", 0, ~(uintptr_t)0), -1);  /* no VMA line */
    return check_done();
}
