// main.cpp — lesson 1 demo: two contexts on two stacks take turns, then main returns.
//
// There is no scheduler yet. Each context knows who comes next and calls
// switch_context itself. Each line printed says whose turn it is and how deep
// into its own stack that code is running, so you can see the stacks alternate.
#include <cstdint>
#include <cstdio>
#include <initializer_list>

#include "fib/context.hpp"
#include "fib/sanitizer.hpp"
#include "fib/stack.hpp"

namespace {

constexpr int kTurns = 3;

// One participant: its saved context, its stack (main's is the thread's own),
// and what AddressSanitizer must know of that stack (see fib/sanitizer.hpp).
struct Player {
    const char* name;
    const char* stack_name;
    fib::Context context;
    fib::Stack stack;
    fib::sanitizer::StackRecord asan;
};

Player main_player{"main", "the thread's own stack", {}, {},
                   fib::sanitizer::record_of_this_thread()};
Player ping{"ping", "ping's stack", {}, fib::Stack(fib::Stack::kDefaultSize), {}};
Player pong{"pong", "pong's stack", {}, fib::Stack(fib::Stack::kDefaultSize), {}};

// Switch from one player to another; returns when some player switches back.
void switch_to(Player& from, Player& to) {
    fib::sanitizer::switch_announced(&from.context, from.asan, &to.context, to.asan,
                                     reinterpret_cast<std::uintptr_t>(&to));
}

// Which stack an address lies on: this is how the demo shows, rather than
// claims, that each player runs on a stack of its own.
const char* stack_of(const void* address) {
    for (const Player* player : {&ping, &pong}) {
        if (address >= player->stack.bottom() && address < player->stack.top())
            return player->stack_name;
    }
    return main_player.stack_name;
}

// The entry function of both ping and pong: `arg` is the Player itself,
// delivered by switch_context in rdi. It never returns: the last turn switches
// back to main for good.
void play(std::uintptr_t arg) {
    Player& self = *reinterpret_cast<Player*>(arg);
    fib::sanitizer::finish_switch(nullptr, nullptr, nullptr);  // ASan: we arrived
    Player& other = (&self == &ping) ? pong : ping;
    for (int turn = 1; turn <= kTurns; ++turn) {
        char local;  // lives in this frame, on whatever stack we run on
        std::printf("%s: turn %d, running on %s\n", self.name, turn, stack_of(&local));
        switch_to(self, &self == &pong && turn == kTurns ? main_player : other);
    }
    // Never reached: after its last turn pong switches to main, and main never
    // switches back. Had we returned, the trampoline would stop the program.
}

}  // namespace

int main() {
    for (Player* player : {&ping, &pong}) {
        fib::prepare_context(player->context, player->stack.top(), play);
        player->asan = fib::sanitizer::record_of(player->stack);
    }
    char local;
    std::printf("main: running on %s; ping and pong have %zu bytes each\n",
                stack_of(&local), ping.stack.size());
    switch_to(main_player, ping);
    std::printf("main: back on %s after %d turns each\n", stack_of(&local), kTurns);
    return 0;
}
