// main.cpp — lesson 12 demo: structured concurrency (work in progress).
#include <cstdio>

int main() {
    std::puts("lesson 12");
    return 0;
}
