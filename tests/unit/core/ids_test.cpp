// core::new_uuid: RFC 9562 UUIDv7 text. The shape, the version and variant bits, the time in its
// first 48 bits, order across milliseconds, and random bits that differ between ids made in the
// same millisecond.
#include "core/ids.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <string>

namespace tollgate::core {
namespace {

std::uint64_t unix_ms_now() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

// The 48-bit timestamp of a UUIDv7's text: its first 12 hex digits, skipping the dash.
std::uint64_t time_of(const std::string& id) { return std::stoull(id.substr(0, 8) + id.substr(9, 4), nullptr, 16); }

TEST(NewUuid, IsVersion7TextWithTheVariantBits) {
  const std::string id = new_uuid();
  ASSERT_EQ(id.size(), 36u);
  for (std::size_t i = 0; i < id.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      EXPECT_EQ(id[i], '-') << id;
    } else {
      EXPECT_TRUE((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')) << id;
    }
  }
  EXPECT_EQ(id[14], '7') << id;                           // version 0111
  EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos) << id;  // variant 10
}

TEST(NewUuid, CarriesTheUnixTimeInMillisecondsAndSortsByIt) {
  const std::uint64_t before = unix_ms_now();
  const std::string a = new_uuid();
  const std::uint64_t after = unix_ms_now();
  EXPECT_GE(time_of(a), before);
  EXPECT_LE(time_of(a), after);
  // The next millisecond's id (made as soon as the clock has moved on, no sleep).
  std::string b = new_uuid();
  for (int i = 0; i < 100'000'000 && time_of(b) == time_of(a); ++i) b = new_uuid();
  EXPECT_GT(time_of(b), time_of(a));
  EXPECT_LT(a, b);  // the text sorts as the time does: an index on it grows at its end
}

TEST(NewUuid, IdsOfOneMillisecondDifferInTheirRandomBits) {
  std::set<std::string> ids, tails;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = new_uuid();
    ids.insert(id);
    tails.insert(id.substr(28, 8));  // the random tail (job runners' owner names use it)
  }
  EXPECT_EQ(ids.size(), 1000u);
  EXPECT_GT(tails.size(), 990u);
}

}  // namespace
}  // namespace tollgate::core
