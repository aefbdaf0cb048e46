// glob.hpp — lesson 13: Redis's glob patterns, for KEYS and CONFIG GET.
//
// Redis's stringmatchlen (src/util.c), with its rules kept exactly:
//   *       any bytes, none included        ?      any one byte
//   [abc]   one of these bytes              [^abc] one byte not among them
//   [a-z]   a byte in a range (either way round: [z-a] is the same)
//   \x      the byte x itself, outside and inside [ ]
// and its quirks too: a [ never closed takes the rest of the pattern as its
// set; an empty text is matched by the empty pattern only ("*" does not
// match "": KEYS * is answered without matching, as in Redis); a * followed
// by no match is not retried at later places (skipLongerMatches), so a
// pattern of many stars costs a polynomial, not exponential, time; and a
// pattern nested past 1000 stars matches nothing.
#pragma once

#include <string_view>

namespace kv {

bool glob_match(std::string_view pattern, std::string_view text, bool ignore_case = false);

}  // namespace kv
