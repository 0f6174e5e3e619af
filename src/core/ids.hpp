#pragma once
/// Identifiers: request/call ids (UUIDv7 text) and cheap thread-local randomness.

#include <cstdint>
#include <random>
#include <string>

namespace tollgate::core {

/// Thread-local PRNG seeded from std::random_device; not for secrets.
std::mt19937_64& thread_rng();

/// A UUIDv7 string (RFC 9562 section 5.7), 36 characters, e.g. "019aef3c-5d2e-7a41-9b3f-0c1d2e3f4a5b":
/// the Unix time in milliseconds (48 bits, from the system clock), then 74 random bits from
/// thread_rng(). Used for x-litellm-call-id, request ids and generated entity ids. Ids made later
/// sort later (to the millisecond), so a table indexed on them (spend_logs.request_id) grows at its
/// end instead of at random pages. Not a secret: it reveals when it was made.
std::string new_uuid();

/// Uniform double in [0,1) from thread_rng() (jitter only; never money).
double uniform01();

}  // namespace tollgate::core
