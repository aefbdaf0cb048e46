// L02_big_frame.hpp — lesson 2 tests: see L02_big_frame.cpp.
#pragma once

// Has a 16 KiB frame and writes its lowest byte first.
[[gnu::noinline]] void touch_a_big_frame(volatile char* sink);
