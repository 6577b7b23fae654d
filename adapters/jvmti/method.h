/*
 * method.h — a HotSpot compiled method, as JVMTI reports it, turned into a struct jh_code:
 * its name (`pkg.Class.method`), its line table from the compile_info's inline records,
 * and its frame where its prologue proves one.
 */
#ifndef JHJ_METHOD_H
#define JHJ_METHOD_H

#include <jvmti.h>
#include <jvmticmlr.h>
#include <stdbool.h>

#include "jitherald.h"

/* What a method's description holds, owned by it: jhj_method_free releases it. */
struct jhj_method {
    struct jh_code code;
    char *name;
    char **files;
    uint32_t nfiles;
    struct jh_line *lines;
};

/* Describe the code [code_addr, code_addr + code_size) compiled for method. compile_info
 * is CompiledMethodLoad's (NULL or not a chain of inline records: no lines). frame_pointer:
 * describe the frame as JH_UNWIND_FRAME_POINTER where the code's prologue shows
 * `push rbp; mov rbp, rsp` (HotSpot's frames under -XX:+PreserveFramePointer, and native
 * wrappers always). 0, or a negative errno (-ENOMEM; a JVMTI failure naming the method:
 * -EINVAL). */
int jhj_method_describe(jvmtiEnv *jvmti, jmethodID method, const void *code_addr,
                        jint code_size, const void *compile_info, bool frame_pointer,
                        struct jhj_method *out);
void jhj_method_free(struct jhj_method *m);


#endif
