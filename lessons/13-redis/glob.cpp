// glob.cpp — lesson 13: stringmatchlen, Redis's glob matcher (src/util.c), on string_views.
#include "glob.hpp"

#include <cctype>
#include <utility>

namespace kv {
namespace {

constexpr int kMaxNesting = 1000;  // Redis's "protection against abusive patterns"

// Bytes compare as chars, signed on x86-64, as Redis compares them.
int folded(char c, bool ignore_case) { return ignore_case ? std::tolower(static_cast<unsigned char>(c)) : c; }

bool same(char a, char b, bool ignore_case) { return folded(a, ignore_case) == folded(b, ignore_case); }

// At pattern[at] just past a '[': does text_byte belong to the set? Leaves
// `at` on the closing ']', or on the pattern's last byte when it has none.
bool in_set(std::string_view pattern, std::size_t& at, char text_byte, bool ignore_case) {
    const bool negated = at < pattern.size() && pattern[at] == '^';
    if (negated) ++at;
    bool member = false;
    for (;; ++at) {
        const std::size_t left = pattern.size() - at;
        if (left >= 2 && pattern[at] == '\\') {
            ++at;
            if (pattern[at] == text_byte) member = true;
        } else if (left == 0) {
            --at;
            break;
        } else if (pattern[at] == ']') {
            break;
        } else if (left >= 3 && pattern[at + 1] == '-') {
            int low = folded(pattern[at], ignore_case);
            int high = folded(pattern[at + 2], ignore_case);
            if (low > high) std::swap(low, high);
            const int byte = folded(text_byte, ignore_case);
            if (byte >= low && byte <= high) member = true;
            at += 2;
        } else if (same(pattern[at], text_byte, ignore_case)) {
            member = true;
        }
    }
    return member != negated;
}

bool match(std::string_view pattern, std::string_view text, bool ignore_case, bool& skip_longer, int nesting) {
    if (nesting > kMaxNesting) return false;
    std::size_t at = 0;    // in pattern
    std::size_t byte = 0;  // in text
    while (at < pattern.size() && byte < text.size()) {
        switch (pattern[at]) {
        // Stars in a row are one star. The rest of the pattern is tried at
        // every place in the rest of the text; if it matches at none, a
        // longer match of an earlier star cannot help either.
        case '*':
            while (at + 1 < pattern.size() && pattern[at + 1] == '*') ++at;
            if (at + 1 == pattern.size()) return true;
            for (; byte < text.size(); ++byte) {
                if (match(pattern.substr(at + 1), text.substr(byte), ignore_case, skip_longer, nesting + 1))
                    return true;
                if (skip_longer) return false;
            }
            skip_longer = true;
            return false;
        case '?':
            ++byte;
            break;
        case '[':
            ++at;
            if (!in_set(pattern, at, text[byte], ignore_case)) return false;
            ++byte;
            break;
        case '\\':
            if (pattern.size() - at >= 2) ++at;
            [[fallthrough]];
        default:
            if (!same(pattern[at], text[byte], ignore_case)) return false;
            ++byte;
            break;
        }
        ++at;
        if (byte == text.size())
            while (at < pattern.size() && pattern[at] == '*') ++at;
    }
    return at == pattern.size() && byte == text.size();
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view text, bool ignore_case) {
    bool skip_longer = false;
    return match(pattern, text, ignore_case, skip_longer, 0);
}

}  // namespace kv
