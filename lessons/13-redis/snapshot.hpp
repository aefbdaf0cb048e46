// snapshot.hpp — lesson 13: SAVE, the keys written to a file as the commands that make them again.
//
//   SAVE                  +OK once the file is written; the other clients are served meanwhile
//   kv_server --snapshot FILE    loads FILE at start, if it is there
//
// Redis's SAVE writes an RDB file and blocks every client while it does;
// its BGSAVE forks, and the child writes what the parent's memory held at
// the fork. Here the keys are first turned into bytes on the server's
// thread (the copy, which stands for the fork's copy of the page tables:
// the time it takes is the time the server stops), then a worker of lesson
// 8's ThreadPool writes them, syncs the file and renames it over the old
// one, while the thread serves. The SAVE client's fiber waits in offload().
//
// The format is RESP itself: each key as the request that makes it again
// (SET k v, RPUSH k e1 e2 ..., then PEXPIRE k ms for a key with an expiry),
// so the loader is the request parser and execute(), and
// `redis-cli --pipe < FILE` loads it into a real Redis. An expiry is kept as
// the time it had left when saved: time that passes while no server runs is
// not counted, where an RDB file keeps absolute Unix times.
#pragma once

#include <cstddef>
#include <string>

#include "store.hpp"

namespace kv {

// The requests that make every live key of `keyspace` again.
std::string snapshot_of(Keyspace& keyspace, TimePoint now);

// Writes `bytes` to `path` through a temporary file, fsync and rename: a
// crash leaves the old file or the new one, never half of one. Throws
// std::system_error.
void write_file_atomically(const std::string& path, const std::string& bytes);

// Runs the requests in the file at `path` against `store`; how many. 0 if
// there is no file. Throws std::runtime_error for a file that is not RESP,
// or a request that fails.
std::size_t load_snapshot(const std::string& path, Store& store);

}  // namespace kv
