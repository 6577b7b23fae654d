/*
 * control.h — the socket `jitherald attach PID` talks to (control.c; Windows: none yet,
 * control_win.c).
 */
#ifndef JH__CORE_CONTROL_H
#define JH__CORE_CONTROL_H

struct jh_ctx;

/* Listen for `jitherald attach` in this process, once per process (a fork child: again),
 * in ctx's directory, when ctx was opened in standby, unless JITHERALD_ATTACH=0.
 * ctx's lock held. Said once through ctx's diagnostics if it cannot. */
void jh__control_start(struct jh_ctx *ctx);

#endif
