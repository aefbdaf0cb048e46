// fiber_record.cpp — lesson 2: naming a fiber in messages.
#include "fib/fiber_record.hpp"

#include <cinttypes>
#include <cstdio>

namespace fib {

FiberLabel label(const FiberRecord& fiber) {
    FiberLabel result;
    if (fiber.name[0] != '\0')
        std::snprintf(result.text, sizeof result.text, "fiber %" PRIu64 " (%s)", fiber.id,
                      fiber.name);
    else
        std::snprintf(result.text, sizeof result.text, "fiber %" PRIu64, fiber.id);
    return result;
}

}  // namespace fib
