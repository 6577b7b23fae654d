/* control_win.c — `jitherald attach` has no transport on Windows yet (a named pipe would
 * be its equivalent): jh_channels_set works in the process, nothing listens outside. */
#include "core/control.h"

void jh__control_start(struct jh_ctx *ctx)
{
    (void)ctx;
}
