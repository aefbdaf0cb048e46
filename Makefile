# Makefile — builds the course, one stage per lesson.
#
# The tree says which lesson a file belongs to: lesson N's files live in folders
# named after it (asm/NN-*, include/NN-*/fib, src/NN-*, lessons/NN-*) or carry
# its prefix (tests/LNN_*, tests/bench/LNN_*). This file says what is built from
# them. Stage N (`make lessonN`) is compiled from the files of lessons 1..N only,
# into build/lessonN/, with only their include folders on the include path.
#
# A later lesson changes an earlier lesson's library file by *replacing* it: a
# file of the same name in the later lesson's folder is compiled (or, for a
# header, found first) from that stage on, and the earlier one is not. The
# replacement keeps every line of code of the file it replaces and adds to it
# (scripts/check-replacements.py checks this), so what an earlier lesson's text
# explains stays true in every later stage. `make diff-lessonN` shows what
# stage N adds and changes; `make stage-lessonN` writes stage N out alone.
# `make help` lists every target.

# The machine the course builds for: x86_64 or aarch64 (arm64), this machine's own unless
# told. On an x86-64 machine, ARCH=aarch64 cross-builds into build/aarch64/ and runs the
# tests and the demos under qemu-user (see "ARCH=aarch64 on x86-64" below).
HOST_ARCH := $(shell uname -m)
ARCH ?= $(HOST_ARCH)
ifneq ($(shell uname -s),Linux)
$(error This course runs only on Linux (this is $(shell uname -s)): its lessons are Linux system calls)
endif
ifeq ($(filter x86_64 aarch64,$(ARCH)),)
$(error ARCH=$(ARCH): the context switch is written for x86_64 and aarch64 only (this machine is $(HOST_ARCH)))
endif
ifneq ($(ARCH),$(HOST_ARCH))
ifneq ($(HOST_ARCH)-$(ARCH),x86_64-aarch64)
$(error ARCH=$(ARCH) on $(HOST_ARCH): the course cross-builds only from x86_64 to aarch64)
endif
CROSS := $(ARCH)
endif
# The assembly for an architecture lives in asm/NN-*/aarch64/X.S beside x86-64's
# asm/NN-*/X.S, and a test's in tests/X_aarch64.S beside tests/X.S. for_arch names the
# files of ARCH among those listed in their x86-64 names (asm_of finds a lesson's).
for_arch = $(if $(filter aarch64,$(ARCH)),$(foreach f,$(1),$(basename $(f))_aarch64$(suffix $(f))),$(1))

.DEFAULT_GOAL := all

# ---- The lessons ----------------------------------------------------------------------------
LESSONS := 1 2 3 4 5 6 7 8 9 10 11 12 13
DIR_1 := 01-context-switch
DIR_2 := 02-fibers
DIR_3 := 03-condvar
DIR_4 := 04-echo-server
DIR_5 := 05-epoll
DIR_6 := 06-time-and-events
DIR_7 := 07-fiber-local-storage
DIR_8 := 08-offload
DIR_9 := 09-cluster
DIR_10 := 10-coroutines
DIR_11 := 11-io-uring
DIR_12 := 12-structured-concurrency
DIR_13 := 13-redis

# What a lesson adds beyond its library folders: its demo, the sources its tests
# need besides tests/LNN_*_test.cpp, and its programs. A program belongs to the
# lesson that lists it and to every later stage; a later lesson may list it
# again with other sources (lesson 6's echo_server), which then build it from
# that stage on. CHECK_SCRIPTS_N holds SCRIPT=PROGRAM pairs: make test-lessonM, for
# M >= N, runs each SCRIPT with stage M's PROGRAM ($(OUT)/lessonM/PROGRAM) after the tests
# (and, under ARCH=aarch64 on x86-64, with --run-with and the qemu-user command).
DEMO_1  := lessons/$(DIR_1)/main.cpp
TESTS_1 := $(call for_arch,tests/L01_probes.S)

DEMO_2  := lessons/$(DIR_2)/main.cpp
# A test helper built as Debian builds user code by default, without stack-clash protection:
# its big frame can jump a stack's guard.
TESTS_2 := tests/L02_big_frame.cpp
FLAGS_2 := tests/L02_big_frame.cpp=-fno-stack-clash-protection
# registry.cpp carries gdb's fiber commands inside every binary (.incbin): a source and
# the file it embeds, rebuilt when that changes and copied by make stage-lessonN.
EMBED_2 := src/$(DIR_2)/registry.cpp=scripts/fib_gdb.py

DEMO_3  := lessons/$(DIR_3)/main.cpp

L4      := lessons/$(DIR_4)
ECHO_4  := $(L4)/echo_server.cpp $(L4)/echo_connection.cpp
DEMO_4  := $(L4)/main.cpp $(ECHO_4)
TESTS_4 := $(ECHO_4)
PROGRAMS_4             := echo_server echo_threads echo_load
SOURCES_4_echo_server  := $(L4)/echo_main.cpp $(L4)/server_program.cpp $(ECHO_4)
SOURCES_4_echo_threads := $(L4)/echo_threads.cpp $(L4)/server_program.cpp
SOURCES_4_echo_load    := $(L4)/echo_load.cpp $(L4)/load_connections.cpp $(L4)/message_pool.cpp

L5      := lessons/$(DIR_5)
DEMO_5  := $(L5)/main.cpp $(ECHO_4)
PROGRAMS_5            := echo_epoll
SOURCES_5_echo_epoll  := $(L5)/echo_epoll.cpp $(L4)/server_program.cpp
# make test-lesson5 runs these suites a second time on the poll backend.
TWICE_5     := L04_*:L05_*
TWICE_ENV_5 := FIB_BACKEND=poll

L6      := lessons/$(DIR_6)
SERVER_6 := $(L6)/fiber_server.cpp
ECHO_6  := $(L6)/timed_echo_server.cpp $(L4)/echo_connection.cpp $(L6)/udp_echo.cpp $(SERVER_6)
CHAT_6  := $(L6)/chat_room.cpp $(L6)/chat_server.cpp $(SERVER_6)
DEMO_6  := $(L6)/main.cpp $(L6)/demo_timers.cpp $(L6)/demo_cancel.cpp $(L6)/demo_chat.cpp $(CHAT_6)
TESTS_6 := $(sort $(ECHO_6) $(CHAT_6))
PROGRAMS_6            := echo_server chat_server
PROGRAM_6_SHARED      := $(L6)/stop_signals.cpp $(L6)/timeout_flags.cpp $(L4)/server_program.cpp
SOURCES_6_echo_server := $(L6)/echo_main.cpp $(PROGRAM_6_SHARED) $(ECHO_6)
SOURCES_6_chat_server := $(L6)/chat_main.cpp $(PROGRAM_6_SHARED) $(CHAT_6)
TWICE_6     := L04_*:L05_*:L06_*
TWICE_ENV_6 := FIB_BACKEND=poll

L7      := lessons/$(DIR_7)
DEMO_7  := $(L7)/main.cpp
# The stack-protector test's own flags are below. A shared library with a
# thread_local of its own, reached through the DTV: the stage-7 tests link it
# (not when STATIC=1, where there are no shared libraries).
TESTS_7 := tests/L07_stack_protector.cpp
PROBE_7 := tests/L07_probe_lib.cpp
# This one test file is compiled with the stack protector (Debian's g++ does not enable it by
# default): its functions check the canary at %fs:0x28 on the way out.
FLAGS_7 := tests/L07_stack_protector.cpp=-fstack-protector-strong
# make test-lesson7 runs its suites a second time with the arch_prctl fallback (x86-64's:
# AArch64 writes its thread pointer one way only).
TWICE_7     := $(if $(filter aarch64,$(ARCH)),,L07_*)
TWICE_ENV_7 := FIB_TLS_SWITCH=arch_prctl

L8      := lessons/$(DIR_8)
DEMO_8  := $(L8)/main.cpp
TESTS_8 := $(L8)/slow_server.cpp
PROGRAMS_8            := slow_server offload_trips
SOURCES_8_offload_trips := $(L8)/offload_trips.cpp
SOURCES_8_slow_server := $(L8)/slow_main.cpp $(L8)/slow_server.cpp $(SERVER_6) $(L6)/stop_signals.cpp \
                         $(L4)/server_program.cpp

L9      := lessons/$(DIR_9)
SHARDED_9 := $(L9)/sharded.cpp $(SERVER_6) $(L6)/stop_signals.cpp
ECHO_9  := $(L9)/shard_echo.cpp $(L4)/echo_connection.cpp
CHAT_9  := $(L9)/sharded_chat.cpp $(L6)/chat_room.cpp
DEMO_9  := $(L9)/main.cpp $(ECHO_9) $(SHARDED_9) $(L4)/load_connections.cpp $(L4)/message_pool.cpp
TESTS_9 := $(sort $(ECHO_9) $(CHAT_9) $(SHARDED_9))
PROGRAMS_9             := cluster_echo cluster_chat post_trips
SOURCES_9_post_trips   := $(L9)/post_trips.cpp
SOURCES_9_cluster_echo := $(L9)/echo_main.cpp $(ECHO_9) $(SHARDED_9) $(L4)/server_program.cpp
SOURCES_9_cluster_chat := $(L9)/chat_main.cpp $(CHAT_9) $(SHARDED_9) $(L4)/server_program.cpp

L10     := lessons/$(DIR_10)
CO_ECHO_10 := $(L10)/co_echo_server.cpp
DEMO_10 := $(L10)/main.cpp $(CO_ECHO_10)
TESTS_10 := $(CO_ECHO_10)
# Code that must not compile (scripts/check-compile-fail.sh), checked by make test-lesson10.
COMPILE_FAIL_10 := $(sort $(wildcard tests/L10_fails_*.cpp))
PROGRAMS_10               := co_echo_server
SOURCES_10_co_echo_server := $(L10)/co_echo_main.cpp $(CO_ECHO_10) $(L4)/server_program.cpp

L11     := lessons/$(DIR_11)
DEMO_11 := $(L11)/main.cpp
PROGRAMS_11                 := completion_echo
SOURCES_11_completion_echo  := $(L11)/completion_echo.cpp $(SERVER_6) $(L6)/stop_signals.cpp $(L4)/server_program.cpp
# make test-lesson11 runs the I/O suites of lessons 4-6 and 11 a second time where the kernel
# refuses io_uring (a seccomp filter, scripts/without-io-uring.py): on the epoll fallback.
TWICE_11     := L04_*:L05_*:L06_*:L11_*
TWICE_ENV_11 := scripts/without-io-uring.py

L12     := lessons/$(DIR_12)
SCOPED_12 := $(L12)/scoped_server.cpp
DEMO_12 := $(L12)/main.cpp $(SCOPED_12) $(L12)/critics.cpp
TESTS_12 := $(SCOPED_12)

L13     := lessons/$(DIR_13)
DEMO_13 := $(L13)/main.cpp $(L13)/resp_client.cpp
KV_13   := $(L13)/resp.cpp $(L13)/reply.cpp $(L13)/keyspace.cpp $(L13)/glob.cpp $(L13)/commands.cpp \
           $(L13)/string_commands.cpp $(L13)/key_commands.cpp $(L13)/list_commands.cpp \
           $(L13)/session.cpp $(L13)/blocking.cpp $(L13)/blocking_commands.cpp $(L13)/pubsub.cpp \
           $(L13)/pubsub_commands.cpp $(L13)/snapshot.cpp
SERVER_13 := $(L13)/kv_connection.cpp $(L13)/kv_server.cpp $(SCOPED_12)
TESTS_13 := $(KV_13) $(SERVER_13) $(L13)/kv_cluster.cpp $(L13)/resp_client.cpp
DEMO_13 += $(KV_13) $(SERVER_13)
PROGRAMS_13            := kv_server
SOURCES_13_kv_server   := $(L13)/kv_main.cpp $(KV_13) $(SERVER_13) $(L13)/kv_cluster.cpp $(SHARDED_9) \
                          $(L6)/timeout_flags.cpp $(L4)/server_program.cpp
# make test-lesson13 and later play lessons/13-redis/compare_session.txt to the stage's kv_server
# and to redis-server side by side, and compare every reply (scripts/redis-compare.py).
CHECK_SCRIPTS_13 := scripts/redis-compare.py=kv_server
# make run-lesson13 starts the server (it prints how to talk to it with redis-cli); the demo is
# build/lesson13/demo.
RUN_13 := kv_server --port 6380

# Benchmarks: tests/bench/bench_main.cpp and the rows of lessons 1..N (tests/bench/LNN_*),
# plus what a lesson's rows need.
BENCH_EXTRA_4 := $(ECHO_4)
BENCH_EXTRA_10 := $(CO_ECHO_10)
BENCH_EXTRA_12 := $(L12)/critics.cpp $(CHAT_6)

LAST_LESSON := $(lastword $(LESSONS))

# ---- Tools and flags ------------------------------------------------------------------------
CXX      := g++
ARCHIVER := ar
# Objects are compiled through ccache when it is there (see "How the build runs" below).
COMPILE   = $(if $(CCACHE),$(CCACHE) )$(CXX)
CXXFLAGS := -std=c++20 -O2 -g -Wall -Wextra -Werror -fstack-clash-protection
CPPFLAGS := -MMD -MP
LDFLAGS  :=
LDLIBS   := -lpthread

# ---- ARCH=aarch64 on x86-64 -----------------------------------------------------------------
# Debian's cross compiler builds for AArch64, into a build tree of its own (build/aarch64/,
# with san/, tsan/ and static/ under it as on x86-64), and what runs a test binary or a demo
# there is qemu-user: RUN goes before each. GoogleTest is built for AArch64 from Debian's
# googletest sources (/usr/src/googletest, which libgtest-dev brings) into that tree. A
# missing package is installed through scripts/install-package.sh, one line saying so. On an
# AArch64 machine none of this applies: ARCH is aarch64 there, and the build is native.
BUILD_DIR ?= build
ARCH_DIR := $(BUILD_DIR)$(if $(CROSS),/$(CROSS))
RUN      :=
ifdef CROSS
CXX      := aarch64-linux-gnu-g++
ARCHIVER := aarch64-linux-gnu-ar
SYSROOT  := /usr/aarch64-linux-gnu
RUN      := qemu-aarch64 -L $(SYSROOT)
ifeq ($(shell command -v $(CXX)),)
$(shell scripts/install-package.sh g++-aarch64-linux-gnu "the AArch64 cross compiler, for ARCH=aarch64" >&2)
endif
ifeq ($(wildcard $(SYSROOT)/lib/libc.so.6),)
$(shell scripts/install-package.sh libc6-arm64-cross "the AArch64 C library, for ARCH=aarch64" >&2)
endif
ifeq ($(shell command -v qemu-aarch64),)
$(shell scripts/install-package.sh qemu-user "qemu-user, which runs AArch64 programs here, for ARCH=aarch64" >&2)
endif
ifeq ($(and $(shell command -v $(CXX)),$(wildcard $(SYSROOT)/lib/libc.so.6)),)
$(error ARCH=aarch64 needs the Debian packages g++-aarch64-linux-gnu and libc6-arm64-cross (the lines above say why they are missing))
endif
endif
# The program that runs what the build made, if not this machine itself.
run_prefix = $(if $(RUN),$(RUN) )

# SAN=1: AddressSanitizer + UndefinedBehaviorSanitizer, in a build tree of its own.
# Both sanitizer builds keep line tables only (-g1): a report still names every file and
# line, and each file compiles in about 0.7 of the time -g takes (L13_server_test.cpp: 10.6 s
# against 15.4 s under SAN); gdb's checks use the plain build, which keeps -g.
SAN_DEBUG := -g1
ifeq ($(SAN),1)
OUT      := $(ARCH_DIR)/san
CXXFLAGS += -O1 $(SAN_DEBUG) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS  += -fsanitize=address,undefined
# Fake stacks exercise the fiber-switch annotations harder (off by default in GCC 12). Under
# qemu-user (ARCH=aarch64 on x86-64) LeakSanitizer cannot stop the program's threads to scan
# them, and fails the run at exit: it is left out there.
TEST_ENV := ASAN_OPTIONS=detect_stack_use_after_return=1$(if $(CROSS),:detect_leaks=0)
else
OUT      := $(ARCH_DIR)
endif

# TSAN=1: ThreadSanitizer, in a build tree of its own (build/tsan/lessonN/), for the stages
# whose code crosses threads (make TSAN=1 test-lesson9 to test-lesson12). Every switch is
# announced to it as a switch of fiber (sanitizer.hpp). Lesson 7's per-fiber TLS blocks move
# %fs, where TSan keeps its own per-thread state: FiberTls refuses to run under it, and the
# tests that need one are left out by GTEST_FILTER (gtest prints the filter at the top of each
# log), as is lesson 7's second run. A report stops the test binary (halt_on_error).
ifeq ($(TSAN),1)
ifeq ($(SAN),1)
$(error SAN=1 and TSAN=1 do not go together: AddressSanitizer and ThreadSanitizer exclude each other)
endif
OUT      := $(ARCH_DIR)/tsan
CXXFLAGS += -O1 $(SAN_DEBUG) -fsanitize=thread -fno-omit-frame-pointer
LDFLAGS  += -fsanitize=thread
TEST_ENV := TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
            GTEST_FILTER='-L07_*:L08_Offload.WithAFiberTlsTheFibersTlsAndTheWorkersStayApart'
TWICE_7  :=
# The fallback to epoll is lesson 5's Waiter, which the TSan run tests already.
TWICE_11 :=
endif

# From stage 12 on, every test run watches each FiberManager for stalls (stall_detector.hpp): a
# fiber that runs a second of CPU time without a switch (five under TSan) is reported in the
# log, with its name and a backtrace; a report fails nothing. Earlier stages never read it.
TEST_ENV += FIB_STALL_MS=$(if $(filter 1,$(TSAN)),5000,1000)

# STATIC=1: everything linked statically, in a build tree of its own (lesson 7 shows that
# libc's TLS then lives in the executable's own segment). -u keeps glibc's per-thread
# clean-up, which lesson 7 calls weakly, in the link.
# FIB_STATIC=1 is defined only for the sources that test it (found here by name), so that every
# other object, and GoogleTest's precompiled header (the dynamic build's, shared), comes out the
# same as in the dynamic build, and ccache hands it back: CI's static run then compiles 3 files,
# not a stage. A header must not test FIB_STATIC (what includes it would not see it).
ifeq ($(STATIC),1)
ifneq ($(SAN)$(TSAN),)
$(error SAN=1 or TSAN=1 and STATIC=1 do not go together: the sanitizers need a dynamic link)
endif
OUT      := $(ARCH_DIR)/static
STATIC_TESTED_BY := $(shell grep -l FIB_STATIC $(wildcard src/*/*.cpp asm/*/*.S lessons/*/*.cpp tests/*.cpp))
ifneq ($(shell grep -l FIB_STATIC $(wildcard include/*/fib/* tests/*.hpp)),)
$(error a header tests FIB_STATIC: define it for every file (CPPFLAGS += -DFIB_STATIC=1) in the STATIC=1 part of the Makefile)
endif
LDFLAGS  += -static -Wl,-u,__libc_thread_freeres
endif

# GoogleTest, from Debian's libgtest-dev; only the tests need it, and make test installs it
# when it is missing (scripts/install-package.sh). ARCH=aarch64 on x86-64 builds it from
# Debian's googletest sources, once per build tree, as Debian's own package is built.
ifdef CROSS
GTEST_SOURCES := /usr/src/googletest/googletest
GTEST_HEADER := $(wildcard $(GTEST_SOURCES)/src/gtest-all.cc)
GTEST_LIBS   := $(ARCH_DIR)/gtest/libgtest.a
CPPFLAGS     += -isystem $(GTEST_SOURCES)/include
else
GTEST_HEADER := $(firstword $(wildcard /usr/include/gtest/gtest.h /usr/local/include/gtest/gtest.h))
GTEST_LIBS   := -lgtest
endif
# Every test binary runs under a watchdog: tests/main.cpp ends a test that runs
# longer than FIB_TEST_TIMEOUT seconds and names it; `timeout` is the backstop.
TEST_TIMEOUT := 1800
# TEST_SHARDS=K runs each test binary as K processes at once, a share of the tests each
# (scripts/run-tests.sh): where one stage's run is all there is to do (CI's TSan run, make
# test-shuffled), it then uses every core. Left at 1: make test runs stages side by side
# already, and more processes than cores slowed a sanitized test past its watchdog.
TEST_SHARDS ?= 1

# SUITES=own (CI's sanitizer run): each stage below the last runs only its own lesson's
# suites (tests/LNN_*), its second run (TWICE_N) too; the last stage runs every suite. Every
# file version is still tested under the sanitizer, by the suites of the lesson that wrote
# it and, if it survives to the last stage, by all; what is left out is an earlier lesson's
# suites against a version a later lesson replaced. Plain `make test` runs them all.
# Such a stage builds only what it runs: `tests-own`, of its own lesson's test files, the
# stage's other test sources taken from an archive as the linker needs them (test-helpers.a),
# and its library; not the earlier lessons' test files, which the last stage compiles anyway,
# nor its demo and programs (plain make test builds every stage's; the last stage's are built).
SUITES ?= all
two_digits = $(if $(filter 1 2 3 4 5 6 7 8 9,$(1)),0)$(1)
own_suites = $(if $(and $(filter own,$(SUITES)),$(filter-out $(LAST_LESSON),$(1))),L$(call two_digits,$(1))_*)
# The stages whose demo and programs a test run builds: under SUITES=own only the last's, as
# the stages below it build their tests-own and the library (no test runs a program).
demo_stages = $(if $(filter own,$(SUITES)),$(LAST_LESSON),$(LESSONS))
# The stages `make test` runs. Under SUITES=own it leaves out a stage below the last whose
# lesson wrote no file that a later lesson replaces and that has no second run: every file
# that lesson wrote is in the last stage, whose run tests it with every suite. (make
# test-lessonN still runs such a stage when named.)
replaced_later = $(filter-out $(call stage_lib,$(LAST_LESSON)) $(call stage_headers,$(LAST_LESSON)),\
                              $(call lib_of,$(1)) $(call headers_of,$(1)))
test_stages = $(if $(filter own,$(SUITES)),$(foreach n,$(LESSONS),$(if $(or $(filter $(LAST_LESSON),$(n)),\
                  $(strip $(call replaced_later,$(n))),$(TWICE_$(n))),$(n))),$(LESSONS))
# The test binary stage $(1)'s run uses: `tests`, or `tests-own` under SUITES=own below the
# last stage (that run skips the include-layering check of the test files: plain make test
# makes it, with the same headers).
test_binary = $(OUT)/lesson$(1)/tests$(if $(call own_suites,$(1)),-own)

# ---- How the build runs ---------------------------------------------------------------------
# Stage N compiles the files of lessons 1..N again, with its own include path, so that what
# lesson N replaces is what every earlier file sees. Most of those objects come out the same
# as stage N-1's (no header they read was replaced in between). Three things keep the build
# from paying for that, each kept because it was measured to pay (the course's 2-core VM;
# `make test` from a clean tree and an empty cache took 7 minutes with them for 12 stages, 11
# to 21 for 13, as the VM's speed moved from day to day):
# - ccache hands back an object whose preprocessed input it has compiled before: 826 of
#   make test's 1,287 compiles. make test installs it when missing (one line says so); the
#   build works without it, slower (`make CCACHE= test`).
# - GoogleTest's header is precompiled once per build kind ($(OUT)/pch/), and every test file
#   gets it with -include (tests/gtest_pch.hpp): parsing gtest.h was 1.4 s of each test
#   file's 2 to 6 s. ccache takes a PCH with the sloppiness its manual names, and counts
#   every -I argument then: hence stage_cpath below.
# - make uses every core unless told -j, and keeps each target's output together.
ifeq ($(origin CCACHE),undefined)
CCACHE := $(shell command -v ccache 2>/dev/null)
ifeq ($(CCACHE)$(filter test,$(MAKECMDGOALS)),test)
$(shell scripts/install-package.sh --optional ccache "ccache, which lets each stage reuse the objects of the stage before" >&2)
CCACHE := $(shell command -v ccache 2>/dev/null)
endif
endif
export CCACHE_SLOPPINESS := pch_defines,time_macros

# Every core, unless the command line says -j. Each target's output is printed in one piece
# (--output-sync), except when a goal runs a program in the foreground, whose output must
# show as it comes (make run, make run-lesson4, ...).
FOREGROUND_GOALS := run run-lesson% echo-server-lesson% bench bench-% timeline% timelines
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1) \
             $(if $(filter $(FOREGROUND_GOALS),$(MAKECMDGOALS)),,--output-sync=target)

# One short line per step, `[ 12/412] CXX   lesson6  src/06-time-and-events/timers.cpp`,
# counted out of the steps this run has to do. The count is a dry run (make -n) of the same
# goals, made when the first step starts, so a run with nothing to do does not pay for it.
# V=1 prints the full commands instead; make -s prints neither. A step that fails prints its
# full command under the compiler's messages.
#   $(call step,TAG,STAGE,WHAT,COMMAND)
ifeq ($(V),1)
step = $(4)
else ifeq ($(FIB_COUNTING_STEPS),1)
step = : FIB_STEP; $(4)
else
step = @$(if $(findstring s,$(firstword -$(MAKEFLAGS))),,$(call step_line,$(1),$(2),$(3));) \
       $(4) || { echo '$(subst ','\'',$(4))' >&2; exit 1; }
endif
step_line = $(eval STEPS_DONE += x)printf '[%4s/%s] %-5s %-9s %s\n' $(words $(STEPS_DONE)) $(steps_total) '$(1)' '$(2)' '$(3)'
# A test binary's run, as one step: its line ends with how many passed (scripts/run-tests.sh).
#   $(call run_tests,STAGE,LOG,COMMAND,NOTE)
ifeq ($(V),1)
run_tests = $(3)
else ifeq ($(FIB_COUNTING_STEPS),1)
run_tests = : FIB_STEP; $(3)
else
run_tests = @FIB_TEST_SHARDS=$(TEST_SHARDS) scripts/run-tests.sh "$(if $(findstring s,$(firstword -$(MAKEFLAGS))),TEST  $(1) $(if $(4),$(4): ),$$(printf \
            '[%4s/%s] %-5s %-9s %s' $(eval STEPS_DONE += x)$(words $(STEPS_DONE)) $(steps_total) TEST '$(1)' '$(if $(4),$(4): )'))" \
            $(2) env $(3)
endif
steps_total = $(or $(STEPS_TOTAL),$(eval STEPS_TOTAL := $(shell MAKEFLAGS= $(MAKE) -n $(make_letters) --no-print-directory \
              $(MAKEOVERRIDES) FIB_COUNTING_STEPS=1 $(MAKECMDGOALS) 2>/dev/null | grep -c FIB_STEP))$(STEPS_TOTAL))
make_letters = $(if $(filter-out -%,$(firstword $(MAKEFLAGS))),-$(firstword $(MAKEFLAGS)))
comma := ,
space := $(subst ,, )
differ = $(filter-out $(1),$(2))$(filter-out $(2),$(1))

# The test files (those that use GoogleTest) are compiled without GCC's variable tracking:
# they keep their line and unwind tables (a failure's backtrace names every line), while gdb
# shows fewer of an -O2 test's local variables. Each compiles in about 0.6 of the time
# (tests/L13_server_test.cpp: 13.1 s against 20.9 s, one after the other).
TEST_CXXFLAGS := -fno-var-tracking

# GoogleTest's header, precompiled with the tests' flags (see "How the build runs"). GCC takes
# $(PCH).gch for `-include $(PCH)`, or the header itself if it cannot. The flags are the build
# kind's, taken here: a test object's own flags would reach the rule too (make hands them
# down to prerequisites), stage paths and all.
PCH := $(if $(filter 1,$(STATIC)),$(ARCH_DIR),$(OUT))/pch/gtest_pch.hpp
PCH_FLAGS := $(filter-out -MMD -MP,$(CPPFLAGS)) $(CXXFLAGS) $(TEST_CXXFLAGS)
$(PCH).gch: tests/gtest_pch.hpp | gtest-check
	@mkdir -p $(@D)
	@cp tests/gtest_pch.hpp $(PCH)
	$(call step,PCH,tests,$<,$(COMPILE) $(PCH_FLAGS) -x c++-header $(PCH) -o $@)

# ---- Helpers: "lessons 1..N" and "the latest of each name" ----------------------------------
# A lesson's number in two digits, as in its file names (tests/L04_*, tests/L10_*).
nn      = $(if $(filter 1 2 3 4 5 6 7 8 9,$(1)),0$(1),$(1))
upto    = $(wordlist 1,$(1),$(LESSONS))
collect = $(foreach n,$(call upto,$(1)),$($(2)_$(n)))
reverse = $(if $(1),$(call reverse,$(wordlist 2,$(words $(1)),$(1))) $(firstword $(1)))
# Of the files in $(1) (listed earliest lesson first), keep one per file name:
# the latest lesson's. This is the replacement rule.
latest  = $(strip $(call reverse,$(call latest_,$(call reverse,$(1)),)))
latest_ = $(if $(1),$(call latest_,$(wordlist 2,$(words $(1)),$(1)),$(2) $(if $(filter $(notdir $(firstword $(1))),$(notdir $(2))),,$(firstword $(1)))),$(2))

# Lesson N's own library files, found by folder: for ARCH, or for architecture $(2).
asm_of      = $(sort $(wildcard asm/$(DIR_$(1))/$(if $(filter aarch64,$(2)),aarch64/)*.S))
arch_lib_of = $(call asm_of,$(1),$(2)) $(sort $(wildcard src/$(DIR_$(1))/*.cpp))
lib_of      = $(call arch_lib_of,$(1),$(ARCH))
headers_of = $(sort $(wildcard include/$(DIR_$(1))/fib/*))
tests_of   = $(filter-out $(PROBE_$(1)),$(sort $(wildcard tests/L$(call nn,$(1))_*_test.cpp))) $(TESTS_$(1))
# Stage N: its library sources and headers (replacements applied), its include path
# (the latest lesson first, so that a replacing header is found before the one it
# replaces), its test sources, and the bench rows.
stage_lib     = $(call stage_lib_for,$(1),$(ARCH))
stage_lib_for = $(call latest,$(foreach n,$(call upto,$(1)),$(call arch_lib_of,$(n),$(2))))
stage_headers = $(call latest,$(foreach n,$(call upto,$(1)),$(call headers_of,$(n))))
stage_include = $(foreach n,$(call reverse,$(call upto,$(1))),-Iinclude/$(DIR_$(n)))
# The same folders as CPATH, which g++ searches as if each were given with -I, in order. The
# stage's own compiles take their include path this way: ccache does not count it, so that
# a stage's test file with the precompiled header is a cache hit when an earlier stage
# compiled the same input (the preprocessed input says which headers were found).
stage_cpath   = $(subst $(space),:,$(strip $(foreach n,$(call reverse,$(call upto,$(1))),include/$(DIR_$(n)))))
stage_tests   = tests/main.cpp $(sort $(foreach n,$(call upto,$(1)),$(call tests_of,$(n))))
stage_bench   = tests/bench/bench_main.cpp $(sort $(wildcard $(foreach n,$(call upto,$(1)),tests/bench/L$(call nn,$(n))_*.cpp)) $(call collect,$(1),BENCH_EXTRA))
# The programs of stage N, and the lesson whose sources build program $(2) there.
stage_programs = $(sort $(call collect,$(1),PROGRAMS))
program_lesson = $(lastword $(foreach n,$(call upto,$(1)),$(if $(filter $(2),$(PROGRAMS_$(n))),$(n))))
program_srcs   = $(SOURCES_$(call program_lesson,$(1),$(2))_$(2))
# Every file stage N is made of: what make stage-lessonN copies and diff-lessonN compares.
# The same on every ARCH: x86-64's library, then AArch64's assembly.
stage_files = $(call stage_lib_for,$(1),x86_64) \
              $(filter-out $(call stage_lib_for,$(1),x86_64),$(call stage_lib_for,$(1),aarch64)) \
              $(call stage_headers,$(1)) \
              $(filter-out %/exercises %/solutions,$(sort $(wildcard $(foreach n,$(call upto,$(1)),lessons/$(DIR_$(n))/*)))) \
              $(sort $(wildcard $(foreach n,$(call upto,$(1)),tests/L$(call nn,$(n))_*))) tests/main.cpp \
              tests/gtest_pch.hpp tests/bench/bench_main.cpp tests/bench/bench.hpp \
              $(sort $(wildcard $(foreach n,$(call upto,$(1)),tests/bench/L$(call nn,$(n))_*))) \
              $(foreach f,$(call collect,$(1),EMBED),$(lastword $(subst =, ,$(f))))
objects = $(addprefix $(OUT)/lesson$(1)/obj/,$(addsuffix .o,$(basename $(2))))

.PHONY: all programs help run test test-shuffled bench bench-echo bench-redis check-stack check-backtrace check-echo-server \
        check-gdb check-tree check-text check-exercises check-docs docs gtest-check clean print-lessons FORCE
all: $(addprefix lesson,$(LESSONS))

# ---- One stage: library, demo, programs, tests, bench, layer check --------------------------
# A program of stage N, built from the sources of the latest lesson <= N that lists it.
# (The blank line before endef keeps programs apart when a foreach strings several.)
define PROGRAM
PROGRAM_OBJS_$(1) += $(call objects,$(1),$(call program_srcs,$(1),$(2)))
$(OUT)/lesson$(1)/$(2): $(call objects,$(1),$(call program_srcs,$(1),$(2))) $(OUT)/lesson$(1)/libfib.a
	$$(call step,LINK,lesson$(1),$$(@F),$$(CXX) $$(LDFLAGS) $$^ $$(LDLIBS) -o $$@)

endef

# A newline and a tab: what starts the next line of a recipe that a $(foreach) writes.
define recipe_break

	
endef

define STAGE
LIB_OBJS_$(1)   := $(call objects,$(1),$(call stage_lib,$(1)))
DEMO_OBJS_$(1)  := $(call objects,$(1),$(DEMO_$(1)))
TEST_OBJS_$(1)  := $(call objects,$(1),$(call stage_tests,$(1)))
GTEST_OBJS_$(1) := $(call objects,$(1),$(filter tests/main.cpp %_test.cpp,$(call stage_tests,$(1))))
BENCH_OBJS_$(1) := $(call objects,$(1),$(call stage_bench,$(1)))
# The stage's test shared libraries (lesson 7's probe), linked into its tests.
TEST_SO_$(1)    := $(if $(filter 1,$(STATIC)),,$(foreach n,$(call upto,$(1)),$(PROBE_$(n):tests/%.cpp=$(OUT)/lesson$(1)/lib%.so)))

$(OUT)/lesson$(1)/obj/%.o: STAGE_CPATH := $(call stage_cpath,$(1))
$(foreach f,$(call collect,$(1),FLAGS),$(call objects,$(1),$(firstword $(subst =, ,$(f)))): CXXFLAGS += $(lastword $(subst =, ,$(f)))
)
$(foreach f,$(call collect,$(1),EMBED),$(call objects,$(1),$(firstword $(subst =, ,$(f)))): $(lastword $(subst =, ,$(f)))
)
$(OUT)/lesson$(1)/lib%.so: STAGE_CPATH := $(call stage_cpath,$(1))

# The names of stage N's headers. Every object of the stage depends on this file: a header
# added to the tree (a later lesson's replacement of an earlier one, say) changes which file
# an #include finds, which the compiler's own dependency lists cannot know, so the whole
# stage is rebuilt. It is rewritten as the Makefile is read, and only when the names change
# (a rule that ran every time would make every dry run, and so the step count, say "all").
$(OUT)/lesson$(1)/headers.list:
	@mkdir -p $$(@D)
	@echo "$(call stage_headers,$(1))" > $$@
$(if $(wildcard $(OUT)/lesson$(1)/headers.list),$(if $(call differ,$(file <$(OUT)/lesson$(1)/headers.list),$(call stage_headers,$(1))),$(file >$(OUT)/lesson$(1)/headers.list,$(call stage_headers,$(1)))))

$(OUT)/lesson$(1)/obj/%.o: %.cpp $(OUT)/lesson$(1)/headers.list
	@mkdir -p $$(@D)
	$$(call step,CXX,lesson$(1),$$<,CPATH=$$(STAGE_CPATH) $$(COMPILE) $$(CPPFLAGS) $$(CXXFLAGS) -c $$< -o $$@)

$(OUT)/lesson$(1)/obj/%.o: %.S $(OUT)/lesson$(1)/headers.list
	@mkdir -p $$(@D)
	$$(call step,AS,lesson$(1),$$<,CPATH=$$(STAGE_CPATH) $$(COMPILE) $$(CPPFLAGS) $$(CXXFLAGS) -c $$< -o $$@)

$(OUT)/lesson$(1)/lib%.so: tests/%.cpp $(OUT)/lesson$(1)/headers.list
	$$(call step,SO,lesson$(1),$$<,CPATH=$$(STAGE_CPATH) $$(CXX) $$(CPPFLAGS) $$(CXXFLAGS) -fPIC -shared $$< -o $$@)

$(OUT)/lesson$(1)/libfib.a: $$(LIB_OBJS_$(1))
	$$(call step,AR,lesson$(1),$$(@F),rm -f $$@ && $$(ARCHIVER) rcs $$@ $$^)

$(OUT)/lesson$(1)/demo: $$(DEMO_OBJS_$(1)) $(OUT)/lesson$(1)/libfib.a
	$$(call step,LINK,lesson$(1),$$(@F),$$(CXX) $$(LDFLAGS) $$^ $$(LDLIBS) -o $$@)

# The tests are compiled once GoogleTest is there (make test installs it), those that use
# it with its precompiled header.
$$(TEST_OBJS_$(1)): | gtest-check
$$(GTEST_OBJS_$(1)): $(PCH).gch
$$(GTEST_OBJS_$(1)): CPPFLAGS += -Winvalid-pch -include $(PCH)
$$(GTEST_OBJS_$(1)): CXXFLAGS += $(TEST_CXXFLAGS)

$(OUT)/lesson$(1)/tests: $$(TEST_OBJS_$(1)) $(OUT)/lesson$(1)/libfib.a $$(TEST_SO_$(1))
	$$(call step,LINK,lesson$(1),$$(@F),$$(CXX) $$(LDFLAGS) $$(TEST_OBJS_$(1)) $(OUT)/lesson$(1)/libfib.a $$(TEST_SO_$(1):%=% -Wl$$(comma)-rpath$$(comma)$$(abspath $$(dir $$(TEST_SO_$(1))))) $$(GTEST_LIBS) $$(LDLIBS) -o $$@)

# A test binary of only the test files in TEST_FILES: scripts/exercises.py builds a break's
# named test this way, not the stage's every test. The other sources the stage's tests are
# built with come from an archive, so that the linker takes only those the files use (a
# helper may call into a test file that is not there). Linked afresh each time, as
# TEST_FILES may differ.
$(OUT)/lesson$(1)/test-helpers.a: $(call objects,$(1),$(filter-out tests/main.cpp %_test.cpp,$(call stage_tests,$(1))))
	$$(call step,AR,lesson$(1),$$(@F),rm -f $$@ && $$(ARCHIVER) rcs $$@ $$^)

$(OUT)/lesson$(1)/tests-only: $(call objects,$(1),tests/main.cpp $(TEST_FILES)) $(OUT)/lesson$(1)/test-helpers.a \
                              $(OUT)/lesson$(1)/libfib.a $$(TEST_SO_$(1)) FORCE
	$$(call step,LINK,lesson$(1),$$(@F),$$(CXX) $$(LDFLAGS) $$(filter %.o %.a,$$^) $$(TEST_SO_$(1):%=% -Wl$$(comma)-rpath$$(comma)$$(abspath $$(dir $$(TEST_SO_$(1))))) $$(GTEST_LIBS) $$(LDLIBS) -o $$@)

# SUITES=own below the last stage: the lesson's own test files only (see SUITES above).
OWN_TEST_OBJS_$(1) := $(call objects,$(1),tests/main.cpp $(filter %_test.cpp,$(call tests_of,$(1))))
$(OUT)/lesson$(1)/tests-own: $$(OWN_TEST_OBJS_$(1)) $(OUT)/lesson$(1)/test-helpers.a \
                             $(OUT)/lesson$(1)/libfib.a $$(TEST_SO_$(1))
	$$(call step,LINK,lesson$(1),$$(@F),$$(CXX) $$(LDFLAGS) $$(filter %.o %.a,$$^) $$(TEST_SO_$(1):%=% -Wl$$(comma)-rpath$$(comma)$$(abspath $$(dir $$(TEST_SO_$(1))))) $$(GTEST_LIBS) $$(LDLIBS) -o $$@)

$(OUT)/lesson$(1)/bench: $$(BENCH_OBJS_$(1)) $(OUT)/lesson$(1)/libfib.a
	$$(call step,LINK,lesson$(1),$$(@F),$$(CXX) $$(LDFLAGS) $$^ $$(LDLIBS) -o $$@)

# Each file stage N compiles includes only headers of its own lesson or earlier
# ones, and never a header that a later lesson of the stage replaced.
$(OUT)/lesson$(1)/layers.ok: $$(LIB_OBJS_$(1)) $$(DEMO_OBJS_$(1)) $$(PROGRAM_OBJS_$(1))
	@scripts/check-layers.py --stage $(1) --headers "$(call stage_headers,$(1))" $$(^:.o=.d)
	@touch $$@

$(OUT)/lesson$(1)/tests-layers.ok: $$(TEST_OBJS_$(1))
	@scripts/check-layers.py --stage $(1) --headers "$(call stage_headers,$(1))" $$(^:.o=.d)
	@touch $$@

$(OUT)/lesson$(1)/bench-layers.ok: $$(BENCH_OBJS_$(1))
	@scripts/check-layers.py --stage $(1) --headers "$(call stage_headers,$(1))" $$(^:.o=.d)
	@touch $$@

.PHONY: lesson$(1) run-lesson$(1) test-lesson$(1) bench-lesson$(1) stage-lesson$(1) diff-lesson$(1)
lesson$(1): $(OUT)/lesson$(1)/demo $(OUT)/lesson$(1)/layers.ok \
            $(addprefix $(OUT)/lesson$(1)/,$(call stage_programs,$(1)))

run-lesson$(1): lesson$(1)
	$(run_prefix)$(OUT)/lesson$(1)/$(or $(RUN_$(1)),demo)

test-lesson$(1): gtest-check $(if $(call own_suites,$(1)),,lesson$(1) $(OUT)/lesson$(1)/tests-layers.ok) $(call test_binary,$(1))
	$$(call run_tests,lesson$(1),$(OUT)/lesson$(1)/tests.log,$(TEST_ENV) timeout $(TEST_TIMEOUT) $(run_prefix)$(call test_binary,$(1))$(if $(call own_suites,$(1)), --gtest_filter='$(call own_suites,$(1))'))
	$(if $(TWICE_$(1)),$$(call run_tests,lesson$(1),$(OUT)/lesson$(1)/tests-twice.log,$(TEST_ENV) $(TWICE_ENV_$(1)) timeout $(TEST_TIMEOUT) $(run_prefix)$(call test_binary,$(1)) --gtest_filter='$(or $(call own_suites,$(1)),$(TWICE_$(1)))',$(TWICE_ENV_$(1))))
	$(if $(strip $(call collect,$(1),COMPILE_FAIL)),$$(call step,CHECK,lesson$(1),code that must not compile,scripts/check-compile-fail.sh "$(CXX) -std=c++20 $(call stage_include,$(1))" $(call collect,$(1),COMPILE_FAIL)))
	$(foreach check,$(call collect,$(1),CHECK_SCRIPTS),$$(call step,CHECK,lesson$(1),$(firstword $(subst =, ,$(check))),$(TEST_ENV) $(subst =, $(OUT)/lesson$(1)/,$(check))$(if $(RUN), --run-with '$(RUN)'))$(recipe_break))

# ROUNDS=3: the bench that many times, and the range of each figure and ratio over them
# (scripts/bench-rounds.sh); SECTIONS="switch manager": only those sections' rows.
bench-lesson$(1): $(OUT)/lesson$(1)/bench $(OUT)/lesson$(1)/bench-layers.ok
	$(if $(filter-out 1,$(ROUNDS)),@scripts/bench-rounds.sh $(ROUNDS) ,)$(run_prefix)$(OUT)/lesson$(1)/bench $(SECTIONS)

# The copy comes with a Makefile that builds stage N alone, with the same flags.
stage-lesson$(1):
	@scripts/stage.py copy --stage $(1) --to $(BUILD_DIR)/stage-lesson$(1) \
	    --flags="$(CXXFLAGS)" --test-flags="$(TEST_CXXFLAGS)" --cpath="$(call stage_cpath,$(1))" --lib "$(call stage_lib,$(1))" \
	    --demo "$(DEMO_$(1))" --tests "$(filter-out $(PROBE_$(1)),$(call stage_tests,$(1)))" \
	    --bench "$(call stage_bench,$(1))" $(foreach f,$(call collect,$(1),FLAGS),--object-flags "$(f)") \
	    --probes "$(call collect,$(1),PROBE)" $(foreach p,$(call stage_programs,$(1)),--program "$(p)=$(call program_srcs,$(1),$(p))") \
	    $(call stage_files,$(1))

diff-lesson$(1):
	@scripts/stage.py diff "$(call stage_files,$(1))" "$(if $(filter 1,$(1)),,$(call stage_files,$(word $(1),0 $(LESSONS))))"

-include $$(LIB_OBJS_$(1):.o=.d) $$(DEMO_OBJS_$(1):.o=.d) $$(TEST_OBJS_$(1):.o=.d) \
         $$(PROGRAM_OBJS_$(1):.o=.d) $$(BENCH_OBJS_$(1):.o=.d)
endef
$(foreach n,$(LESSONS),$(foreach program,$(call stage_programs,$(n)),$(eval $(call PROGRAM,$(n),$(program)))))
$(foreach n,$(LESSONS),$(eval $(call STAGE,$(n))))
$(foreach n,$(LESSONS),$(eval $(call objects,$(n),$(STATIC_TESTED_BY)): CPPFLAGS += -DFIB_STATIC=1))

# The stage's echo server, for the lessons that have one (make echo-server-lesson4).
# The stage's slow_server under load (make bench-slow-lesson8): lesson 8.
define SLOW_SERVER_STAGE
.PHONY: bench-slow-lesson$(1)
bench-slow-lesson$(1): lesson$(1)
	@scripts/bench-slow.sh $(OUT)/lesson$(1)
endef
$(foreach n,$(LESSONS),$(if $(filter slow_server,$(call stage_programs,$(n))),$(eval $(call SLOW_SERVER_STAGE,$(n)))))

# The stage's cluster_echo with 1..N threads under load (make bench-cluster-lesson9): lesson 9.
define CLUSTER_STAGE
.PHONY: bench-cluster-lesson$(1)
bench-cluster-lesson$(1): lesson$(1)
	@scripts/bench-cluster.sh $(OUT)/lesson$(1)
endef
$(foreach n,$(LESSONS),$(if $(filter cluster_echo,$(call stage_programs,$(n))),$(eval $(call CLUSTER_STAGE,$(n)))))

define ECHO_SERVER_STAGE
.PHONY: echo-server-lesson$(1) bench-echo-lesson$(1)
echo-server-lesson$(1): lesson$(1)
	$(run_prefix)$(OUT)/lesson$(1)/echo_server
bench-echo-lesson$(1): lesson$(1)
	@scripts/bench-echo.sh $(OUT)/lesson$(1)
endef
$(foreach n,$(LESSONS),$(if $(filter echo_server,$(call stage_programs,$(n))),$(eval $(call ECHO_SERVER_STAGE,$(n)))))

# The stage's kv_server beside redis-server under redis-benchmark (make bench-redis-lesson13):
# lesson 13. scripts/bench-redis.py installs redis-server and redis-tools when missing.
define KV_SERVER_STAGE
.PHONY: bench-redis-lesson$(1)
bench-redis-lesson$(1): lesson$(1)
	@scripts/bench-redis.py $(OUT)/lesson$(1)/kv_server
endef
$(foreach n,$(LESSONS),$(if $(filter kv_server,$(call stage_programs,$(n))),$(eval $(call KV_SERVER_STAGE,$(n)))))


# ---- Timelines ------------------------------------------------------------------------------
# make timeline-lessonN runs stage N's demo with FIB_TRACE set (lesson 2's trace.hpp) and draws
# the trace with scripts/trace-view.py into lessons/NN-*/timeline.svg, which its README shows.
# TIMELINE_N: the rows and the window to draw (microseconds from the first event of a kind).
TIMELINE_LESSONS := 2 3 4 5 6 7 8 9 10 11
TIMELINE_2  := --fibers 3 --start-at parked --from -2 --until 10
TIMELINE_3  := --fibers 4
TIMELINE_4  := --fibers 10 --start-at spawn --from -20
TIMELINE_5  := --managers 2 --fibers 10 --start-at spawn --until 2000
TIMELINE_6  := --managers 1 --start-at spawn --from -20
TIMELINE_7  := --managers 3 --start-at spawn --from -5
TIMELINE_8  := --fibers 8 --start-at spawn --from -50
TIMELINE_9  := --managers 1,2 --start-at spawn --from -50
TIMELINE_10 := --fibers 12 --start-at spawn --from -20
TIMELINE_11 := --start-at spawn --from -20

define TIMELINE_STAGE
.PHONY: timeline-lesson$(1)
timeline-lesson$(1): lesson$(1)
	FIB_TRACE=$(OUT)/lesson$(1)/trace.json $(run_prefix)$(OUT)/lesson$(1)/demo > /dev/null
	scripts/trace-view.py $(OUT)/lesson$(1)/trace.json -o lessons/$(DIR_$(1))/timeline.svg \
	    --title "Lesson $(1): make timeline-lesson$(1)" $(TIMELINE_$(1))
endef
$(foreach n,$(TIMELINE_LESSONS),$(eval $(call TIMELINE_STAGE,$(n))))
.PHONY: timelines
timelines: $(addprefix timeline-lesson,$(TIMELINE_LESSONS))

# ---- Exercises -------------------------------------------------------------------------------
# A "build it" exercise K of lesson N has a suite, tests/exercises/LNN_exK_<name>_test.cpp,
# and may have files the learner edits, in lessons/NN-*/exercises/exK_<name>/. Each is built
# into an exercise binary of its own against stage N's library (and the sources the stage's
# tests are built with, from an archive: lesson 13's command layer), so one that does not
# compile yet hides no other. `make exercise-lessonN` (EX=K for one) builds and runs them through
# scripts/exercises.py; the reference solutions are lessons/NN-*/solutions/exK_<name>.patch.
exercise_name = $(patsubst L$(call nn,$(1))_%_test.cpp,%,$(notdir $(2)))
define EXERCISE
EXERCISE_OWN_$(1)_$(3) := $(call objects,$(1),$(2) $(wildcard lessons/$(DIR_$(1))/exercises/$(3)/*.cpp lessons/$(DIR_$(1))/exercises/$(3)/*.S))
$$(EXERCISE_OWN_$(1)_$(3)): CPPFLAGS += -Ilessons/$(DIR_$(1))/exercises/$(3) -Itests
$$(EXERCISE_OWN_$(1)_$(3)): | gtest-check
$(call objects,$(1),$(2)): $(PCH).gch
$(call objects,$(1),$(2)): CPPFLAGS += -Winvalid-pch -include $(PCH)
$(call objects,$(1),$(2)): CXXFLAGS += $(TEST_CXXFLAGS)
$(OUT)/lesson$(1)/exercises/$(3): $(OUT)/lesson$(1)/obj/tests/main.o $$(EXERCISE_OWN_$(1)_$(3)) \
                                   $(OUT)/lesson$(1)/test-helpers.a $(OUT)/lesson$(1)/libfib.a
	@mkdir -p $$(@D)
	$$(call step,LINK,lesson$(1),exercises/$(3),$$(CXX) $$(LDFLAGS) $$^ $$(GTEST_LIBS) $$(LDLIBS) -o $$@)
-include $$(EXERCISE_OWN_$(1)_$(3):.o=.d)

endef
$(foreach n,$(LESSONS),$(foreach suite,$(wildcard tests/exercises/L$(call nn,$(n))_ex*_test.cpp),$(eval $(call EXERCISE,$(n),$(suite),$(call exercise_name,$(n),$(suite))))))

# `make break-lessonN EX=K`: once a learner has made "break it" K in the tree, the tests it
# names, built on stage N (not a later stage, which may replace the broken file) and each run
# alone under a 10 s watchdog, so a break that hangs a test shows in seconds; it applies nothing.
define EXERCISE_STAGE
.PHONY: exercise-lesson$(1) break-lesson$(1)
exercise-lesson$(1): gtest-check $(OUT)/lesson$(1)/libfib.a
	@scripts/exercises.py run --lesson $(1) --out $(OUT) $(if $(EX),--only $(EX))
break-lesson$(1): gtest-check
	@scripts/exercises.py break --lesson $(1) --out $(OUT) --only $(or $(EX),0)
endef
$(foreach n,$(LESSONS),$(eval $(call EXERCISE_STAGE,$(n))))

# CI: every suite fails as shipped; every solution passes and every "break it" change makes
# the tests it names fail, each applied to a scratch copy of the tree and its stage's build
# (built here first), side by side.
check-exercises: gtest-check $(foreach n,$(LESSONS),$(OUT)/lesson$(n)/tests)
	@scripts/exercises.py check

# ---- Top-level targets ----------------------------------------------------------------------
# `make test` checks the tree's layering, proves every stage on its own (stage N runs the
# tests of lessons 1..N), then checks that no binary got an executable stack and what the
# assembly tells unwinders and CET.
test: check-tree $(addprefix test-lesson,$(test_stages))
	$(call check_stack,$(foreach n,$(test_stages),$(call test_binary,$(n))))

# Every suite of every lesson (the last stage's test binary has them all) again under
# each seed of SHUFFLE_SEEDS: the ready queue hands out fibers in a seeded order
# (FIB_SCHEDULE_SEED, lesson 2), and a test that expects FIFO order skips itself.
SHUFFLE_SEEDS ?= 1 2 3
test-shuffled: gtest-check $(OUT)/lesson$(LAST_LESSON)/tests
	@for seed in $(SHUFFLE_SEEDS); do \
	    FIB_TEST_SHARDS=$(TEST_SHARDS) scripts/run-tests.sh "TEST  lesson$(LAST_LESSON) FIB_SCHEDULE_SEED=$$seed: " \
	        $(OUT)/lesson$(LAST_LESSON)/tests-shuffled.log env $(TEST_ENV) FIB_SCHEDULE_SEED=$$seed \
	        timeout $(TEST_TIMEOUT) $(run_prefix)$(OUT)/lesson$(LAST_LESSON)/tests || exit 1; done

# The layering rules themselves: the layer check's self-test, replacements that only add,
# and no stage naming what only a later lesson defines; every name the texts quote exists,
# and every exercise's reference patch still applies.
check-tree:
	@scripts/check-layers.py --self-test
	@scripts/check-text.py names
	@scripts/exercises.py applies
	@scripts/check-replacements.py $(foreach n,$(LESSONS),$(call arch_lib_of,$(n),x86_64) \
	    $(call asm_of,$(n),aarch64) $(call headers_of,$(n)))
	@scripts/check-future-names.py $(foreach n,$(LESSONS),"$(call stage_files,$(n))")
	@scripts/check-new-in.py $(foreach n,$(LESSONS),"$(call stage_files,$(n))")

# Every lesson's demo ends by itself, exits 0 and prints what its README shows.
check-text: $(addprefix lesson,$(LESSONS))
	@scripts/check-text.py names
	@for n in $(LESSONS); do \
	    $(OUT)/lesson$$n/demo > $(OUT)/lesson$$n/demo.out 2>&1 || { cat $(OUT)/lesson$$n/demo.out; exit 1; }; \
	    scripts/check-text.py transcript $$n $(OUT)/lesson$$n/demo.out || exit 1; done

# The assembly objects of stage $(1), for the machine built for.
asm_objects = $(call objects,$(1),$(filter %.S,$(call stage_lib,$(1))))
# Every stage's demo and programs, and the test binaries named in $(1).
define check_stack
@scripts/check-gnu-stack.sh $(foreach n,$(demo_stages),$(OUT)/lesson$(n)/demo) $(1) \
    $(foreach n,$(demo_stages),$(addprefix $(OUT)/lesson$(n)/,$(call stage_programs,$(n))))
@CXX=$(CXX) scripts/check-asm.py $(filter %/switch_context.o,$(call asm_objects,$(LAST_LESSON))) \
    $(filter-out %/switch_context.o,$(call asm_objects,$(LAST_LESSON)))
endef
check-stack: all
	$(call check_stack,$(wildcard $(OUT)/lesson*/tests))

# The course as pages (build/docs/index.html): each lesson's README, then its reading order's
# files with their comments as prose beside the code, and the stage diffs.
docs:
	@scripts/docs.py --out $(BUILD_DIR)/docs $(foreach n,$(LESSONS),--stage "$(call stage_files,$(n))")

# The pages parse, every link and anchor resolves, no comment or code line is lost; then a
# headless Chromium renders them (skipped without chromium unless DOCS_REQUIRE_BROWSER=1).
check-docs: docs
	@scripts/check-docs.py $(BUILD_DIR)/docs
	@scripts/docs-browser-check.py $(BUILD_DIR)/docs

# gdb's `bt` inside a fiber must end at context_trampoline (skipped without gdb). With
# ARCH=aarch64 on x86-64: gdb-multiarch, on the demo under qemu-user's gdb stub.
check-backtrace: lesson2
	@$(if $(RUN),RUN="$(RUN)" SYSROOT=$(SYSROOT) )scripts/check-gdb-backtrace.sh $(OUT)/lesson2/demo

# gdb's fiber commands (scripts/fib_gdb.py): info fibers, fiber bt, fiber ID, on the lesson-2
# demo stopped in a fiber, and on the last stage's echo_server attached while it idles in
# epoll_wait (a C frame, where gdb parses C unless the script says C++) with clients parked
# in reads; each then on a core file of it (skipped without gdb).
check-gdb: lesson2 lesson$(LAST_LESSON)
	@scripts/check-gdb.py $(OUT)/lesson2/demo $(OUT)/lesson$(LAST_LESSON)/echo_server

# The last stage's programs: build/lesson$(LAST_LESSON)/echo_server, chat_server, ...
programs: lesson$(LAST_LESSON)

# Benchmarks: never part of make test. See tests/bench/ and scripts/bench-echo.sh.
bench: bench-lesson$(LAST_LESSON)
bench-echo: bench-echo-lesson$(LAST_LESSON)
bench-redis: bench-redis-lesson$(LAST_LESSON)

# The echo_server program serves a line and stops cleanly on SIGINT, on every stage that has one;
# so do co_echo_server, and cluster_echo, with every thread stopped.
check-echo-server: $(foreach n,$(LESSONS),$(if $(filter echo_server cluster_echo co_echo_server,$(call stage_programs,$(n))),lesson$(n)))
	@for server in $(foreach n,$(LESSONS),$(if $(filter echo_server,$(call stage_programs,$(n))),$(OUT)/lesson$(n)/echo_server)) \
	               $(foreach n,$(LESSONS),$(if $(filter co_echo_server,$(call stage_programs,$(n))),$(OUT)/lesson$(n)/co_echo_server)); do \
	    scripts/check-echo-server.sh $$server || exit 1; done
	@$(foreach n,$(LESSONS),$(if $(filter cluster_echo,$(call stage_programs,$(n))),\
	    SUMMARY='SIGINT: connections per thread:( [01])+; 14 bytes echoed' \
	    scripts/check-echo-server.sh $(OUT)/lesson$(n)/cluster_echo &&)) true

# The course's main demo: the last stage's echo server on 127.0.0.1:8001 (talk to it
# with nc 127.0.0.1 8001).
run: echo-server-lesson$(LAST_LESSON)

ifdef CROSS
gtest-check: $(GTEST_LIBS)
$(GTEST_LIBS):
	@$(if $(GTEST_HEADER),,scripts/install-package.sh googletest "GoogleTest's sources, built for ARCH=aarch64")
	@mkdir -p $(@D)
	$(call step,CXX,gtest,gtest-all.cc,$(COMPILE) -std=c++20 -O2 -isystem $(GTEST_SOURCES)/include -I$(GTEST_SOURCES) \
	    -c $(GTEST_SOURCES)/src/gtest-all.cc -o $(@D)/gtest-all.o)
	$(call step,AR,gtest,$(@F),rm -f $@ && $(ARCHIVER) rcs $@ $(@D)/gtest-all.o)
else
gtest-check:
ifeq ($(GTEST_HEADER),)
	@scripts/install-package.sh libgtest-dev "GoogleTest, which the tests are written in"
endif
endif

clean:
	rm -rf build

print-lessons:
	@echo $(LESSONS)

# The times are measured on the course's 2-core VM (Intel Xeon, Linux 6.18), from a clean
# tree and an empty compiler cache unless they say otherwise.
help:
	@echo "Every target uses all cores unless given -j, and prints one line per step; V=1 prints"
	@echo "the full commands. make test installs GoogleTest and ccache when they are missing."
	@echo ""
	@echo "make                  build every stage, its demo and its programs (build/lessonN/)"
	@echo "make lessonN          build stage N from lessons 1..N only (N = $(LESSONS))"
	@echo "make run-lessonN      run stage N's demo (stage 13: start kv_server on port 6380)"
	@echo "make test-lessonN     run the tests of lessons 1..N against stage N"
	@echo "make bench-lessonN    the benchmark rows of lessons 1..N, on stage N (about 25 s for"
	@echo "                      N=1, 45 s for N=6, 90 s for N=7, 2 min for N=8, 2.5 min for N=9,"
	@echo "                      3.5 min for N=10); ROUNDS=3 runs it 3 times and prints each"
	@echo "                      figure's and ratio's range over them; SECTIONS=\"switch ...\" some rows"
	@echo "make exercise-lessonN the suites of lesson N's exercises (EX=K for one); each fails until solved"
	@echo "make break-lessonN EX=K  after you made \"break it\" K of lesson N: its tests on stage N,"
	@echo "                      each under a 10 s watchdog; says whether they fail as they should"
	@echo "make stage-lessonN    write stage N's files alone into build/stage-lessonN/, with a Makefile"
	@echo "make diff-lessonN     what stage N adds and changes against stage N-1, as a unified diff"
	@echo "make echo-server-lessonN  start stage N's echo server on 127.0.0.1:8001 (N >= 4)"
	@echo "make bench-echo-lessonN   stage N's echo servers under load (N >= 4; about 100 s for"
	@echo "                      N=4, 3.5 min for N=5 to 9, 5 min for N=10, 11 min for N=11;"
	@echo "                      ROUNDS=3, CONFIGS=\"1 64,100 16384\", SERVERS=\"epoll uring\" do less)"
	@echo "make bench-slow-lessonN  stage N's slow_server under load, its blocking work inline and"
	@echo "                      offloaded, in 5 rounds (N >= 8; about 50 s; ROUNDS=N)"
	@echo "make bench-cluster-lessonN  stage N's cluster_echo with 1 and 2 threads, at three CPU"
	@echo "                      costs per read, in 5 rounds (N >= 9; about 100 s; ROUNDS=N)"
	@echo "make bench-redis-lessonN  stage N's kv_server beside redis-server under redis-benchmark,"
	@echo "                      3 rounds of each row (N >= 13; 80 s on a quiet VM, 3.5 min on a busy one;"
	@echo "                      ROUNDS=N; BENCH_SCALE=0.1 does a tenth, in about 15 s)"
	@echo "make timeline-lessonN stage N's demo traced (FIB_TRACE), drawn into lessons/NN-*/timeline.svg"
	@echo "                      by scripts/trace-view.py (N >= 2; lesson 2's APPENDIX.md says how)"
	@echo "make timelines        every stage's timeline.svg"
	@echo "make run              start the last stage's echo server on 127.0.0.1:8001"
	@echo "make test             check the tree's layering, then every test of every stage"
	@echo "                      (about 12 min, building every stage; after an edit of one"
	@echo "                      library source, make test-lesson6 takes about 20 s)"
	@echo "make SAN=1 test       the same tests under AddressSanitizer + UBSan, in build/san/"
	@echo "                      (about 10 to 12 min, building every stage; SUITES=own: each stage"
	@echo "                      below the last builds and runs only its own lesson's suites, and one"
	@echo "                      whose lesson's files all reach the last stage is left out, as CI does)"
	@echo "make TSAN=1 test-lesson12  lessons 1-12's tests under ThreadSanitizer, in build/tsan/ (any"
	@echo "                      test-lessonN; 8-12 cross threads; about 4 min from scratch, in CI)"
	@echo "make ARCH=aarch64 test-lessonN  (on x86-64) stage N cross-built for arm64 into"
	@echo "                      build/aarch64/, its tests run under qemu-user; also run-lessonN,"
	@echo "                      check-backtrace (on an arm64 machine plain make does the same, natively);"
	@echo "                      from an empty cache about 2 min for N=2, 9 min for N=6"
	@echo "make STATIC=1 test-lesson7  lessons 1-7's tests linked statically, in build/static/"
	@echo "                      (about 1 min after make test)"
	@echo "make test-shuffled    every suite again under FIB_SCHEDULE_SEED=1 2 3 (SHUFFLE_SEEDS=...):"
	@echo "                      fibers run in a seeded order; FIFO-order tests skip (about 2 min)"
	@echo "make check-text       every name the texts quote exists; every demo prints what its README shows;"
	@echo "                      every ratio or time in a Measured section is a range or names its command"
	@echo "make check-exercises  every exercise fails as shipped and passes with its solution; every"
	@echo "                      \"break it\" change fails the test it names (CI; a scratch copy of the"
	@echo "                      tree for each; about 2 min after make test)"
	@echo "make bench            bench-lesson$(LAST_LESSON): the whole table (about 3.5 min)"
	@echo "make bench-echo       bench-echo-lesson$(LAST_LESSON) (about 11 min)"
	@echo "make bench-redis      bench-redis-lesson$(LAST_LESSON)"
	@echo "make check-stack      check that no built binary has an executable stack, and the"
	@echo "                      assembly's CET or BTI note and unwind rows (scripts/check-asm.py)"
	@echo "make check-backtrace  check that gdb's bt inside a fiber ends at the trampoline"
	@echo "make check-gdb        check gdb's info fibers, fiber bt and fiber ID (scripts/fib_gdb.py)"
	@echo "                      on lesson 2's demo and the idle echo_server, live and from a core file"
	@echo "make check-echo-server  echo a line through each stage's echo_server (and cluster_echo,"
	@echo "                      co_echo_server), stop it with SIGINT"
	@echo "make docs             the course as pages, prose beside code: open build/docs/index.html"
	@echo "                      (a few seconds)"
	@echo "make check-docs       make docs, then check every page, link, comment and code line, and"
	@echo "                      render pages in headless Chromium (about 15 s; DOCS_REQUIRE_BROWSER=1:"
	@echo "                      fail if chromium is not installed)"
	@echo "make clean            remove build/ (ccache keeps its cache: ccache -C empties it)"
