// line_lengths.hpp — lesson 4, exercise 2: a server connection that answers each line
// with its length.
//
//   client sends  "hello\nworld!\n"     it gets back  "5\n6\n"
//
// A line ends at '\n' (not counted in its length). The bytes of a line may come in
// several reads ("hel", "lo\nwor", "ld!\n"), and one read may hold several lines.
// At end of file, bytes after the last '\n' are not a line and get no answer.
#pragma once

// Serves one connection on the non-blocking socket `fd` until the peer closes its
// side, through fib::io (so that other fibers run while it waits). Does not close fd.
void answer_line_lengths(int fd);
