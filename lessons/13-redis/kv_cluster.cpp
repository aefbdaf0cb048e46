// kv_cluster.cpp — lesson 13: forwarding a command to the thread that holds its keys, and merging every thread's reply.
#include "kv_cluster.hpp"

#include <sys/eventfd.h>

#include <cerrno>
#include <exception>
#include <functional>
#include <future>
#include <string>
#include <system_error>

#include "../09-cluster/sharded.hpp"
#include "fib/cancel.hpp"
#include "fib/tcp.hpp"

std::size_t thread_of(std::string_view key, std::size_t threads) {
    const std::size_t open = key.find('{');
    if (open != std::string_view::npos) {
        const std::size_t close = key.find('}', open + 1);
        if (close != std::string_view::npos && close > open + 1) key = key.substr(open + 1, close - open - 1);
    }
    return std::hash<std::string_view>{}(key) % threads;
}

// One command run on another thread: the reply comes back in `reply`, and
// `done` is set there once it is written. Lives in the waiting fiber's frame,
// which waits for `done` whatever happens (shielded from cancels): the
// posted fiber writes into it.
struct ShardRouter::Forwarded {
    const resp::Command* command = nullptr;
    kv::Store* store = nullptr;
    std::string reply;
    std::unique_ptr<fib::Event> done;
    bool posted = false;
};

ShardRouter::ShardRouter(fib::Cluster& cluster, std::span<kv::Store* const> stores, std::size_t self)
    : cluster_(cluster), stores_(stores), self_(self) {}

namespace {

// The command on this thread's store, with a Session of its own: the
// client's connection is on another thread. An exception must not escape (a
// posted fiber's would stop the program, and the waiting side must always
// get its reply): it becomes the client's error reply.
void run_here(const resp::Command& command, kv::Store& store, std::string& reply) {
    try {
        kv::Session remote;
        kv::execute_here(command, store, remote, kv::clock_now(), reply);
    } catch (const std::exception& error) {
        reply = std::string("-ERR ") + error.what() + "\r\n";
    }
}

}  // namespace

void ShardRouter::start(Forwarded& job, std::size_t thread) {
    if (spare_events_.empty()) spare_events_.push_back(std::make_unique<fib::Event>());
    job.done = std::move(spare_events_.back());
    spare_events_.pop_back();
    job.store = stores_[thread];
    ++forwarded_;
    job.posted = cluster_.post(thread, [&job] {
        run_here(*job.command, *job.store, job.reply);
        job.done->set();
    });
    if (!job.posted) job.reply = "-ERR the server is stopping\r\n";
}

void ShardRouter::finish(Forwarded& job) {
    if (job.posted) {
        fib::CancelShield shield;
        job.done->wait();
    }
    spare_events_.push_back(std::move(job.done));
}

bool ShardRouter::route(const kv::CommandSpec& spec, const resp::Command& command, kv::Session& session,
                        std::string& out) {
    if (spec.keys.every_thread) {
        run_everywhere(command, out);
        return true;
    }
    const std::vector<std::size_t> positions = kv::key_positions(spec, command);
    if (positions.empty()) return false;
    const std::size_t thread = thread_of(command[positions[0]], stores_.size());
    for (const std::size_t position : positions) {
        if (thread_of(command[position], stores_.size()) != thread) {
            out += "-CROSSSLOT Keys in request don't hash to the same slot\r\n";
            return true;
        }
    }
    if (thread == self_) return false;
    if (spec.blocks) session.flush();
    Forwarded job;
    job.command = &command;
    start(job, thread);
    finish(job);
    out += job.reply;
    return true;
}

namespace {

// Every thread's reply to one command, as one: the first error if any;
// integers summed (DBSIZE, PUBLISH); arrays joined (KEYS); else the first
// (FLUSHALL's and SAVE's +OK).
std::string merged(const std::vector<std::string>& replies) {
    for (const std::string& reply : replies)
        if (reply.starts_with('-')) return reply;
    const char type = replies[0].empty() ? '?' : replies[0][0];
    if (type != ':' && type != '*') return replies[0];
    long long total = 0;
    std::string bodies;
    for (const std::string& reply : replies) {
        const std::size_t line_end = reply.find("\r\n");
        total += std::stoll(reply.substr(1, line_end - 1));
        bodies += reply.substr(line_end + 2);
    }
    return std::string(1, type) + std::to_string(total) + "\r\n" + bodies;
}

}  // namespace

// Posted to every other thread first, then run here, then waited for: the
// threads work at once.
void ShardRouter::run_everywhere(const resp::Command& command, std::string& out) {
    std::vector<Forwarded> jobs(stores_.size());
    for (std::size_t thread = 0; thread < stores_.size(); ++thread) {
        jobs[thread].command = &command;
        if (thread != self_) start(jobs[thread], thread);
    }
    run_here(command, *stores_[self_], jobs[self_].reply);
    std::vector<std::string> replies;
    for (std::size_t thread = 0; thread < stores_.size(); ++thread) {
        if (thread != self_) finish(jobs[thread]);
        replies.push_back(std::move(jobs[thread].reply));
    }
    out += merged(replies);
}

KvCluster::KvCluster(const KvOptions& options, std::size_t threads, const char* backend)
    : options_(options), served_(threads), cluster_({.threads = threads, .backend = backend}) {
    for (std::size_t i = 0; i < threads; ++i) stores_.push_back(owned_.emplace_back(std::make_unique<kv::Store>()).get());
    listeners_ = listen_on_every_thread(options.bind, options.port, threads);
    port_ = fib::tcp::local_port(listeners_[0].get());
}

KvCluster::~KvCluster() { stop(); }

void KvCluster::start() {
    cluster_.start([this](std::size_t index) { serve(index); });
}

void KvCluster::stop() {
    if (stopped_) return;
    stopped_ = true;
    cluster_.stop();
    cluster_.join();
}

std::size_t KvCluster::blocked_clients() {
    std::size_t total = 0;
    for (std::size_t thread = 0; thread < stores_.size(); ++thread) {
        std::promise<std::size_t> count;
        kv::Store* const store = stores_[thread];
        if (!cluster_.try_post(thread, [&count, store] { count.set_value(store->blocked.waiters()); })) continue;
        total += count.get_future().get();
    }
    return total;
}

// Thread `index`'s main: its server, until Cluster::stop() cancels this fiber.
void KvCluster::serve(std::size_t index) {
    KvOptions own = options_;
    own.snapshot_path += "." + std::to_string(index);
    ShardRouter router(cluster_, stores_, index);
    stores_[index]->router = &router;
    KvServer server(own, *stores_[index], std::move(listeners_[index]));
    const fib::UniqueFd never(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));  // nothing writes it
    if (!never) throw std::system_error(errno, std::generic_category(), "eventfd");
    server.serve(never.get());
    stores_[index]->router = nullptr;
    served_[index] = server.clients_served();
}
