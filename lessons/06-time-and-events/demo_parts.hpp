// demo_parts.hpp — lesson 6 demo: its parts, each on a FiberManager and Waiter of its own.
// Each prints what it saw and returns whether that was what it should be.
#pragma once

bool event_demo();     // main.cpp: an Event set by a worker thread wakes a fiber
bool timers_demo();    // demo_timers.cpp: sleeps, wait_for, wait_any
bool cancel_demo();    // demo_cancel.cpp: three blocked fibers cancelled
bool chat_demo();      // demo_chat.cpp: three clients in the chat room
