// brpoplpush.hpp — lesson 13, exercise 4: BRPOPLPUSH, a reliable queue's blocking take.
//
//   BRPOPLPUSH jobs working 0     the last element of jobs, moved to the head of
//                                 working, and replied; if jobs is empty, the
//                                 client blocks until a push to jobs serves it
//
// A worker that takes a job with BRPOP loses it if it dies before the job is
// done; with BRPOPLPUSH the job stays in a "working" list until the worker
// removes it. Build it from what the lesson has: the plain case as RPOP then
// LPUSH in one command; the blocked case as BRPOP does it (blocking.hpp: a
// Waiter on the source, wait_to_be_served, and the element it is handed);
// then the push to the destination, which may itself serve a client blocked
// on the destination (BlockedLists::pushed). Replies, as Redis's: the element
// moved as a bulk; a null bulk on a timeout; WRONGTYPE when the source or the
// destination holds a string (checked before anything is popped); the
// timeout's errors as BLPOP's (timeout_argument in handlers.hpp).
#pragma once

#include "../../handlers.hpp"

namespace exercise {

// As shipped: refuses. execute() would check the arity (exactly 4) first.
inline void brpoplpush_command(kv::Call& call) { call.reply.error("ERR BRPOPLPUSH is not built yet"); }

}  // namespace exercise
