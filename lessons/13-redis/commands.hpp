// commands.hpp — lesson 13: Redis's commands, looked up by name, checked for arity, run on a Keyspace.
//
//   kv::Store store;                             // one per server thread
//   kv::Session session;                         // one per client
//   std::string out;
//   kv::execute({"SET", "k", "v"}, store, session, kv::clock_now(), out);   // out: "+OK\r\n"
//
// execute() finds the command's entry in the table (its name in any case,
// as Redis takes it), checks the argument count against the entry's arity,
// and runs its handler, which appends exactly one reply to `out`. A mistake
// of the client's is a reply, never an exception: an unknown command, a
// wrong count, a wrong type, a number that is not one; each with the very
// text Redis sends, so that a client's error handling sees what it expects.
//
// A handler is given a Call: the arguments, the store (the keyspace and
// what the clients share), the clock read once for the whole command, the
// reply, and the Session, which is the state of the client's connection that
// commands read and change (session.hpp). A handler may park its fiber:
// BLPOP waits there for a push, SAVE for the thread that writes the file.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "keyspace.hpp"
#include "reply.hpp"
#include "resp.hpp"
#include "session.hpp"
#include "store.hpp"

namespace kv {

// One command being run.
struct Call {
    const resp::Command& arguments;  // [0] is the name, as the client spelled it
    Store& store;
    Keyspace& keyspace;              // store.keyspace
    Session& session;
    resp::Reply& reply;
    TimePoint now;
};

using Handler = void (*)(Call& call);

// Where a command's keys are among its arguments, as Redis's legacy key
// specs say (firstkey, lastkey, step): GET 1,1,1; MSET 1,-1,2 (every other
// argument from the first); BLPOP 1,-2,1 (all but the timeout). A last
// below zero counts from the end. No keys: first is 0. The per-core
// variant (store.hpp's Router) finds a command's thread from its keys; a
// command about the whole keyspace (KEYS, DBSIZE, FLUSHALL) or every client
// (PUBLISH) goes to every thread.
struct KeySpec {
    int first = 0;
    int last = 0;
    int step = 0;
    bool every_thread = false;
};

// An entry of the command table. A container (CONFIG, CLIENT, COMMAND) has
// subcommands, chosen by the second argument; its handler runs when it is
// given none (COMMAND alone); one whose arity is -2 or less needs none.
struct CommandSpec {
    // Lower case, as Redis names commands in its errors: "get", and a
    // subcommand with its container's name: "config|get".
    std::string_view name;
    // Redis's: the name counts; N > 0 means exactly N arguments, -N at least N.
    int arity;
    Handler handler;
    KeySpec keys = {};
    std::span<const CommandSpec> subcommands = {};
    bool blocks = false;  // may park until another client acts (BLPOP)
};

// The positions of a command's keys in `command`, by its spec.
std::vector<std::size_t> key_positions(const CommandSpec& spec, const resp::Command& command);

// Runs `command` and appends its one reply to `out`, then serves the clients
// blocked on the lists it pushed to. `command` has at least its name. `out`
// must be the same string object while the command runs (a handler that
// parks appends after the park).
void execute(const resp::Command& command, Store& store, Session& session, TimePoint now, std::string& out);

// execute() without asking store.router: for a Router running a command on
// the thread that holds its keys.
void execute_here(const resp::Command& command, Store& store, Session& session, TimePoint now, std::string& out);

// The table of commands, containers included (their subcommands not counted).
std::span<const CommandSpec> command_table();

}  // namespace kv
