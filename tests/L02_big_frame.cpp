// L02_big_frame.cpp — lesson 2 tests: a function with a 16 KiB frame, built without stack-clash
// protection (the Makefile gives this file -fno-stack-clash-protection), as code built with
// Debian's default flags is. Its frame is made by one `sub` from rsp, and its first write lands
// 16 KiB lower, with no probe of the pages in between: a frame that begins near the bottom of
// a fiber's stack jumps over a one-page guard.
#include "L02_big_frame.hpp"

void touch_a_big_frame(volatile char* sink) {
    volatile char frame[16 * 1024];
    frame[0] = *sink;  // the frame's lowest byte, written first
    *sink = frame[0];
}
