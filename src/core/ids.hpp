#pragma once
/// Identifiers: request/call ids (UUIDv4 text) and cheap thread-local randomness.

#include <cstdint>
#include <random>
#include <string>

namespace tollgate::core {

/// Thread-local PRNG seeded from std::random_device; not for secrets.
std::mt19937_64& thread_rng();

/// A random UUIDv4 string, e.g. "3f2b...-...": used for x-litellm-call-id and request ids.
std::string new_uuid();

/// Uniform double in [0,1) from thread_rng() (jitter only; never money).
double uniform01();

}  // namespace tollgate::core
