// snapshot.cpp — lesson 13: SAVE's snapshot, made on the server's thread and written by a worker.
#include "snapshot.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <stdexcept>
#include <system_error>
#include <variant>
#include <vector>

#include "commands.hpp"
#include "fib/offload.hpp"
#include "fib/unique_fd.hpp"
#include "handlers.hpp"

namespace kv {

std::string snapshot_of(Keyspace& keyspace, TimePoint now) {
    std::vector<std::string> keys;
    keyspace.for_each_live_key(now, [&](const std::string& key) { keys.push_back(key); });
    std::string bytes;
    resp::Reply request(bytes);
    for (const std::string& key : keys) {
        Value* const value = keyspace.find(key, now);
        if (const std::string* text = std::get_if<std::string>(value)) {
            request.array(3);
            request.bulk("SET");
            request.bulk(key);
            request.bulk(*text);
        } else {
            const List& list = *list_of(value);
            request.array(2 + list.size());
            request.bulk("RPUSH");
            request.bulk(key);
            for (const std::string& element : list) request.bulk(element);
        }
        if (const auto when = keyspace.expiry(key, now)) {
            request.array(3);
            request.bulk("PEXPIRE");
            request.bulk(key);
            request.bulk(std::to_string(std::max<long long>(1, (*when - now).count())));
        }
    }
    return bytes;
}

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::system_error(errno, std::generic_category(), what); }

}  // namespace

void write_file_atomically(const std::string& path, const std::string& bytes) {
    const std::string temporary = path + ".tmp";
    fib::UniqueFd file(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!file) fail("open " + temporary);
    for (std::size_t written = 0; written < bytes.size();) {
        const ssize_t n = ::write(file.get(), bytes.data() + written, bytes.size() - written);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail("write " + temporary);
        written += static_cast<std::size_t>(n);
    }
    if (::fsync(file.get()) != 0) fail("fsync " + temporary);
    file.reset();
    if (::rename(temporary.c_str(), path.c_str()) != 0) fail("rename " + temporary);
}

std::size_t load_snapshot(const std::string& path, Store& store) {
    fib::UniqueFd file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!file) {
        if (errno == ENOENT) return 0;
        fail("open " + path);
    }
    resp::RequestParser parser;
    Session loader;
    std::size_t requests = 0;
    std::vector<char> buffer(64 * 1024);
    for (;;) {
        const ssize_t n = ::read(file.get(), buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail("read " + path);
        if (n == 0) break;
        parser.feed({buffer.data(), static_cast<std::size_t>(n)});
        while (auto request = parser.next()) {
            std::string reply;
            execute(*request, store, loader, clock_now(), reply);
            if (reply.starts_with("-")) throw std::runtime_error(path + ": " + reply.substr(1, reply.find('\r') - 1));
            ++requests;
        }
        if (parser.failed()) throw std::runtime_error(path + ": not a snapshot: " + parser.error_reply());
    }
    return requests;
}

// SAVE: the bytes here, the file on a worker (on this thread when the server
// has no pool). An error is the client's reply; the old file stays.
void save_command(Call& call) {
    auto write = [bytes = snapshot_of(call.keyspace, call.now), path = call.store.snapshot_path] {
        write_file_atomically(path, bytes);
    };
    try {
        call.store.pool ? fib::offload(*call.store.pool, std::move(write)) : write();
    } catch (const std::system_error& error) {
        if (error.code() == std::errc::operation_canceled) throw;
        return call.reply.error(std::string("ERR ") + error.what());
    }
    call.reply.ok();
}

}  // namespace kv
