// L04_connection_bench.cpp — make bench, lesson 4: resident memory per idle connection.
//
//   conn_rss   10,000 idle connections to an echo server running in a child
//              process (fork): growth of the child's RSS, divided by 10,000.
//              Each connection echoed one byte first, so the read and write
//              paths of its fiber have both touched their stack pages.
// Kernel memory (socket buffers, page tables) is not in RSS and not counted.
// The measuring is in L04_idle_connections.hpp.
#include <cstdio>
#include <string>
#include <vector>

#include "../../lessons/04-echo-server/echo_server.hpp"
#include "L04_idle_connections.hpp"
#include "bench.hpp"

namespace bench {
namespace {

constexpr int kMemoryRepetitions = 5;
constexpr long kConnections = 10'000;

void connection_costs(std::vector<Figure>& figures) {
    std::vector<double> per_connection;
    if (!idle::raise_fd_limit(kConnections + 100)) {
        std::printf("conn_rss skipped: %ld connections need a hard RLIMIT_NOFILE above %ld\n",
                    kConnections, kConnections + 100);
        return;
    }
    for (int i = 0; i < kMemoryRepetitions; ++i)
        per_connection.push_back(idle::rss_per_idle_connection<EchoServer>(kConnections));
    Figure connection{"conn_rss", summarize(per_connection), "bytes"};
    connection.repetitions = kMemoryRepetitions;
    connection.compared = std::to_string(kConnections) + " idle echo connections, one fiber each";
    connection.result_extra = " conns=" + std::to_string(kConnections);
    figures.push_back(connection);
}

[[maybe_unused]] const bool registered[] = {
    add(Section{"connections", 4, true, connection_costs}),
    add(Target{"conn_rss, bytes per idle connection (<= 16384)", "conn_rss", nullptr, false, 16384}),
};

}  // namespace
}  // namespace bench
