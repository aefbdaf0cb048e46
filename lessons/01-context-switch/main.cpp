// main.cpp — lesson 1 demo: two contexts on two stacks take turns, then main returns.
//
// There is no scheduler yet. Each context knows who comes next and calls
// switch_context itself. Each line printed says whose turn it is and how deep
// into its own stack that code is running, so you can see the stacks alternate.
#include <cstdint>
#include <cstdio>

#include "fib/context.hpp"
#include "fib/sanitizer.hpp"
#include "fib/stack.hpp"

namespace {

constexpr int kTurns = 3;

// One participant: its saved context, its stack (main's is the thread's own),
// and ASan's bookkeeping for it.
struct Player {
    const char* name;
    fib::Context context;
    fib::Stack stack;
    void* fake_stack = nullptr;  // used only under AddressSanitizer
};

Player main_player{"main", {}, {}};
Player ping{"ping", {}, fib::Stack(fib::Stack::kDefaultSize)};
Player pong{"pong", {}, fib::Stack(fib::Stack::kDefaultSize)};

// Switch from one player to another, telling AddressSanitizer (a no-op in a
// normal build). `to` finishes the handshake when it resumes.
void switch_to(Player& from, Player& to) {
    fib::sanitizer::start_switch(&from.fake_stack, to.stack ? to.stack.bottom() : nullptr,
                                 to.stack.size());
    switch_context(&from.context, &to.context, reinterpret_cast<std::uintptr_t>(&to));
    fib::sanitizer::finish_switch(from.fake_stack, nullptr, nullptr);
}

// How far below the top of its stack the caller is running, in bytes.
long depth(const Player& player) {
    char here;
    return static_cast<char*>(player.stack.top()) - &here;
}

// The entry function of both ping and pong: `arg` is the Player itself,
// delivered by switch_context in rdi. It never returns: the last turn switches
// back to main for good.
void play(std::uintptr_t arg) {
    Player& self = *reinterpret_cast<Player*>(arg);
    fib::sanitizer::finish_switch(nullptr, nullptr, nullptr);
    Player& other = (&self == &ping) ? pong : ping;
    for (int turn = 1; turn <= kTurns; ++turn) {
        std::printf("%s: turn %d, on its own stack, %ld bytes below the top\n", self.name, turn,
                    depth(self));
        switch_to(self, &self == &pong && turn == kTurns ? main_player : other);
    }
    // Never reached: after its last turn pong switches to main, and main never
    // switches back. Had we returned, the trampoline would stop the program.
}

}  // namespace

int main() {
    fib::prepare_context(ping.context, ping.stack.top(), play);
    fib::prepare_context(pong.context, pong.stack.top(), play);
    std::printf("main: two stacks of %zu bytes, each with a guard page; switching to ping\n",
                ping.stack.size());
    switch_to(main_player, ping);
    std::printf("main: back on the thread's own stack after %d turns each\n", kTurns);
    return 0;
}
