/*
 * chanlist.h — the one list of channels. Everything that names a channel is generated
 * from JH__CHANNELS: the core's slots and their order (channels/channel.h), the table of
 * each channel's operations (core/context.c), the stubs of the channels a platform does
 * not build (channels/absent_win.c), and the one parser of channel names, which $JITHERALD,
 * `jitherald run -c` and the preload of `jitherald run` share (chanlist.c). The public
 * bits (JH_PERFMAP...) stay spelled out in jitherald.h, the manual; chanlist.c checks at
 * compile time that this list and those bits agree.
 *
 * X(UPPER, lower, windows, run):
 *   UPPER, lower  JH_UPPER is the public bit, jh__lower_ops its operations, "lower" its name
 *   windows       1: built for Windows (0: a stub there, absent_win.c)
 *   run           1: `jitherald run` can add it to a VM (0: the VM writes that file itself,
 *                 the preload hears it)
 * In the order the core calls them on add (the reverse on remove): the audit log first
 * (it records what the others then do), the unwinder before any tool can stop in the code,
 * elfmap last (it swaps the pages the others described).
 */
#ifndef JH_BASE_CHANLIST_H
#define JH_BASE_CHANLIST_H

#include <stdbool.h>
#include <stddef.h>

#define JH__CHANNELS(X)                  \
    X(AUDITLOG, auditlog, 1, 1)          \
    X(UNWIND,   unwind,   1, 1)          \
    X(PERFMAP,  perfmap,  0, 0)          \
    X(JITDUMP,  jitdump,  0, 0)          \
    X(GDB,      gdb,      0, 1)          \
    X(ELFMAP,   elfmap,   0, 1)

#define JH__CH_SLOT(U, l, w, r) JH__CH_##U,
enum { JH__CHANNELS(JH__CH_SLOT) JH__NCHAN };
#undef JH__CH_SLOT

/* Every channel's bit; those `jitherald run` can add. */
unsigned jh__channels_all(void);
unsigned jh__channels_run(void);

/* The bit of the channel named s[0..n), or 0. */
unsigned jh__channel_bit(const char *s, size_t n);

/* The name of the channel whose bit is bit, or NULL. */
const char *jh__channel_name(unsigned bit);

/* The names of the channels in bits, separated by sep, in buf (the
 * names that fit whole in n bytes). */
void jh__channel_names(unsigned bits, const char *sep, char *buf, size_t n);

/*
 * Channel names separated by ',', ':' or ' ': "all" means every channel in allowed, "none"
 * the channels named so far are dropped. A name that is not a channel in allowed (not a
 * channel at all, or one not allowed here) goes to unknown, when given, with its length,
 * and is skipped: the caller words the message (only it knows why a name is refused).
 * Returns the bits named.
 */
unsigned jh__channels_parse(const char *s, unsigned allowed,
                            void (*unknown)(void *arg, const char *name, size_t n), void *arg);

#endif
