#include "budget/ledger.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace tollgate::budget;
using namespace std::chrono;
using namespace std::chrono_literals;

namespace {

const SystemTime kT0 = SystemTime(sys_days(2024y / February / 29) + 12h);

ScopeLimit limit(ScopeKind kind, std::string id, Nanos max, std::optional<BudgetPeriod> period = std::nullopt) {
  return ScopeLimit{ScopeId{kind, std::move(id)}, max, period};
}

Nanos spent(const Ledger& l, const ScopeLimit& s, SystemTime now = kT0) {
  auto st = l.state(s.scope, now);
  return st ? st->spent : -1;
}
Nanos reserved(const Ledger& l, const ScopeLimit& s, SystemTime now = kT0) {
  auto st = l.state(s.scope, now);
  return st ? st->reserved : -1;
}

struct RecordingObserver final : LedgerObserver {
  bool accept = true;
  std::mutex m;
  std::vector<std::pair<ReservationId, Nanos>> reserves;
  std::vector<std::tuple<ReservationId, Nanos, Nanos, SettleKind>> settles;
  bool on_reserve(ReservationId id, std::span<const ScopeLimit> scopes, Nanos amount, SystemTime) override {
    std::lock_guard lock(m);
    EXPECT_FALSE(scopes.empty());
    reserves.emplace_back(id, amount);
    return accept;
  }
  void on_settle(ReservationId id, Nanos res, Nanos charged, SettleKind kind, SystemTime) noexcept override {
    std::lock_guard lock(m);
    settles.emplace_back(id, res, charged, kind);
  }
};

}  // namespace

TEST(ScopeNames, StableStrings) {
  EXPECT_EQ(to_string(ScopeKind::key), "key");
  EXPECT_EQ(to_string(ScopeKind::team_member), "team_member");
  EXPECT_EQ(to_string(ScopeKind::end_user), "end_user");
  EXPECT_EQ(to_string(ScopeKind::key_window), "key_window");
  for (int k = 0; k <= static_cast<int>(ScopeKind::key_window); ++k) {
    EXPECT_EQ(parse_scope_kind(to_string(static_cast<ScopeKind>(k))), static_cast<ScopeKind>(k));
  }
  EXPECT_EQ(team_member_id("t1", "u1"), "t1/u1");
  EXPECT_EQ(key_model_id("abc", "gpt-4o"), "abc/gpt-4o");
  EXPECT_EQ(key_window_id("abc", "1d"), "abc/1d");
  EXPECT_EQ(to_string(ScopeId{ScopeKind::team, "t1"}), "team:t1");
  EXPECT_NE(ScopeIdHash{}(ScopeId{ScopeKind::team, "x"}), ScopeIdHash{}(ScopeId{ScopeKind::user, "x"}));
}

TEST(Ledger, AllOrNone) {
  Ledger ledger;
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 100), limit(ScopeKind::team, "t", 50),
                                          limit(ScopeKind::global, "", 1000)};
  auto first = ledger.reserve(scopes, 40, kT0);
  ASSERT_TRUE(first.has_value());
  auto second = ledger.reserve(scopes, 20, kT0);  // the team has only 10 left
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().reason, RefusalReason::budget_exceeded);
  EXPECT_EQ(second.error().scope, scopes[1].scope);
  EXPECT_EQ(second.error().limit, 50);
  EXPECT_EQ(second.error().committed, 40);
  EXPECT_EQ(second.error().requested, 20);
  for (const auto& s : scopes) EXPECT_EQ(reserved(ledger, s), 40) << to_string(s.scope);  // nothing more anywhere
  ledger.settle(std::move(*first), 40, SettleKind::actual, kT0);
}

TEST(Ledger, ScopeIdsListsTheScopesOfOneKind) {
  Ledger ledger({.shards = 4});
  EXPECT_TRUE(ledger.scope_ids(ScopeKind::end_user).empty());
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::end_user, "team:t/alice", 100),
                                          limit(ScopeKind::end_user, "bob", 100), limit(ScopeKind::key, "k", 100)};
  auto r = ledger.reserve(scopes, 10, kT0);
  ASSERT_TRUE(r.has_value());
  auto ids = ledger.scope_ids(ScopeKind::end_user);
  std::vector<std::string> names;
  for (const auto& id : ids) names.push_back(id.id);
  std::ranges::sort(names);
  EXPECT_EQ(names, (std::vector<std::string>{"bob", "team:t/alice"}));
  ASSERT_EQ(ledger.scope_ids(ScopeKind::key).size(), 1u);
  EXPECT_TRUE(ledger.scope_ids(ScopeKind::team).empty());
  ledger.settle(std::move(*r), 10, SettleKind::actual, kT0);
}

TEST(Ledger, RefusalNamesFirstRefusingScopeInCallerOrder) {
  Ledger ledger;
  std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 100), limit(ScopeKind::team, "t", 5),
                                    limit(ScopeKind::global, "", 5)};
  auto r = ledger.reserve(scopes, 10, kT0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().scope.kind, ScopeKind::team);
  std::swap(scopes[1], scopes[2]);
  r = ledger.reserve(scopes, 10, kT0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().scope.kind, ScopeKind::global);
  EXPECT_EQ(r.error().resets_at, SystemTime::max());  // lifetime budget
}

TEST(Ledger, ZeroAmountPassesOverBudgetAndTouchesNothing) {
  Ledger ledger;
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 0)};
  auto r = ledger.reserve(scopes, 0, kT0);
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(r->empty());
  EXPECT_EQ(r->id(), 0u);
  EXPECT_FALSE(ledger.state(scopes[0].scope, kT0).has_value());
  EXPECT_EQ(ledger.scope_count(), 0u);
  // Even when the scope exists and is exhausted.
  ledger.load(scopes[0].scope, 1'000, SystemTime{});
  EXPECT_TRUE(ledger.reserve(scopes, 0, kT0).has_value());
  EXPECT_FALSE(ledger.reserve(scopes, 1, kT0).has_value());
}

TEST(Ledger, ExactFitPassesOneNanoOverFails) {
  Ledger ledger;
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 1'000), limit(ScopeKind::global, "", 5'000)};
  EXPECT_FALSE(ledger.reserve(scopes, 1'001, kT0).has_value());
  auto r = ledger.reserve(scopes, 1'000, kT0);
  ASSERT_TRUE(r.has_value());
  EXPECT_FALSE(ledger.reserve(scopes, 1, kT0).has_value());
  ledger.settle(std::move(*r), 999, SettleKind::actual, kT0);
  EXPECT_TRUE(ledger.reserve(scopes, 1, kT0).has_value());
}

TEST(Ledger, NegativeAmountIsInvalid) {
  Ledger ledger;
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 1'000)};
  auto r = ledger.reserve(scopes, -5, kT0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().reason, RefusalReason::invalid_amount);
}

TEST(Ledger, SettleActualBelowReservationFreesTheRest) {
  Ledger ledger;
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 100), limit(ScopeKind::team, "t", 100)};
  auto r = ledger.reserve(scopes, 80, kT0);
  ASSERT_TRUE(r);
  EXPECT_FALSE(ledger.reserve(scopes, 30, kT0));
  ledger.settle(std::move(*r), 25, SettleKind::actual, kT0);
  EXPECT_TRUE(r->empty());
  for (const auto& s : scopes) {
    EXPECT_EQ(spent(ledger, s), 25);
    EXPECT_EQ(reserved(ledger, s), 0);
  }
  EXPECT_TRUE(ledger.reserve(scopes, 75, kT0));
}

TEST(Ledger, SettleActualAboveReservationRecordsOvershoot) {
  Ledger ledger;
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 100)};
  auto r = ledger.reserve(scopes, 50, kT0);
  ASSERT_TRUE(r);
  ledger.settle(std::move(*r), 130, SettleKind::actual, kT0);
  EXPECT_EQ(spent(ledger, scopes[0]), 130);
  EXPECT_FALSE(ledger.reserve(scopes, 1, kT0));
}

TEST(Ledger, NoUsageSettlesToZero) {
  Ledger ledger;
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 100)};
  auto r = ledger.reserve(scopes, 60, kT0);
  ASSERT_TRUE(r);
  ledger.settle(std::move(*r), 60, SettleKind::no_usage, kT0);
  EXPECT_EQ(spent(ledger, scopes[0]), 0);
  EXPECT_EQ(reserved(ledger, scopes[0]), 0);
}

// An unknown outcome whose partial usage prices above the reservation (an upstream that ignored
// the output bound, then the stream was cut) is charged that price: the evidence wins.
TEST(Ledger, UnknownChargesThePartialUsageWhenItIsMoreThanTheReservation) {
  Ledger ledger;
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 1000)};
  auto r = ledger.reserve(scopes, 60, kT0);
  ASSERT_TRUE(r);
  ledger.settle(std::move(*r), 450, SettleKind::unknown, kT0);
  const auto st = ledger.state(scopes[0].scope, kT0);
  ASSERT_TRUE(st);
  EXPECT_EQ(st->spent, 450);
  EXPECT_EQ(st->unknown, 450);
  EXPECT_EQ(st->reserved, 0);
  EXPECT_EQ(settle_charge(SettleKind::unknown, 60, 5), 60);
  EXPECT_EQ(settle_charge(SettleKind::unknown, 60, 450), 450);
  EXPECT_EQ(settle_charge(SettleKind::actual, 60, -5), 0);
  EXPECT_EQ(settle_charge(SettleKind::actual, 60, 450), 450);
  EXPECT_EQ(settle_charge(SettleKind::no_usage, 60, 450), 0);
}

// A scope charged without a budget (limit kMaxNanos) never refuses, even once an absurd charge
// saturated its spend at kMaxNanos; a budgeted scope then refuses, as the Redis ledger does.
TEST(Ledger, AScopeWithoutABudgetNeverRefusesEvenWhenItsSpendSaturated) {
  Ledger ledger;
  const ScopeLimit team = limit(ScopeKind::team, "t", kMaxNanos);
  auto r = ledger.reserve(std::vector<ScopeLimit>{team}, 60, kT0);
  ASSERT_TRUE(r);
  ledger.settle(std::move(*r), kMaxNanos, SettleKind::actual, kT0);
  auto again = ledger.reserve(std::vector<ScopeLimit>{team}, 60, kT0);
  ASSERT_TRUE(again) << "an unlimited scope refused";
  EXPECT_EQ(ledger.state(team.scope, kT0)->spent, kMaxNanos);
  ledger.settle(std::move(*again), kMaxNanos, SettleKind::actual, kT0);
  EXPECT_EQ(ledger.state(team.scope, kT0)->spent, kMaxNanos);
  auto budgeted = ledger.reserve(std::vector<ScopeLimit>{team, limit(ScopeKind::key, "k", kMaxNanos - 1)}, 60, kT0);
  ASSERT_TRUE(budgeted) << "the key has spent nothing";
  ledger.settle(std::move(*budgeted), kMaxNanos, SettleKind::actual, kT0);
  auto refused = ledger.reserve(std::vector<ScopeLimit>{team, limit(ScopeKind::key, "k", kMaxNanos - 1)}, 1, kT0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().scope, (ScopeId{ScopeKind::key, "k"}));
}

TEST(Ledger, UnknownChargesTheReservation) {
  Ledger ledger;
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 100), limit(ScopeKind::global, "", 100)};
  auto r = ledger.reserve(scopes, 60, kT0);
  ASSERT_TRUE(r);
  ledger.settle(std::move(*r), 5, SettleKind::unknown, kT0);  // `actual` below the reservation
  for (const auto& s : scopes) {
    const auto st = ledger.state(s.scope, kT0);
    ASSERT_TRUE(st);
    EXPECT_EQ(st->spent, 60);
    EXPECT_EQ(st->unknown, 60);
    EXPECT_EQ(st->reserved, 0);
    EXPECT_EQ(st->max_budget, 100);
  }
}

TEST(Ledger, SettleTwiceIsANoOp) {
  Ledger ledger;
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 100)};
  auto r = ledger.reserve(scopes, 60, kT0);
  ASSERT_TRUE(r);
  Reservation res = std::move(*r);
  ledger.settle(std::move(res), 10, SettleKind::actual, kT0);
  ledger.settle(std::move(res), 10, SettleKind::actual, kT0);  // NOLINT(bugprone-use-after-move): deliberate
  EXPECT_EQ(spent(ledger, scopes[0]), 10);
  EXPECT_EQ(reserved(ledger, scopes[0]), 0);
  // A reservation from another ledger is ignored.
  Ledger other;
  auto foreign = other.reserve(scopes, 30, kT0);
  ASSERT_TRUE(foreign);
  ledger.settle(std::move(*foreign), 30, SettleKind::actual, kT0);
  EXPECT_EQ(spent(ledger, scopes[0]), 10);
}

TEST(Ledger, DuplicateScopeIsHeldOnceAgainstTheSmallerLimit) {
  Ledger ledger;
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 100), limit(ScopeKind::key, "k", 50)};
  EXPECT_FALSE(ledger.reserve(scopes, 60, kT0));
  auto r = ledger.reserve(scopes, 50, kT0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->scope_count(), 1u);
  EXPECT_EQ(reserved(ledger, scopes[0]), 50);
  EXPECT_EQ(ledger.state(scopes[0].scope, kT0)->max_budget, 50);
  ledger.settle(std::move(*r), 50, SettleKind::actual, kT0);
  EXPECT_EQ(spent(ledger, scopes[0]), 50);
}

TEST(Ledger, SaturatesInsteadOfOverflowing) {
  Ledger ledger;
  // The largest real limit: the second reservation does not fit.
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::global, "", kMaxNanos - 1)};
  auto r = ledger.reserve(scopes, kMaxNanos - 1, kT0);
  ASSERT_TRUE(r);
  EXPECT_FALSE(ledger.reserve(scopes, kMaxNanos, kT0));
  EXPECT_FALSE(ledger.reserve(scopes, 1, kT0));
  ledger.settle(std::move(*r), kMaxNanos, SettleKind::actual, kT0);
  EXPECT_EQ(spent(ledger, scopes[0]), kMaxNanos);
  // No limit (kMaxNanos): reservations of kMaxNanos each are held, `reserved` saturating.
  const std::vector<ScopeLimit> open = {limit(ScopeKind::team, "t", kMaxNanos)};
  auto a = ledger.reserve(open, kMaxNanos, kT0);
  auto b = ledger.reserve(open, kMaxNanos, kT0);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(reserved(ledger, open[0]), kMaxNanos);
  ledger.settle(std::move(*a), kMaxNanos, SettleKind::actual, kT0);
  ledger.settle(std::move(*b), kMaxNanos, SettleKind::actual, kT0);
  EXPECT_EQ(spent(ledger, open[0]), kMaxNanos);
  EXPECT_EQ(reserved(ledger, open[0]), 0);
}

TEST(ReservationGuard, SettlesUnknownOnDestruction) {
  Ledger ledger;
  ManualWallClock clock(kT0);
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 100)};
  {
    ReservationGuard guard(ledger, std::move(ledger.reserve(scopes, 30, clock.now()).value()), clock);
    EXPECT_TRUE(guard.active());
    EXPECT_EQ(reserved(ledger, scopes[0]), 30);
  }
  EXPECT_EQ(reserved(ledger, scopes[0]), 0);
  EXPECT_EQ(spent(ledger, scopes[0]), 30);
  EXPECT_EQ(ledger.state(scopes[0].scope, kT0)->unknown, 30);
}

TEST(ReservationGuard, SettlesOnExceptionAndNotTwiceAfterExplicitSettle) {
  Ledger ledger;
  ManualWallClock clock(kT0);
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 100)};
  try {
    ReservationGuard guard(ledger, std::move(ledger.reserve(scopes, 10, clock.now()).value()), clock);
    throw std::runtime_error("client went away");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(spent(ledger, scopes[0]), 10);
  {
    ReservationGuard guard(ledger, std::move(ledger.reserve(scopes, 40, clock.now()).value()), clock);
    guard.settle(7, SettleKind::actual);
    EXPECT_FALSE(guard.active());
    guard.settle(7, SettleKind::actual);
  }
  EXPECT_EQ(spent(ledger, scopes[0]), 17);
  EXPECT_EQ(reserved(ledger, scopes[0]), 0);
  {
    ReservationGuard a(ledger, std::move(ledger.reserve(scopes, 5, clock.now()).value()), clock);
    ReservationGuard b(std::move(a));
    EXPECT_FALSE(a.active());  // NOLINT(bugprone-use-after-move): checking the moved-from state
    Reservation r = b.release();
    EXPECT_FALSE(b.active());
    ledger.settle(std::move(r), 0, SettleKind::no_usage, clock.now());
  }
  EXPECT_EQ(spent(ledger, scopes[0]), 17);
}

TEST(LedgerWindows, DailyWindowResetsAtMidnight) {
  Ledger ledger;
  const auto day = parse_budget_duration("1d").value();
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key_window, "k/1d", 100, day)};
  auto r = ledger.reserve(scopes, 100, kT0);
  ASSERT_TRUE(r);
  ledger.settle(std::move(*r), 100, SettleKind::actual, kT0);
  EXPECT_FALSE(ledger.reserve(scopes, 1, kT0 + 11h));  // 23:00 the same day
  const SystemTime next_day = SystemTime(sys_days(2024y / March / 1)) + 1s;
  EXPECT_EQ(spent(ledger, scopes[0], next_day), 0);            // state() shows the rolled view
  EXPECT_EQ(ledger.state(scopes[0].scope, next_day)->window_start, SystemTime(sys_days(2024y / March / 1)));
  EXPECT_TRUE(ledger.reserve(scopes, 100, next_day));
}

TEST(LedgerWindows, ThirtySecondWindows) {
  Ledger ledger;
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 10, parse_budget_duration("30s").value())};
  const SystemTime t = SystemTime(seconds(1'700'000'020));  // 10 s into a 30 s window (1'700'000'010 is aligned)
  auto r = ledger.reserve(scopes, 10, t);
  ASSERT_TRUE(r);
  ledger.settle(std::move(*r), 10, SettleKind::actual, t);
  EXPECT_FALSE(ledger.reserve(scopes, 1, t + 19s));
  EXPECT_TRUE(ledger.reserve(scopes, 10, t + 20s));  // the next window
}

TEST(LedgerWindows, MonthlyWindowAtMonthEndInLeapYear) {
  Ledger ledger;
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 10, parse_budget_duration("1mo").value())};
  const SystemTime feb29 = SystemTime(sys_days(2024y / February / 29) + 23h + 59min);
  auto r = ledger.reserve(scopes, 10, feb29);
  ASSERT_TRUE(r);
  ledger.settle(std::move(*r), 10, SettleKind::actual, feb29);
  EXPECT_FALSE(ledger.reserve(scopes, 1, feb29 + 59s));
  EXPECT_TRUE(ledger.reserve(scopes, 1, feb29 + 60s));  // March 1st 00:00
}

TEST(LedgerWindows, ResetTimezoneOffset) {
  LedgerOptions options;
  options.reset_timezone = parse_reset_timezone("+05:30").value();
  Ledger ledger(options);
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 10, parse_budget_duration("1d").value())};
  const SystemTime before = SystemTime(sys_days(2024y / March / 10) + 18h + 29min);  // 23:59 local
  auto r = ledger.reserve(scopes, 10, before);
  ASSERT_TRUE(r);
  ledger.settle(std::move(*r), 10, SettleKind::actual, before);
  EXPECT_FALSE(ledger.reserve(scopes, 1, before + 59s));
  EXPECT_TRUE(ledger.reserve(scopes, 1, before + 60s));  // 00:00 local = 18:30 UTC
}

TEST(LedgerWindows, ReservationAcrossABoundaryChargesTheNewWindow) {
  Ledger ledger;
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 100, parse_budget_duration("1d").value())};
  const SystemTime late = SystemTime(sys_days(2024y / March / 10) + 23h + 59min);
  auto a = ledger.reserve(scopes, 30, late);
  ASSERT_TRUE(a);
  auto b = ledger.reserve(scopes, 60, late);
  ASSERT_TRUE(b);
  ledger.settle(std::move(*b), 60, SettleKind::actual, late);
  const SystemTime early = late + 2min;
  // In-flight reservations survive the reset; only settled spend goes back to 0.
  auto st = ledger.state(scopes[0].scope, early);
  EXPECT_EQ(st->spent, 0);
  EXPECT_EQ(st->reserved, 30);
  EXPECT_FALSE(ledger.reserve(scopes, 71, early));
  ledger.settle(std::move(*a), 25, SettleKind::actual, early);
  st = ledger.state(scopes[0].scope, early);
  EXPECT_EQ(st->spent, 25);
  EXPECT_EQ(st->reserved, 0);
}

TEST(LedgerLoad, KeepsSpendOfTheCurrentWindowAndDropsAnOldOne) {
  Ledger ledger;
  const auto day = parse_budget_duration("1d").value();
  const ScopeLimit today = limit(ScopeKind::key_window, "a/1d", 100, day);
  const ScopeLimit stale = limit(ScopeKind::key_window, "b/1d", 100, day);
  const ScopeLimit life = limit(ScopeKind::key, "c", 100);
  ledger.load(today.scope, 90, window_start(day, kT0, {}));
  ledger.load(stale.scope, 90, window_start(day, kT0 - 24h, {}));
  ledger.load(life.scope, 95, SystemTime{});
  EXPECT_FALSE(ledger.reserve(std::span(&today, 1), 11, kT0));
  EXPECT_TRUE(ledger.reserve(std::span(&today, 1), 10, kT0));
  EXPECT_TRUE(ledger.reserve(std::span(&stale, 1), 100, kT0));
  EXPECT_FALSE(ledger.reserve(std::span(&life, 1), 6, kT0));
  EXPECT_TRUE(ledger.reserve(std::span(&life, 1), 5, kT0));
}

TEST(LedgerObserverHooks, SeesReservesAndSettlesAndCanRefuse) {
  RecordingObserver obs;
  LedgerOptions options;
  options.observer = &obs;
  options.first_reservation_id = 1000;
  Ledger ledger(options);
  const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 100)};
  auto r = ledger.reserve(scopes, 40, kT0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id(), 1000u);
  const ReservationId id = r->id();
  ledger.settle(std::move(*r), 12, SettleKind::actual, kT0);
  ASSERT_EQ(obs.reserves.size(), 1u);
  EXPECT_EQ(obs.reserves[0], std::make_pair(id, Nanos{40}));
  ASSERT_EQ(obs.settles.size(), 1u);
  EXPECT_EQ(obs.settles[0], std::make_tuple(id, Nanos{40}, Nanos{12}, SettleKind::actual));
  EXPECT_TRUE(ledger.reserve(scopes, 0, kT0));  // zero: no record
  EXPECT_EQ(obs.reserves.size(), 1u);

  obs.accept = false;  // the store cannot record: fail closed, nothing held
  auto refused = ledger.reserve(scopes, 10, kT0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().reason, RefusalReason::observer_rejected);
  EXPECT_EQ(reserved(ledger, scopes[0]), 0);
  EXPECT_EQ(spent(ledger, scopes[0]), 12);
  EXPECT_EQ(obs.settles.size(), 1u);
}

// 200 threads, each reserving c against a budget of 20c, then settling at c: exactly 20 succeed.
TEST(LedgerConcurrency, TwoHundredRequestsOnABudgetThatFitsTwenty) {
  for (std::size_t shards : {std::size_t{1}, std::size_t{64}}) {
    LedgerOptions options;
    options.shards = shards;
    Ledger ledger(options);
    constexpr Nanos c = 1'234'567;
    const std::vector<ScopeLimit> scopes = {limit(ScopeKind::key, "k", 20 * c), limit(ScopeKind::global, "", 1'000 * c)};
    std::atomic<int> ok{0};
    std::atomic<bool> go{false};
    std::atomic<bool> violated{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < 200; ++i) {
      threads.emplace_back([&] {
        while (!go.load()) std::this_thread::yield();
        auto r = ledger.reserve(scopes, c, kT0);
        if (!r) return;
        ++ok;
        const auto st = ledger.state(scopes[0].scope, kT0);
        if (st->spent + st->reserved > 20 * c) violated = true;
        std::this_thread::yield();
        ledger.settle(std::move(*r), c, SettleKind::actual, kT0);
      });
    }
    go = true;
    for (auto& t : threads) t.join();
    EXPECT_EQ(ok.load(), 20) << "shards=" << shards;
    EXPECT_FALSE(violated.load());
    EXPECT_EQ(spent(ledger, scopes[0]), 20 * c);
    EXPECT_EQ(reserved(ledger, scopes[0]), 0);
    EXPECT_EQ(spent(ledger, scopes[1]), 20 * c);
  }
}

// Overlapping scopes: 10 keys (5c each) in two teams, a team budget and a global budget.
// 16 threads hammer random keys; the binding scope decides exactly how many succeed.
TEST(LedgerConcurrency, OverlappingKeyTeamGlobalScopes) {
  struct Case {
    Nanos team1;
    Nanos global;
    int want_total;
    int want_team1;  // -1: not checked exactly
  };
  constexpr Nanos c = 1'000;
  for (const Case& cs : {Case{12 * c, 1'000 * c, 12 + 25, 12}, Case{12 * c, 18 * c, 18, -1}}) {
    Ledger ledger;
    auto scopes_of = [&](int key) {
      const bool team1 = key < 5;
      return std::vector<ScopeLimit>{limit(ScopeKind::key, "key-" + std::to_string(key), 5 * c),
                                     limit(ScopeKind::team, team1 ? "t1" : "t2", team1 ? cs.team1 : 100 * c),
                                     limit(ScopeKind::global, "", cs.global)};
    };
    std::atomic<int> per_key[10] = {};
    std::atomic<int> total{0};
    std::atomic<bool> violated{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < 16; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937 rng(static_cast<unsigned>(t));
        for (int i = 0; i < 400; ++i) {
          const int key = static_cast<int>(rng() % 10);
          const auto scopes = scopes_of(key);
          auto r = ledger.reserve(scopes, c, kT0);
          if (!r) continue;
          ++per_key[key];
          ++total;
          for (const auto& s : scopes) {
            const auto st = ledger.state(s.scope, kT0);
            if (st->spent + st->reserved > s.max_budget) violated = true;
          }
          // Settle below the reservation sometimes and at it otherwise; both keep sums exact.
          ledger.settle(std::move(*r), c, (i % 3 == 0) ? SettleKind::unknown : SettleKind::actual, kT0);
        }
      });
    }
    for (auto& t : threads) t.join();
    EXPECT_FALSE(violated.load());
    EXPECT_EQ(total.load(), cs.want_total);
    int team1 = 0;
    for (int k = 0; k < 10; ++k) {
      EXPECT_LE(per_key[k].load(), 5);
      EXPECT_EQ(spent(ledger, scopes_of(k)[0]), per_key[k].load() * c);
      if (k < 5) team1 += per_key[k].load();
    }
    if (cs.want_team1 >= 0) {
      EXPECT_EQ(team1, cs.want_team1);
    }
    EXPECT_LE(team1 * c, cs.team1);
    EXPECT_EQ(spent(ledger, scopes_of(0)[1]), team1 * c);
    EXPECT_EQ(spent(ledger, scopes_of(0)[2]), total.load() * c);
    EXPECT_EQ(reserved(ledger, scopes_of(0)[2]), 0);
  }
}

// ---- ranged reservations (the output bound follows what the budget can still pay for) ----

TEST(LedgerRange, WholeWorstCaseWhenItFitsInTheShare) {
  Ledger l;
  const std::vector<ScopeLimit> s{limit(ScopeKind::key, "k", 1'000)};
  auto r = l.reserve(s, AmountRange{10, 400, 50}, kT0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->amount(), 400);
  EXPECT_FALSE(r->reduced());
  EXPECT_EQ(r->binding_scope(), SIZE_MAX);
}

TEST(LedgerRange, ReducedToTheShareOfTheTightestHeadroom) {
  Ledger l;
  const std::vector<ScopeLimit> s{limit(ScopeKind::key, "k", 10'000), limit(ScopeKind::team, "t", 1'000)};
  auto r = l.reserve(s, AmountRange{10, 5'000, 50}, kT0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->amount(), 500);  // half of the team's 1,000
  EXPECT_TRUE(r->reduced());
  EXPECT_EQ(r->binding_scope(), 1u);
  EXPECT_EQ(reserved(l, s[0]), 500);
  EXPECT_EQ(reserved(l, s[1]), 500);
  // share 100: everything that is left
  auto r2 = l.reserve(s, AmountRange{10, 5'000, 100}, kT0);
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->amount(), 500);
  EXPECT_EQ(reserved(l, s[1]), 1'000);
}

TEST(LedgerRange, NeverBelowTheMinimumAndRefusedWhenEvenThatDoesNotFit) {
  Ledger l;
  const std::vector<ScopeLimit> s{limit(ScopeKind::key, "k", 100)};
  auto r = l.reserve(s, AmountRange{80, 1'000, 50}, kT0);  // half of 100 < min: the minimum
  ASSERT_TRUE(r);
  EXPECT_EQ(r->amount(), 80);
  auto refused = l.reserve(s, AmountRange{30, 1'000, 50}, kT0);  // 20 left < 30
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().reason, RefusalReason::budget_exceeded);
  EXPECT_EQ(refused.error().requested, 30);
  EXPECT_EQ(refused.error().committed, 80);
  auto tiny = l.reserve(s, AmountRange{20, 1'000, 50}, kT0);  // exactly the rest
  ASSERT_TRUE(tiny);
  EXPECT_EQ(tiny->amount(), 20);
  EXPECT_EQ(reserved(l, s[0]), 100);
}

TEST(LedgerRange, InvalidRangesAreRefused) {
  Ledger l;
  const std::vector<ScopeLimit> s{limit(ScopeKind::key, "k", 100)};
  for (auto bad : {AmountRange{-1, 10, 50}, AmountRange{20, 10, 50}, AmountRange{1, 10, 0}, AmountRange{1, 10, 101}}) {
    auto r = l.reserve(s, bad, kT0);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().reason, RefusalReason::invalid_amount);
  }
  EXPECT_EQ(reserved(l, s[0]), -1);  // never touched
}

TEST(LedgerRange, UnlimitedScopesGrantTheWholeWorstCase) {
  Ledger l;
  const std::vector<ScopeLimit> s{limit(ScopeKind::key, "k", kMaxNanos)};
  auto r = l.reserve(s, AmountRange{1, kMaxNanos / 4, 50}, kT0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->amount(), kMaxNanos / 4);
  EXPECT_FALSE(r->reduced());
}

TEST(LedgerRange, ConcurrentCallersNearTheEndAreAllServedWithinTheCap) {
  // 8 callers whose whole worst case (900) almost fills the budget (1,000), each useful from 60:
  // with a 50 % share every one of them still gets a grant of at least 60 until 1,000 is reached,
  // and the sum of the grants never exceeds the cap.
  for (std::size_t shards : {1u, 64u}) {
    Ledger l(LedgerOptions{.shards = shards});
    const std::vector<ScopeLimit> s{limit(ScopeKind::end_user, "u", 1'000)};
    std::atomic<int> served{0};
    std::atomic<Nanos> granted{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i)
      threads.emplace_back([&] {
        if (auto r = l.reserve(s, AmountRange{60, 900, 50}, kT0)) {
          ++served;
          granted += r->amount();
          l.settle(std::move(*r), 0, SettleKind::no_usage, kT0);  // never settled above its grant
        }
      });
    for (auto& t : threads) t.join();
    EXPECT_GE(served.load(), 3) << shards;
    EXPECT_EQ(reserved(l, s[0]), 0);
  }
  Ledger l;
  const std::vector<ScopeLimit> s{limit(ScopeKind::end_user, "u", 1'000)};
  std::vector<Reservation> held;  // held, as by attempts in flight
  Nanos total = 0;
  while (auto r = l.reserve(s, AmountRange{60, 900, 50}, kT0)) {
    total += r->amount();
    held.push_back(std::move(*r));
  }
  EXPECT_LE(total, 1'000);
  EXPECT_GE(held.size(), 4u);  // 500, 250, 125, 62 — then 63 left < ... one more of 63
  for (auto& r : held) l.settle(std::move(r), 0, SettleKind::no_usage, kT0);
}

TEST(LedgerForget, EndedWindowsWithoutReservationsAreForgotten) {
  Ledger l;
  const auto day = BudgetPeriod{PeriodUnit::days, 1};
  std::vector<std::vector<ScopeLimit>> users;
  for (int i = 0; i < 100; ++i) users.push_back({limit(ScopeKind::end_user, "u" + std::to_string(i), 1'000, day)});
  for (auto& s : users) {
    auto r = l.reserve(s, 10, kT0);
    ASSERT_TRUE(r);
    l.settle(std::move(*r), 5, SettleKind::actual, kT0);
  }
  auto held = l.reserve(users[0], 10, kT0);  // one still in flight
  const std::vector<ScopeLimit> lifetime{limit(ScopeKind::key, "k", 1'000)};
  auto r = l.reserve(lifetime, 10, kT0);
  l.settle(std::move(*r), 7, SettleKind::actual, kT0);
  EXPECT_EQ(l.scope_count(), 101u);
  EXPECT_EQ(l.forget_ended(kT0 + 1h), 0u);     // the day is not over
  EXPECT_EQ(l.forget_ended(kT0 + 24h), 99u);   // all but the reserved one and the lifetime key
  EXPECT_EQ(spent(l, lifetime[0], kT0 + 24h), 7);
  l.settle(std::move(*held), 3, SettleKind::actual, kT0 + 24h);  // charged to the new window
  EXPECT_EQ(spent(l, users[0][0], kT0 + 24h), 3);
  EXPECT_EQ(spent(l, users[1][0], kT0 + 24h), -1);  // forgotten: a new reservation starts it at 0
  auto again = l.reserve(users[1], 1'000, kT0 + 24h);
  EXPECT_TRUE(again);
}
