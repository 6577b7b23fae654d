/*
 * agent.c — a JVMTI agent that announces HotSpot's compiled methods and generated stubs to
 * jitherald, as HotSpot reports them: at start, or loaded into a running JVM.
 *
 *     $ java -XX:+PreserveFramePointer \
 *            -agentpath:build/libjitherald-jvmti.so=channels=gdb,perfmap,jitdump Hot
 *     $ jcmd PID JVMTI.agent_load $PWD/build/libjitherald-jvmti.so channels=gdb,perfmap
 *     $ gdb -p PID
 *     (gdb) bt
 *     #0  jh_java_hit () at tests/programs/java/hot_native.c:12
 *     #1  Java_demo_Hot_stop (...) at tests/programs/java/hot_native.c:18
 *     #2  0x00007f3a8d1c5e1b in demo.Hot.stop ()
 *     #3  0x00007f3a8d1cb2f4 in demo.Hot.recurse () at demo/Hot.java:17
 *     #4  0x00007f3a8d1cb2c0 in demo.Hot.recurse () at demo/Hot.java:19
 *
 * Events: CompiledMethodLoad (a method compiled by C1 or C2, or a native wrapper, with its
 * pc -> inlined (method, bci) stacks: method.c turns them into lines), CompiledMethodUnload
 * (removed), DynamicCodeGenerated (the interpreter, adapters, runtime stubs: named, no
 * lines, no frame described). GenerateEvents replays both kinds for the code that exists
 * when the agent starts: at VMInit (stubs generated before it), or at once when loaded late.
 *
 * Threads: HotSpot calls back on many threads (the ServiceThread posts most events, the
 * compiler threads some, the loading thread the replay). One JVMTI raw monitor makes each
 * announcement's look-up and add one step, so a replay and a live event of the same code
 * announce it once. The library is thread-safe by itself; the monitor is for that pairing.
 *
 * Options: -agentpath:LIB=channels=LIST,dir=DIR,unwind=auto|none (LIST as $JITHERALD:
 * perfmap,jitdump,gdb,unwind,elfmap,auditlog,all,none; default perfmap,jitdump,gdb). As
 * for every jitherald client, $JITHERALD and $JITHERALD_DIR win when set (jitherald.h).
 */
#include <errno.h>
#include <jvmti.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "jitherald.h"
#include "method.h"

#define DEFAULT_CHANNELS (JH_PERFMAP | JH_JITDUMP | JH_GDB)

static struct {
    jvmtiEnv *jvmti;
    jh_ctx *jh;
    jrawMonitorID lock;
    bool frame_pointer;         /* unwind=auto on x86-64 (os.arch amd64) */
    bool closed;                /* VMDeath: announce nothing more */
    _Atomic unsigned said;      /* complaints said once: bit per cause */
} agent;

/* Set while this thread runs GenerateEvents: HotSpot posts the replay on the caller. */
static _Thread_local bool replaying;

static void say(const char *fmt, const char *arg, int err)
{
    fprintf(stderr, "jitherald-jvmti: ");
    fprintf(stderr, fmt, arg);
    if (err)
        fprintf(stderr, ": %s", jh_strerror(err));
    fputc('\n', stderr);
}

static void say_once(unsigned bit, const char *fmt, const char *arg, int err)
{
    if (!(atomic_fetch_or(&agent.said, 1u << bit) & (1u << bit)))
        say(fmt, arg, err);
}

/* The public channel names, as jh_options.channels documents them for $JITHERALD. */
static const struct { const char *name; unsigned bit; } channel_names[] = {
    { "perfmap", JH_PERFMAP }, { "jitdump", JH_JITDUMP }, { "gdb", JH_GDB },
    { "unwind", JH_UNWIND }, { "elfmap", JH_ELFMAP }, { "auditlog", JH_AUDITLOG },
    { "all", JH_ALL }, { "none", 0 },
};

struct opts {
    unsigned channels;
    char dir[4096];
    bool unwind;
};

/* Is word "KEY=..." or "KEY:..."? Then the value. */
static const char *key(const char *word, const char *k)
{
    size_t n = strlen(k);
    return !strncmp(word, k, n) && (word[n] == '=' || word[n] == ':') ? word + n + 1 : NULL;
}

/* "channels=gdb,perfmap,dir=/x,unwind=none": a word without '=' continues the channel list
 * (the JVM hands the agent one string, and channel lists have commas). ':' may stand for
 * '=': jcmd's JVMTI.agent_load passes an option only up to its first '=' unless it is
 * quoted ('"channels=gdb"'), so `channels:gdb,perfmap` needs no quotes. -EINVAL after
 * saying what is wrong. */
static int parse_options(const char *s, struct opts *o)
{
    *o = (struct opts){ .channels = DEFAULT_CHANNELS, .unwind = true };
    bool in_channels = false;
    while (s && *s) {
        size_t n = strcspn(s, ",");
        char word[4096];
        if (n >= sizeof word) {
            say("option too long: %.40s...", s, 0);
            return -EINVAL;
        }
        memcpy(word, s, n);
        word[n] = 0;
        s += n + (s[n] == ',');
        const char *val;
        if ((val = key(word, "channels"))) {
            in_channels = true;
            o->channels = 0;
        } else if ((val = key(word, "dir"))) {
            snprintf(o->dir, sizeof o->dir, "%s", val);
            in_channels = false;
            continue;
        } else if ((val = key(word, "unwind"))) {
            if (strcmp(val, "auto") && strcmp(val, "none")) {
                say("unwind=%s: auto or none", val, 0);
                return -EINVAL;
            }
            o->unwind = !strcmp(val, "auto");
            in_channels = false;
            continue;
        } else if (strpbrk(word, "=:")) {
            say("unknown option '%s' (known: channels=LIST, dir=DIR, unwind=auto|none)", word, 0);
            return -EINVAL;
        } else {
            val = word;
        }
        if (!in_channels) {
            if (*val) {
                say("'%s' follows no channels= (channels=perfmap,gdb,...)", val, 0);
                return -EINVAL;
            }
            continue;
        }
        if (!*val)
            continue;
        size_t i, k = sizeof channel_names / sizeof *channel_names;
        for (i = 0; i < k && strcmp(val, channel_names[i].name); i++)
            ;
        if (i == k) {
            say("unknown channel '%s' (known: perfmap,jitdump,gdb,unwind,elfmap,auditlog,all,"
                "none)", val, 0);
            return -EINVAL;
        }
        o->channels = channel_names[i].bit ? o->channels | channel_names[i].bit : 0;
    }
    return 0;
}

/* Announce code: once, whether it comes live, replayed, or both. Live news of an address
 * wins over what was there (the old code's unload may still be on its way); a replay never
 * replaces what a live event announced since. */
static void announce(const struct jh_code *c)
{
    (*agent.jvmti)->RawMonitorEnter(agent.jvmti, agent.lock);
    if (agent.closed)
        goto out;
    const void *start;
    size_t size;
    char name[512];
    if (!jh_lookup(agent.jh, c->start, NULL, &start, &size, name, sizeof name) &&
        start == c->start && size == c->size && !strncmp(name, c->name, sizeof name - 1))
        goto out;
    int err = jh_code_add(agent.jh, c, NULL);
    if (err == JH_EOVERLAP && !replaying) {
        jh_code_remove_range(agent.jh, c->start, c->size);
        err = jh_code_add(agent.jh, c, NULL);
    }
    if (err < 0 && err != JH_EOVERLAP)
        say_once(0, "cannot announce %s (JITHERALD_DEBUG=1 says why; this is said once)",
                 c->name, err);
out:
    (*agent.jvmti)->RawMonitorExit(agent.jvmti, agent.lock);
}

static void JNICALL compiled_method_load(jvmtiEnv *jvmti, jmethodID method, jint code_size,
                                         const void *code_addr, jint map_length,
                                         const jvmtiAddrLocationMap *map,
                                         const void *compile_info)
{
    struct jhj_method m;
    int err = jhj_method_describe(jvmti, method, code_addr, code_size, compile_info,
                                  agent.frame_pointer, &m);
    if (err < 0) {
        say_once(1, "a compiled method%s could not be described", "", err);
        return;
    }
    announce(&m.code);
    jhj_method_free(&m);
}

static void JNICALL compiled_method_unload(jvmtiEnv *jvmti, jmethodID method,
                                           const void *code_addr)
{
    (*jvmti)->RawMonitorEnter(jvmti, agent.lock);
    uint64_t id;
    const void *start;
    if (!agent.closed && !jh_lookup(agent.jh, code_addr, &id, &start, NULL, NULL, 0) &&
        start == code_addr)
        jh_code_remove(agent.jh, id);
    (*jvmti)->RawMonitorExit(jvmti, agent.lock);
}

static void JNICALL dynamic_code_generated(jvmtiEnv *jvmti, const char *name,
                                           const void *address, jint length)
{
    if (length <= 0 || !name || !*name)
        return;
    struct jh_code c = { .sz = sizeof c, .name = name, .start = address,
                         .size = (size_t)length };
    announce(&c);
}

static void replay(jvmtiEnv *jvmti)
{
    replaying = true;
    jvmtiError e1 = (*jvmti)->GenerateEvents(jvmti, JVMTI_EVENT_DYNAMIC_CODE_GENERATED);
    jvmtiError e2 = (*jvmti)->GenerateEvents(jvmti, JVMTI_EVENT_COMPILED_METHOD_LOAD);
    replaying = false;
    if (e1 != JVMTI_ERROR_NONE || e2 != JVMTI_ERROR_NONE)
        say("GenerateEvents failed%s: code compiled before the agent started is not named",
            "", 0);
    jh_flush(agent.jh);
}

static void JNICALL vm_init(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread)
{
    replay(jvmti);
}

static void JNICALL vm_death(jvmtiEnv *jvmti, JNIEnv *jni)
{
    (*jvmti)->RawMonitorEnter(jvmti, agent.lock);
    agent.closed = true;
    jh_close(agent.jh);
    agent.jh = NULL;
    (*jvmti)->RawMonitorExit(jvmti, agent.lock);
}

/* The prologue reader knows x86-64's instructions: the JVM says which it runs (os.arch,
 * set in the OnLoad phase by some JVMs only), else the kernel does. */
static bool on_x86_64(jvmtiEnv *jvmti)
{
    char *arch = NULL;
    bool yes;
    if ((*jvmti)->GetSystemProperty(jvmti, "os.arch", &arch) == JVMTI_ERROR_NONE && arch) {
        yes = !strcmp(arch, "amd64") || !strcmp(arch, "x86_64");
        (*jvmti)->Deallocate(jvmti, (unsigned char *)arch);
    } else {
        struct utsname u;
        yes = !uname(&u) && !strcmp(u.machine, "x86_64");
    }
    return yes;
}

/* Everything but the replay, shared by both ways in. */
static jint start(JavaVM *vm, const char *options, bool live)
{
    if (agent.jvmti) {
        say("already loaded in this JVM%s: options ignored", "", 0);
        return JNI_OK;
    }
    struct opts o;
    if (parse_options(options, &o) < 0)
        return JNI_ERR;
    jvmtiEnv *jvmti;
    if ((*vm)->GetEnv(vm, (void **)&jvmti, JVMTI_VERSION_1_2) != JNI_OK) {
        say("this JVM offers no JVMTI 1.2%s", "", 0);
        return JNI_ERR;
    }
    jvmtiCapabilities caps = { .can_generate_compiled_method_load_events = 1,
                               .can_get_line_numbers = 1, .can_get_source_file_name = 1 };
    if ((*jvmti)->AddCapabilities(jvmti, &caps) != JVMTI_ERROR_NONE) {
        say("this JVM cannot report compiled methods with lines%s (JVMTI capabilities)", "", 0);
        return JNI_ERR;
    }
    struct jh_options jo = { .sz = sizeof jo, .channels = o.channels, .engine = "hotspot",
                             .dir = o.dir[0] ? o.dir : NULL };
    int err = jh_open(&agent.jh, &jo);
    if (err < 0) {
        say("jh_open failed%s", "", err);
        return JNI_ERR;
    }
    agent.frame_pointer = o.unwind && on_x86_64(jvmti);
    if ((*jvmti)->CreateRawMonitor(jvmti, "jitherald", &agent.lock) != JVMTI_ERROR_NONE) {
        jh_close(agent.jh);
        return JNI_ERR;
    }
    agent.jvmti = jvmti;
    jvmtiEventCallbacks cb = { .VMInit = vm_init, .VMDeath = vm_death,
                               .CompiledMethodLoad = compiled_method_load,
                               .CompiledMethodUnload = compiled_method_unload,
                               .DynamicCodeGenerated = dynamic_code_generated };
    (*jvmti)->SetEventCallbacks(jvmti, &cb, sizeof cb);
    static const jvmtiEvent events[] = { JVMTI_EVENT_VM_DEATH, JVMTI_EVENT_COMPILED_METHOD_LOAD,
                                         JVMTI_EVENT_COMPILED_METHOD_UNLOAD,
                                         JVMTI_EVENT_DYNAMIC_CODE_GENERATED, JVMTI_EVENT_VM_INIT };
    /* Loaded late, there is no VMInit to wait for (the last one): replay at once. */
    for (size_t i = 0; i < sizeof events / sizeof *events - live; i++)
        if ((*jvmti)->SetEventNotificationMode(jvmti, JVMTI_ENABLE, events[i], NULL) !=
            JVMTI_ERROR_NONE) {
            say("cannot enable a JVMTI event%s", "", 0);
            return JNI_ERR;
        }
    if (live)
        replay(jvmti);
    return JNI_OK;
}

JNIEXPORT jint JNICALL Agent_OnLoad(JavaVM *vm, char *options, void *reserved)
{
    return start(vm, options, false);
}

JNIEXPORT jint JNICALL Agent_OnAttach(JavaVM *vm, char *options, void *reserved)
{
    return start(vm, options, true);
}
