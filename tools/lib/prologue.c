/* prologue.c — see prologue.h. */
#include "lib/prologue.h"

#include <string.h>

static const uint8_t fp_prologues[][4] = {
    { 0x55, 0x48, 0x89, 0xe5 },
    { 0x55, 0x48, 0x8b, 0xec },
};

int jhr_prologue_fp(const uint8_t *code, size_t size, uint32_t *push_end, uint32_t *set_end)
{
    size_t n = size < JHR_PROLOGUE_WINDOW ? size : JHR_PROLOGUE_WINDOW;
    for (size_t i = 0; i + 4 <= n; i++)
        for (size_t k = 0; k < sizeof fp_prologues / sizeof fp_prologues[0]; k++)
            if (!memcmp(code + i, fp_prologues[k], 4)) {
                *push_end = (uint32_t)i + 1;
                *set_end = (uint32_t)i + 4;
                return 1;
            }
    return 0;
}
