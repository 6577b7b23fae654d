/* hot_native.c — the native method of tests/programs/java/demo/Hot.java: the gdb tests
 * break in jh_java_hit, under compiled Java frames (demo.Hot.stop's native wrapper, then
 * demo.Hot.recurse). */
#include <jni.h>

__attribute__((noinline)) void jh_java_hit(int depth)
{
    __asm__ volatile("" ::: "memory");
}

JNIEXPORT void JNICALL Java_demo_Hot_stop(JNIEnv *env, jclass cls, jint armed)
{
    if (armed)
        jh_java_hit(armed);
}
