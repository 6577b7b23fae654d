# adapters/llvm/llvm.mk — included by the Makefile: the LLVM adapter (a JITEventListener
# and an ORC ObjectLinkingLayer plugin, adapters/llvm/README.md), built when
# llvm-config-14 is there, as libjitherald-llvm (shared and static) with its header
# <jitherald/llvm.h> and jitherald-llvm.pc; its unit test; the test JIT the integration
# scripts run (tests/programs/llvm_jit.cc) and the IR it runs, compiled from C and C++ by
# clang-14 at build time.
# Without llvm-config-14 nothing here is built, and the scripts skip saying what is missing.

# LLVM_CONFIG, CLANG14 and CLANGXX14 come from the Makefile.
JHL_SONAME := libjitherald-llvm.so.0
JHL_SO     := $(BUILD)/$(JHL_SONAME)
JHL_A      := $(BUILD)/libjitherald-llvm.a
JHL_SRC    := $(sort $(wildcard adapters/llvm/*.cc))
JHL_OBJ    := $(JHL_SRC:%.cc=$(BUILD)/%.o)
JHL_HDR    := adapters/llvm/include/jitherald/llvm.h adapters/llvm/herald.h include/jitherald.h

ifneq ($(LLVM_CONFIG),)
LLVM_INCDIR := $(shell $(LLVM_CONFIG) --includedir)
LLVM_LIBDIR := $(shell $(LLVM_CONFIG) --libdir)
LLVM_LINK   := -L$(LLVM_LIBDIR) $(shell $(LLVM_CONFIG) --libs) -Wl,-rpath,$(LLVM_LIBDIR)
# -isystem: LLVM's headers are not ours to keep free of -Wshadow warnings. Exceptions
# stay on for the adapter's callers; the adapter itself throws none.
JHL_CXXFLAGS := $(CXXFLAGS) -fPIC -fvisibility=hidden -fvisibility-inlines-hidden \
                -isystem $(LLVM_INCDIR) -D__STDC_CONSTANT_MACROS -D__STDC_LIMIT_MACROS \
                -Iadapters/llvm/include
LLVM_ADAPTER := $(JHL_A) $(JHL_SO) $(BUILD)/jitherald-llvm.pc
LLVM_TESTS   := $(BUILD)/tests/test_llvm_object $(BUILD)/bench/llvm/modules
endif

.PHONY: llvm check-exports-llvm install-llvm
llvm: $(LLVM_ADAPTER)
all: llvm
tests: $(LLVM_TESTS)

$(BUILD)/adapters/llvm/%.o: adapters/llvm/%.cc $(JHL_HDR)
	$(call msg,CXX,$<)
	@mkdir -p $(@D)
	$(Q)$(CXX) $(CPPFLAGS) $(JHL_CXXFLAGS) -c $< -o $@

$(JHL_A): $(JHL_OBJ)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(JHL_SO): $(JHL_OBJ) adapters/llvm/jitherald-llvm.map adapters/llvm/llvm.mk $(LIB_SO)
	$(call msg,LD,$@)
	$(Q)$(CXX) -shared -Wl,-soname,$(JHL_SONAME) -Wl,--version-script,adapters/llvm/jitherald-llvm.map \
	    -Wl,-z,defs $(SO_LDFLAGS) $(LDFLAGS) -o $@ $(JHL_OBJ) -L$(BUILD) -ljitherald \
	    -Wl,-rpath,'$$ORIGIN' $(LLVM_LINK) $(LIBS)
	$(Q)ln -sf $(JHL_SONAME) $(BUILD)/libjitherald-llvm.so

JHL_PC_SED = -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCDIR@|$(INCDIR)|' \
    -e 's|@LLVM_INCDIR@|$(LLVM_INCDIR)|' -e 's|@LLVM_LIBDIR@|$(LLVM_LIBDIR)|' \
    -e 's|@LLVM_LIBS@|$(shell $(LLVM_CONFIG) --libs 2>/dev/null)|' \
    -e 's|@VERSION@|$(shell sed -n 's/^\#define JH_VERSION_STRING "\(.*\)"/\1/p' include/jitherald.h)|'

$(BUILD)/jitherald-llvm.pc: adapters/llvm/jitherald-llvm.pc.in adapters/llvm/llvm.mk
	@mkdir -p $(@D)
	$(Q)sed $(JHL_PC_SED) $< > $@

# Only jitherald::* leaves the adapter's shared library.
check-exports-llvm: $(if $(LLVM_CONFIG),$(JHL_SO))
	@if [ -n "$(LLVM_CONFIG)" ]; then \
	    bad=$$(nm -D -C --defined-only $(JHL_SO) | awk '$$2 != "A"' | cut -d' ' -f3- | \
	           grep -v '^jitherald::' || true); \
	    if [ -n "$$bad" ]; then echo "unexpected exports from $(JHL_SO): $$bad"; exit 1; fi; \
	fi

install-llvm: $(LLVM_ADAPTER)
	@if [ -n "$(LLVM_CONFIG)" ]; then \
	    install -d $(DESTDIR)$(INCDIR)/jitherald $(DESTDIR)$(LIBDIR)/pkgconfig && \
	    install -m 644 adapters/llvm/include/jitherald/llvm.h $(DESTDIR)$(INCDIR)/jitherald/ && \
	    install -m 644 $(JHL_A) $(DESTDIR)$(LIBDIR)/ && \
	    install -m 755 $(JHL_SO) $(DESTDIR)$(LIBDIR)/ && \
	    ln -sf $(JHL_SONAME) $(DESTDIR)$(LIBDIR)/libjitherald-llvm.so && \
	    sed $(JHL_PC_SED) adapters/llvm/jitherald-llvm.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/jitherald-llvm.pc; \
	fi

# ---- tests ----------------------------------------------------------------------------
# The IR the test JIT runs: C and C++ compiled by clang-14 with -g at -O1 (frameless
# functions, so unwinding them needs the object's CFI). LLJIT compiles it at run time.
LLVM_IR_DIR := $(PROG_DIR)/llvm
LLVM_IR := $(patsubst tests/programs/llvm/%.c,$(LLVM_IR_DIR)/%.ll,$(wildcard tests/programs/llvm/*.c)) \
           $(patsubst tests/programs/llvm/%.cc,$(LLVM_IR_DIR)/%.ll,$(wildcard tests/programs/llvm/*.cc))

$(LLVM_IR_DIR)/%.ll: tests/programs/llvm/%.c $(wildcard tests/programs/llvm/*.h)
	$(call msg,IR,$<)
	@mkdir -p $(@D)
	$(Q)$(CLANG14) -g -O1 -S -emit-llvm -o $@ $<

$(LLVM_IR_DIR)/%.ll: tests/programs/llvm/%.cc
	$(call msg,IR,$<)
	@mkdir -p $(@D)
	$(Q)$(CLANGXX14) -g -O1 -S -emit-llvm -o $@ $<

# -rdynamic: the JIT-compiled code calls the host's callbacks by name. (libjitherald-llvm
# finds libjitherald beside itself: its RUNPATH is $ORIGIN.)
$(PROG_DIR)/llvm_jit: tests/programs/llvm_jit.cc $(JHL_SO) $(LIB_SO) $(JHL_HDR) $(LLVM_IR)
	$(call msg,CXX,$<)
	@mkdir -p $(@D)
	$(Q)$(CXX) $(CPPFLAGS) $(CXXFLAGS) -O1 -isystem $(LLVM_INCDIR) -Iadapters/llvm/include \
	    $(LDFLAGS) -rdynamic -o $@ $< -L$(BUILD) -ljitherald-llvm -ljitherald \
	    -Wl,-rpath,'$$ORIGIN/../..' $(LLVM_LINK) $(LIBS)

# The adapter's own unit test: object.cc and eh_frame.cc against objects clang-14 compiled.
$(BUILD)/tests/test_llvm_object: tests/unit/llvm/test_object.cc $(JHL_A) $(LIB_A) $(SUPPORT_A) \
                                  $(JHL_HDR) $(TEST_HDR)
	$(call msg,CXX,$<)
	@mkdir -p $(@D)
	$(Q)$(CXX) $(TEST_CPPFLAGS) -Itests/unit -Iadapters/llvm $(JHL_CXXFLAGS) $(LDFLAGS) -o $@ $< \
	    $(JHL_A) $(SUPPORT_A) $(LIB_A) $(LLVM_LINK) $(LIBS)

# ---- benchmark ------------------------------------------------------------------------
# bench/llvm.sh runs it (make bench): LLVM's own listeners beside the adapter; built with
# the tests too, for tests/integration/llvm_late_attach.sh.
ifneq ($(LLVM_CONFIG),)
bench: $(BUILD)/bench/llvm/modules $(PROG_DIR)/llvm_jit
endif
$(BUILD)/bench/llvm/modules: bench/llvm/modules.cc $(JHL_SO) $(JHL_HDR)
	$(call msg,CXX,$<)
	@mkdir -p $(@D)
	$(Q)$(CXX) $(CPPFLAGS) $(CXXFLAGS) -isystem $(LLVM_INCDIR) -Iadapters/llvm/include $(LDFLAGS) \
	    -o $@ $< -L$(BUILD) -ljitherald-llvm -ljitherald -Wl,-rpath,'$$ORIGIN/../..' $(LLVM_LINK) $(LIBS)
