// gtest_pch.hpp — GoogleTest's header, precompiled once per build kind (the Makefile's
// $(OUT)/pch/) and put in front of every test file with -include: parsing it took 1.4 s of
// each test file's 2 to 6 s of compiling (make stage-lessonN's Makefile does the same, in
// its build/pch/). Every test file includes <gtest/gtest.h> itself too, so what a test file
// sees is the same with it or without it.
#include <gtest/gtest.h>
