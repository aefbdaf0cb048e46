// timeout_flags.cpp — lesson 6: parsing --idle-timeout and --write-timeout.
#include "timeout_flags.hpp"

#include <cstdlib>
#include <string_view>

ExtraFlags timeout_flags(TimeoutFlags& flags, ExtraFlags more) {
    return
        [&flags, more](const char* flag, const std::function<const char*()>& value) -> FlagResult {
            const std::string_view name(flag);
            int* seconds = name == "--idle-timeout"    ? &flags.idle_seconds
                           : name == "--write-timeout" ? &flags.write_seconds
                                                       : nullptr;
            if (!seconds) return more ? more(flag, value) : FlagResult{false};
            const char* text = value();
            char* end = nullptr;
            const long number = std::strtol(text, &end, 10);
            if (*text == '\0' || *end != '\0' || number < 1 || number > 86400)
                return {true, name == "--idle-timeout"
                                  ? "--idle-timeout wants a number of seconds from 1 to 86400"
                                  : "--write-timeout wants a number of seconds from 1 to 86400"};
            *seconds = static_cast<int>(number);
            return {};
        };
}
