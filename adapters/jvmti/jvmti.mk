# adapters/jvmti/jvmti.mk — included by the Makefile: the JVMTI agent for HotSpot
# (adapters/jvmti/README.md, docs/jvmti.md), built as $(BUILD)/libjitherald-jvmti.so when a
# JDK's jvmti.h is there (Debian: openjdk-17-jdk-headless); the Java program and its JNI
# library that the integration tests (tests/integration/jvmti_*.sh) and bench/jvmti.sh run,
# when javac is there too. Without a JDK nothing here is built and the tests skip, saying so.

# JAVA_HOME first, then Debian's default and its OpenJDK 17.
JVMTI_H := $(firstword $(wildcard $(if $(JAVA_HOME),$(JAVA_HOME)/include/jvmti.h) \
             /usr/lib/jvm/default-java/include/jvmti.h \
             /usr/lib/jvm/java-17-openjdk-*/include/jvmti.h /usr/lib/jvm/*/include/jvmti.h))
JDK_HOME := $(patsubst %/include/jvmti.h,%,$(JVMTI_H))
JAVAC    := $(if $(JDK_HOME),$(wildcard $(JDK_HOME)/bin/javac))

JHJ_SO  := $(BUILD)/libjitherald-jvmti.so
JHJ_SRC := $(sort $(wildcard adapters/jvmti/*.c))
# The prologue reader (tools/lib/prologue.c) is the one list of frame-pointer prologues;
# it takes the architecture description (src/fmt/arch.c), which the library keeps hidden.
JHJ_OBJ := $(JHJ_SRC:%.c=$(BUILD)/pic/%.o) $(BUILD)/pic/tools/lib/prologue.o \
           $(BUILD)/pic/src/fmt/arch.o
JHJ_CPPFLAGS := -I$(JDK_HOME)/include -I$(JDK_HOME)/include/linux

JAVA_DIR := $(PROG_DIR)/java

ifneq ($(JVMTI_H),)
JVMTI_ADAPTER := $(JHJ_SO)
ifneq ($(JAVAC),)
JVMTI_PROGRAMS := $(JAVA_DIR)/demo/Hot.class $(JAVA_DIR)/libhot_native.so
else
JVMTI_PROGRAMS := $(JAVA_DIR)/Hot.missing
endif
else
JVMTI_PROGRAMS := $(JAVA_DIR)/Hot.missing
endif

.PHONY: jvmti check-exports-jvmti
jvmti: $(JVMTI_ADAPTER)
all: jvmti
programs: $(JVMTI_PROGRAMS)
bench: $(JVMTI_ADAPTER) $(JVMTI_PROGRAMS)

$(BUILD)/pic/adapters/jvmti/%.o: adapters/jvmti/%.c $(wildcard adapters/jvmti/*.h) tools/lib/prologue.h include/jitherald.h
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Itools $(JHJ_CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@

# Only Agent_OnLoad and Agent_OnAttach leave it (JNIEXPORT); it finds libjitherald beside
# itself.
$(JHJ_SO): $(JHJ_OBJ) $(LIB_SO) adapters/jvmti/jvmti.mk
	$(call msg,LD,$@)
	$(Q)$(CC) -shared -Wl,-z,defs $(SO_LDFLAGS) $(LDFLAGS) -o $@ $(JHJ_OBJ) \
	    -L$(BUILD) -ljitherald -Wl,-rpath,'$$ORIGIN' $(LIBS)

check-exports-jvmti: $(JVMTI_ADAPTER)
	@if [ -n "$(JVMTI_ADAPTER)" ]; then \
	    bad=$$(nm -D --defined-only $(JHJ_SO) | awk '$$2 != "A" {print $$3}' | \
	           grep -v -e '^Agent_OnLoad$$' -e '^Agent_OnAttach$$' || true); \
	    if [ -n "$$bad" ]; then echo "unexpected exports from $(JHJ_SO): $$bad"; exit 1; fi; \
	fi
test: check-exports-jvmti

# The test program: javac -g (lines and source file), and the JNI library whose function
# the gdb tests stop in.
$(JAVA_DIR)/demo/Hot.class: $(wildcard tests/programs/java/demo/*.java)
	$(call msg,JAVAC,$<)
	@mkdir -p $(JAVA_DIR)
	$(Q)$(JAVAC) -g -d $(JAVA_DIR) $^

$(JAVA_DIR)/libhot_native.so: tests/programs/java/hot_native.c
	$(call msg,CC,$<)
	@mkdir -p $(@D)
	$(Q)$(CC) $(JHJ_CPPFLAGS) $(CFLAGS) -O0 -fPIC -shared -o $@ $<

$(JAVA_DIR)/Hot.missing:
	@mkdir -p $(@D)
	@echo 'no JDK: jvmti.h or javac missing (Debian package openjdk-17-jdk-headless)' > $@

# `make install` puts the agent beside libjitherald (its RUNPATH, $ORIGIN, finds it there).
.PHONY: install-jvmti
install: install-jvmti
install-jvmti: $(JVMTI_ADAPTER)
	@if [ -n "$(JVMTI_ADAPTER)" ]; then \
	    install -d $(DESTDIR)$(LIBDIR) && install -m 755 $(JHJ_SO) $(DESTDIR)$(LIBDIR)/; fi
