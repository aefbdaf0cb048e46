# Makefile — builds the course, one stage per lesson.
#
# This file is the one place that says which files belong to which lesson.
# Stage N (`make lessonN`) is compiled from the files of lessons 1..N only, into
# build/lessonN/; a check after each build proves no stage includes a header of
# a later lesson. `make help` lists the targets.

ifneq ($(shell uname -s)-$(shell uname -m),Linux-x86_64)
$(error This course runs only on x86-64 Linux (this is $(shell uname -s) on $(shell uname -m)): its context switch is x86-64 assembly)
endif

# ---- What each lesson adds ------------------------------------------------------------------
LESSONS := 1 2 3 4 5 6

LIB_1   := asm/switch_context.S asm/context_trampoline.S src/context.cpp src/stack.cpp src/fatal.cpp
HDRS_1  := include/fib/context_layout.h include/fib/context.hpp include/fib/stack.hpp \
           include/fib/sanitizer.hpp include/fib/fatal.hpp
DEMO_1  := lessons/01-context-switch/main.cpp
TESTS_1 := tests/L01_switch_test.cpp tests/L01_fp_control_test.cpp tests/L01_probes.S \
           tests/L01_stack_test.cpp

LIB_2   := src/fiber_record.cpp src/stack_pool.cpp src/overflow_guard.cpp src/fiber_manager.cpp \
           src/fiber_lifecycle.cpp src/fiber_join.cpp src/fiber.cpp
HDRS_2  := include/fib/intrusive_list.hpp include/fib/exception_state.hpp \
           include/fib/fiber_record.hpp include/fib/stack_pool.hpp include/fib/overflow_guard.hpp \
           include/fib/fiber_manager.hpp include/fib/fiber.hpp
DEMO_2  := lessons/02-fibers/main.cpp
TESTS_2 := tests/L02_manager_test.cpp tests/L02_exceptions_test.cpp tests/L02_misuse_test.cpp \
           tests/L02_sanitizer_test.cpp

# Lesson 3 rebuilds join() on a CondVar: from stage 3 on, its file replaces lesson 2's.
LIB_3   := src/condvar.cpp src/fiber_join_condvar.cpp
DROP_3  := src/fiber_join.cpp
HDRS_3  := include/fib/condvar.hpp include/fib/channel.hpp
DEMO_3  := lessons/03-condvar/main.cpp
TESTS_3 := tests/L03_condvar_test.cpp tests/L03_channel_test.cpp tests/L03_misuse_test.cpp

LIB_4   := src/poll_poller.cpp src/pollers.cpp src/waiter.cpp src/io.cpp src/tcp.cpp
HDRS_4  := include/fib/poller.hpp include/fib/waiter.hpp include/fib/io.hpp include/fib/tcp.hpp include/fib/unique_fd.hpp \
           lessons/04-echo-server/echo_server.hpp lessons/04-echo-server/server_program.hpp \
           lessons/04-echo-server/load_connections.hpp lessons/04-echo-server/message_pool.hpp
# The echo server itself, shared by the demo, the echo_server program and the tests.
ECHO_4  := lessons/04-echo-server/echo_server.cpp
DEMO_4  := lessons/04-echo-server/main.cpp $(ECHO_4)
TESTS_4 := tests/L04_waiter_test.cpp tests/L04_waiter_misuse_test.cpp tests/L04_io_test.cpp tests/L04_close_test.cpp \
           tests/L04_echo_test.cpp tests/L04_echo_hostile_test.cpp $(ECHO_4)
# Programs, built with the stage of the lesson that lists them (build/lesson4/echo_server)
# and copied to build/<name> from the latest lesson that has them. build/echo_server is the
# course's main demo; echo_threads (thread per client) and echo_load (the load client) are
# make bench-echo's.
PROGRAMS_4              := echo_server echo_threads echo_load
SOURCES_4_echo_server   := lessons/04-echo-server/echo_main.cpp \
                           lessons/04-echo-server/server_program.cpp $(ECHO_4)
SOURCES_4_echo_threads  := lessons/04-echo-server/echo_threads.cpp \
                           lessons/04-echo-server/server_program.cpp
SOURCES_4_echo_load     := lessons/04-echo-server/echo_load.cpp \
                           lessons/04-echo-server/load_connections.cpp \
                           lessons/04-echo-server/message_pool.cpp

# Lesson 5: the Waiter's epoll backend (its list of Pollers replaces lesson 4's), the Event,
# timers and wait_any in the library; the echo server's lesson-5 parts, the chat server and
# the hand-written epoll loop in lessons/05-epoll-timers-events/.
LIB_5   := src/epoll_poller.cpp src/pollers_epoll.cpp src/event.cpp src/timers.cpp src/wait_any.cpp
DROP_5  := src/pollers.cpp
L5      := lessons/05-epoll-timers-events
HDRS_5  := include/fib/epoll_poller.hpp include/fib/event.hpp include/fib/timer.hpp \
           include/fib/wait_any.hpp $(L5)/idle_echo_server.hpp $(L5)/udp_echo.hpp \
           $(L5)/stop_signals.hpp $(L5)/chat_lines.hpp $(L5)/chat_room.hpp $(L5)/chat_server.hpp \
           $(L5)/demo_parts.hpp
# The UDP echo server and the chat room and server, shared by programs, demo and tests.
UDP_5   := $(L5)/udp_echo.cpp
CHAT_5  := $(L5)/chat_room.cpp $(L5)/chat_server.cpp
DEMO_5  := $(L5)/main.cpp $(L5)/demo_timers.cpp $(L5)/demo_chat.cpp $(ECHO_4) $(CHAT_5)
TESTS_5 := tests/L05_epoll_test.cpp tests/L05_event_test.cpp tests/L05_timer_test.cpp \
           tests/L05_timer_heap_test.cpp tests/L05_timer_misuse_test.cpp tests/L05_wait_any_test.cpp \
           tests/L05_echo_server_test.cpp tests/L05_chat_test.cpp tests/L05_chat_slow_test.cpp \
           $(UDP_5) $(CHAT_5)
# make test-lesson5 runs these suites a second time with the poll backend (see TWICE_5).
TWICE_5 := L04_*:L05_*
# echo_server is rebuilt with lesson 5's main: signalfd, --idle-timeout, --udp. chat_server
# is the chat room's program; echo_epoll, the echo service as one hand-written epoll loop,
# is make bench-echo's fair opponent.
PROGRAMS_5            := echo_server chat_server echo_epoll
SOURCES_5_echo_server := $(L5)/echo_main.cpp $(L5)/stop_signals.cpp \
                         lessons/04-echo-server/server_program.cpp $(ECHO_4) $(UDP_5)
SOURCES_5_chat_server := $(L5)/chat_main.cpp $(L5)/stop_signals.cpp \
                         lessons/04-echo-server/server_program.cpp $(CHAT_5)
SOURCES_5_echo_epoll  := $(L5)/echo_epoll.cpp lessons/04-echo-server/server_program.cpp

# Lesson 6: fiber-local storage. Per-fiber TLS blocks (%fs) from the PT_TLS segments, and
# fib::fiber_local through %gs; FiberTls installs both on a manager.
LIB_6   := asm/switch_context_tls.S src/tls_switch.cpp src/tls_segments.cpp src/tls_block.cpp \
           src/fiber_local.cpp src/fiber_tls.cpp
L6      := lessons/06-fiber-local-storage
HDRS_6  := include/fib/tls_switch.hpp include/fib/glibc_tls.hpp include/fib/tls_segments.hpp \
           include/fib/tls_block.hpp include/fib/fiber_local.hpp include/fib/fiber_tls.hpp
DEMO_6  := $(L6)/main.cpp
TESTS_6 := tests/L06_tcb_test.cpp tests/L06_tls_test.cpp tests/L06_exceptions_test.cpp tests/L06_libc_test.cpp \
           tests/L06_stack_protector.cpp tests/L06_fiber_local_test.cpp tests/L06_memory_test.cpp \
           tests/L06_misuse_test.cpp tests/L06_gs_base_test.cpp
# A shared library with a thread_local of its own, reached through the DTV; the stage-6
# tests link it (not when STATIC=1, where there are no shared libraries).
PROBE_6 := tests/L06_probe_lib.cpp
# make test-lesson6 runs these suites a second time with the arch_prctl fallback.
TWICE_6 := L06_*
TWICE_ENV_6 := FIB_TLS_SWITCH=arch_prctl

# make bench: one program, built on the latest stage; each lesson adds its rows.
SOURCES_bench := tests/bench/bench_main.cpp tests/bench/switch_bench.cpp \
                 tests/bench/manager_bench.cpp tests/bench/memory_bench.cpp \
                 tests/bench/tls_bench.cpp $(ECHO_4)

LAST_LESSON := $(lastword $(LESSONS))
PROGRAMS    := $(sort $(foreach n,$(LESSONS),$(PROGRAMS_$(n))))
# The latest lesson that lists program $(1).
latest_with = $(lastword $(foreach n,$(LESSONS),$(if $(filter $(1),$(PROGRAMS_$(n))),$(n))))

# ---- Tools and flags ------------------------------------------------------------------------
CXX      := g++
CXXFLAGS := -std=c++20 -O2 -g -Wall -Wextra -Werror -fstack-clash-protection
CPPFLAGS := -Iinclude -MMD -MP
LDFLAGS  :=
LDLIBS   := -lpthread

# SAN=1: AddressSanitizer + UndefinedBehaviorSanitizer, in a build tree of its own.
BUILD_DIR ?= build
ifeq ($(SAN),1)
OUT      := $(BUILD_DIR)/san
CXXFLAGS += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS  += -fsanitize=address,undefined
# Fake stacks exercise the fiber-switch annotations harder (off by default in GCC 12).
TEST_ENV := ASAN_OPTIONS=detect_stack_use_after_return=1
else
OUT      := $(BUILD_DIR)
endif

# STATIC=1: everything linked statically, in a build tree of its own (lesson 6 shows that
# libc's TLS then lives in the executable's own segment). -u keeps glibc's per-thread
# clean-up, which lesson 6 calls weakly, in the link.
ifeq ($(STATIC),1)
ifeq ($(SAN),1)
$(error SAN=1 and STATIC=1 do not go together: the sanitizers need a dynamic link)
endif
OUT      := $(BUILD_DIR)/static
CPPFLAGS += -DFIB_STATIC=1
LDFLAGS  += -static -Wl,-u,__libc_thread_freeres
endif

# GoogleTest, from Debian's libgtest-dev; only the tests need it.
GTEST_HEADER := $(firstword $(wildcard /usr/include/gtest/gtest.h /usr/local/include/gtest/gtest.h))
GTEST_LIBS   := -lgtest

# ---- Helpers: "lessons 1..N" ----------------------------------------------------------------
upto = $(wordlist 1,$(1),$(LESSONS))
collect = $(foreach n,$(call upto,$(1)),$($(2)_$(n)))
# The library of stage N: every LIB_ file of lessons 1..N, minus those a lesson DROPs.
libsrcs = $(filter-out $(call collect,$(1),DROP),$(call collect,$(1),LIB))
objects = $(addprefix $(OUT)/lesson$(1)/obj/,$(addsuffix .o,$(basename $(2))))

.PHONY: all programs help run test bench bench-echo check-stack check-backtrace check-echo-server gtest-check clean \
        print-lessons
all: $(addprefix lesson,$(LESSONS)) programs

# The programs, each from the latest lesson that has it (build/echo_server, ...).
programs: $(addprefix $(OUT)/,$(PROGRAMS))

# ---- One stage: library, demo, programs, tests, layer check ---------------------------------
# A program of stage N (build/lessonN/<name>), linked with stage N's library, and
# build/<name>, a copy of the latest stage's. (The blank line before endef keeps
# programs apart when a foreach strings several together.)
define PROGRAM
PROGRAM_OBJS_$(1) += $(call objects,$(1),$(SOURCES_$(1)_$(2)))
$(OUT)/lesson$(1)/$(2): $(call objects,$(1),$(SOURCES_$(1)_$(2))) $(OUT)/lesson$(1)/libfib.a
	$$(CXX) $$(LDFLAGS) $$^ $$(LDLIBS) -o $$@

endef
define LATEST_PROGRAM
$(OUT)/$(1): $(OUT)/lesson$(call latest_with,$(1))/$(1)
	cp $$< $$@

endef

define STAGE
LIB_OBJS_$(1)  := $(call objects,$(1),$(call libsrcs,$(1)))
# The stage's test shared libraries (lesson 6's probe), linked into its tests.
TEST_SO_$(1)   := $(if $(filter 1,$(STATIC)),,$(foreach n,$(call upto,$(1)),$(PROBE_$(n):tests/%.cpp=$(OUT)/lesson$(1)/lib%.so)))
DEMO_OBJS_$(1) := $(call objects,$(1),$(DEMO_$(1)))
TEST_OBJS_$(1) := $(call objects,$(1),tests/main.cpp $(call collect,$(1),TESTS))

$(OUT)/lesson$(1)/obj/%.o: %.cpp
	@mkdir -p $$(@D)
	$$(CXX) $$(CPPFLAGS) $$(CXXFLAGS) -c $$< -o $$@

$(OUT)/lesson$(1)/lib%.so: tests/%.cpp
	$$(CXX) $$(CPPFLAGS) $$(CXXFLAGS) -fPIC -shared $$< -o $$@

$(OUT)/lesson$(1)/obj/%.o: %.S
	@mkdir -p $$(@D)
	$$(CXX) $$(CPPFLAGS) $$(CXXFLAGS) -c $$< -o $$@

$(OUT)/lesson$(1)/libfib.a: $$(LIB_OBJS_$(1))
	rm -f $$@ && ar rcs $$@ $$^

$(OUT)/lesson$(1)/demo: $$(DEMO_OBJS_$(1)) $(OUT)/lesson$(1)/libfib.a
	$$(CXX) $$(LDFLAGS) $$^ $$(LDLIBS) -o $$@

$(OUT)/lesson$(1)/tests: $$(TEST_OBJS_$(1)) $(OUT)/lesson$(1)/libfib.a $$(TEST_SO_$(1))
	$$(CXX) $$(LDFLAGS) $$(TEST_OBJS_$(1)) $(OUT)/lesson$(1)/libfib.a $$(TEST_SO_$(1):%=% -Wl,-rpath,$$(abspath $$(dir $$(TEST_SO_$(1))))) $$(GTEST_LIBS) $$(LDLIBS) -o $$@

# Stage N must not include a header that a later lesson adds.
$(OUT)/lesson$(1)/layers.ok: $$(LIB_OBJS_$(1)) $$(DEMO_OBJS_$(1)) $$(PROGRAM_OBJS_$(1))
	@scripts/check-layers.sh $(1) "$(call collect,$(1),HDRS)" $$(^:.o=.d)
	@touch $$@

.PHONY: lesson$(1) run-lesson$(1) test-lesson$(1)
lesson$(1): $(OUT)/lesson$(1)/demo $(OUT)/lesson$(1)/layers.ok \
            $(addprefix $(OUT)/lesson$(1)/,$(PROGRAMS_$(1)))

run-lesson$(1): lesson$(1)
	$(OUT)/lesson$(1)/demo

test-lesson$(1): gtest-check lesson$(1) $(OUT)/lesson$(1)/tests
	$(TEST_ENV) $(OUT)/lesson$(1)/tests
	$(if $(TWICE_$(1)),$(TEST_ENV) $(or $(TWICE_ENV_$(1)),FIB_BACKEND=poll) $(OUT)/lesson$(1)/tests --gtest_filter='$(TWICE_$(1))')

-include $$(LIB_OBJS_$(1):.o=.d) $$(DEMO_OBJS_$(1):.o=.d) $$(TEST_OBJS_$(1):.o=.d) \
         $$(PROGRAM_OBJS_$(1):.o=.d)
endef
$(foreach n,$(LESSONS),$(foreach program,$(PROGRAMS_$(n)),$(eval $(call PROGRAM,$(n),$(program)))))
$(foreach program,$(PROGRAMS),$(eval $(call LATEST_PROGRAM,$(program))))
$(foreach n,$(LESSONS),$(eval $(call STAGE,$(n))))

# This one test file is compiled with the stack protector (Debian's g++ does not enable it by
# default): its functions check the canary at %fs:0x28 on the way out.
$(OUT)/lesson6/obj/tests/L06_stack_protector.o: CXXFLAGS += -fstack-protector-strong

# make bench's program, on the latest stage.
BENCH_OBJS := $(call objects,$(LAST_LESSON),$(SOURCES_bench))
$(OUT)/bench: $(BENCH_OBJS) $(OUT)/lesson$(LAST_LESSON)/libfib.a
	$(CXX) $(LDFLAGS) $^ $(LDLIBS) -o $@
-include $(BENCH_OBJS:.o=.d)

# ---- Top-level targets ----------------------------------------------------------------------
# `make test` proves every stage on its own (stage N runs the tests of lessons
# 1..N), then checks that no binary got an executable stack.
test: $(addprefix test-lesson,$(LESSONS))
	@$(MAKE) --no-print-directory check-stack

check-stack: all
	@scripts/check-gnu-stack.sh $(wildcard $(OUT)/lesson*/demo $(OUT)/lesson*/tests) \
	    $(foreach n,$(LESSONS),$(addprefix $(OUT)/lesson$(n)/,$(PROGRAMS_$(n)))) \
	    $(addprefix $(OUT)/,$(PROGRAMS))

# gdb's `bt` inside a fiber must end at context_trampoline (skipped without gdb).
check-backtrace: lesson2
	@scripts/check-gdb-backtrace.sh $(OUT)/lesson2/demo

# Benchmarks: never part of make test. See tests/bench/ and scripts/bench-echo.sh.
bench: $(OUT)/bench
	$(OUT)/bench

bench-echo: programs
	@scripts/bench-echo.sh $(OUT)

# The echo_server program serves a line and stops cleanly on SIGINT.
check-echo-server: $(OUT)/echo_server
	@scripts/check-echo-server.sh $(OUT)/echo_server

# The course's main demo: the echo server on 127.0.0.1:8001 (talk to it with nc 127.0.0.1 8001).
run: $(OUT)/echo_server
	$(OUT)/echo_server

gtest-check:
ifeq ($(GTEST_HEADER),)
	@echo "GoogleTest is missing. Install it with:  sudo apt-get install -y libgtest-dev" >&2
	@exit 1
endif

clean:
	rm -rf build

print-lessons:
	@echo $(LESSONS)

help:
	@echo "make                 build every stage, its demo and its programs (build/lessonN/)"
	@echo "make lessonN         build stage N from lessons 1..N only (N = $(LESSONS))"
	@echo "make run-lessonN     run stage N's demo"
	@echo "make run             start the echo server on 127.0.0.1:8001 (build/echo_server)"
	@echo "make programs        build/echo_server, build/chat_server, ...: each from its latest lesson"
	@echo "make test            run every test of every stage, then check-stack"
	@echo "make test-lessonN    run the tests of lessons 1..N against stage N"
	@echo "make SAN=1 test      the same tests under AddressSanitizer + UBSan (build/san/)"
	@echo "make STATIC=1 test-lesson6  lesson 6's tests (and 1-5's) linked statically (build/static/)"
	@echo "make bench           switch, yield, spawn, CondVar and memory costs, side by side (~1 min)"
	@echo "make bench-echo      the echo servers under load: fibers, an epoll loop, a thread per client (~2 min)"
	@echo "make check-stack     check that no built binary has an executable stack"
	@echo "make check-backtrace check that gdb's bt inside a fiber ends at the trampoline"
	@echo "make check-echo-server  echo a line through build/echo_server, stop it with SIGINT"
	@echo "make clean           remove build/"
