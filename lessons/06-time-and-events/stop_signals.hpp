// stop_signals.hpp — lesson 6: SIGINT and SIGTERM as an fd the Waiter watches (signalfd).
//
//   int stop_fd = stop_signal_fd();   // first thing in main, before any thread starts
//   server.serve(stop_fd);            // returns once a signal has made stop_fd readable
//   stop_signal_fd_name(stop_fd);     // "SIGINT"
//
// Lesson 4's programs caught the signals with a handler that wrote into a
// pipe (the self-pipe trick). A signalfd needs no handler: the signals are
// blocked, so they stay pending, and the kernel makes the signalfd readable
// while one is. The Waiter sees it like any socket: shutdown is one more
// wake-up, and no code runs at an arbitrary moment in between.
#pragma once

// Blocks SIGINT and SIGTERM in the calling thread (threads started after
// inherit that) and returns a non-blocking signalfd for them. Exits with a
// message if it cannot.
int stop_signal_fd();

// "SIGINT" or "SIGTERM", read from the signalfd (which consumes the signal).
const char* stop_signal_fd_name(int stop_fd);
