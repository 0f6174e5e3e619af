#include "store/ledger_append.hpp"

#include <algorithm>
#include <set>
#include <utility>

namespace tollgate::store::sql {

namespace {

// After "INSERT INTO " (or the connection's insert_in_transaction()).
constexpr const char* kLedgerInto =
    "ledger (reservation_id, kind, amount_nanos, actual_nanos, settle_kind, request_id, model, at_ms) VALUES ";
constexpr const char* kReturning = " RETURNING seq, reservation_id, kind";

// The ledger rows' VALUES list and parameters.
void ledger_values(const std::vector<const LedgerRecord*>& records, std::string& sql, Params& p) {
  bool first = true;
  for (const LedgerRecord* r : records) {
    sql += first ? "(?,?,?,?,?,?,?,?)" : ",(?,?,?,?,?,?,?,?)";
    first = false;
    // Text is borrowed: the records outlive the statement.
    p.emplace_back(static_cast<std::int64_t>(r->reservation_id));
    p.emplace_back(std::string_view(kind_name(r->kind)));
    p.emplace_back(r->amount_nanos);
    p.emplace_back(r->actual_nanos);
    p.emplace_back(std::string_view(r->settle_kind));
    p.emplace_back(std::string_view(r->request_id));
    p.emplace_back(std::string_view(r->model));
    p.emplace_back(r->at_ms);
  }
}

StoreError unavailable(std::string message) { return StoreError{StoreErrorCode::unavailable, std::move(message), {}}; }

// A settle written without scopes charges its reserve's.
std::optional<StoreError> copy_reserve_scopes(Connection& db, const LedgerRecord& r, std::int64_t seq) {
  auto s = db.run(std::string(db.insert_in_transaction()) + "ledger_scope (seq, " + kScopeCols + ") SELECT ?, " + kScopeCols +
                      " FROM ledger_scope WHERE seq = (SELECT MAX(seq) FROM ledger WHERE reservation_id = ? "
                      "AND kind = 'reserve' AND seq < ?) ON CONFLICT DO NOTHING",
                  {seq, static_cast<std::int64_t>(r.reservation_id), seq}, "append ledger");
  if (!s) return s.error();
  return std::nullopt;
}

}  // namespace

const char* kind_name(LedgerKind k) { return k == LedgerKind::reserve ? "reserve" : "settle"; }

StoreResult<std::vector<std::int64_t>> check_returned(std::vector<Row> rows,
                                                      const std::vector<const LedgerRecord*>& records) {
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.i64(0) < b.i64(0); });
  bool matched = rows.size() == records.size();
  for (std::size_t i = 0; matched && i < rows.size(); ++i)
    matched = static_cast<std::uint64_t>(rows[i].i64(1)) == records[i]->reservation_id &&
              rows[i].text(2) == kind_name(records[i]->kind);
  if (!matched) return std::unexpected(unavailable("append ledger: RETURNING rows do not match the batch"));
  std::vector<std::int64_t> seqs;
  seqs.reserve(rows.size());
  for (const auto& row : rows) seqs.push_back(row.i64(0));
  return seqs;
}

std::size_t rows_for_statement(std::size_t left, RowsPerStatement per, std::size_t most) {
  const std::size_t cap = std::min(left, std::max<std::size_t>(most, 1));
  if (per == RowsPerStatement::any) return cap;
  for (const std::size_t n : {std::size_t{64}, std::size_t{16}, std::size_t{4}})
    if (cap >= n) return n;
  return cap == 0 ? 0 : 1;
}

StoreResult<std::vector<std::int64_t>> insert_ledger_rows(Connection& db,
                                                          const std::vector<const LedgerRecord*>& records,
                                                          RowsPerStatement per) {
  std::vector<std::int64_t> seqs;
  seqs.reserve(records.size());
  Params p;
  for (std::size_t i = 0; i < records.size();) {
    const std::size_t n = rows_for_statement(records.size() - i, per, records.size());
    const std::vector<const LedgerRecord*> part(records.begin() + static_cast<std::ptrdiff_t>(i),
                                                records.begin() + static_cast<std::ptrdiff_t>(i + n));
    std::string sql(db.insert_in_transaction());
    sql += kLedgerInto;
    p.clear();
    p.reserve(n * 8);
    ledger_values(part, sql, p);
    if (db.consecutive_insert_ids()) {
      // The rows' seqs are the n ids ending at the last one: no RETURNING rows to make and read.
      auto ins = db.run(sql, p, "append ledger");
      if (!ins) return std::unexpected(ins.error());
      if (ins->changes != static_cast<std::int64_t>(n) || ins->last_insert_id < static_cast<std::int64_t>(n))
        return std::unexpected(unavailable("append ledger: the insert did not report its rows"));
      for (std::size_t k = 0; k < n; ++k) seqs.push_back(ins->last_insert_id - static_cast<std::int64_t>(n - 1 - k));
    } else {
      auto ins = db.run(sql + kReturning, p, "append ledger");
      if (!ins) return std::unexpected(ins.error());
      auto got = check_returned(std::move(ins->rows), part);
      if (!got) return got;
      seqs.insert(seqs.end(), got->begin(), got->end());
    }
    i += n;
  }
  // The scope rows: (record index, scope) in order, then written as many per statement as allowed.
  std::vector<std::pair<std::size_t, const LedgerScope*>> scope_rows;
  std::vector<std::size_t> copies;  // settles without scopes: copied once their reserves' are in
  for (std::size_t i = 0; i < records.size(); ++i) {
    const LedgerRecord& r = *records[i];
    if (r.scopes.empty() && r.kind == LedgerKind::settle) copies.push_back(i);
    for (const auto& sc : r.scopes) scope_rows.emplace_back(i, &sc);
  }
  const std::string scope_head = std::string(db.insert_in_transaction()) + "ledger_scope (seq, " + kScopeCols + ") VALUES ";
  for (std::size_t k = 0; k < scope_rows.size();) {
    const std::size_t n = rows_for_statement(scope_rows.size() - k, per, scope_rows.size());
    std::string scope_sql = scope_head;
    p.clear();
    p.reserve(n * 6);
    for (std::size_t j = k; j < k + n; ++j) {
      const auto& [i, sc] = scope_rows[j];
      scope_sql += j == k ? "(?,?,?,?,?,?)" : ",(?,?,?,?,?,?)";
      p.emplace_back(seqs[i]);
      p.emplace_back(std::string_view(sc->kind));
      p.emplace_back(std::string_view(sc->id));
      p.emplace_back(sc->window_start_ms);
      p.emplace_back(sc->window_end_ms);
      p.emplace_back(std::string_view(sc->period));
    }
    if (auto s = db.run(scope_sql + " ON CONFLICT DO NOTHING", p, "append ledger"); !s) return std::unexpected(s.error());
    k += n;
  }
  for (const std::size_t i : copies)
    if (auto e = copy_reserve_scopes(db, *records[i], seqs[i])) return std::unexpected(*e);
  return seqs;
}

std::optional<Statement> one_statement_append(const std::vector<const LedgerRecord*>& records,
                                              const std::vector<Statement>& spend_inserts, std::size_t max_params) {
  if (records.empty()) return std::nullopt;
  std::size_t params = records.size() * 8;
  std::set<std::pair<std::uint64_t, LedgerKind>> keys;
  for (const LedgerRecord* r : records) {
    if (r->kind == LedgerKind::settle && r->scopes.empty()) return std::nullopt;
    if (!keys.emplace(r->reservation_id, r->kind).second) return std::nullopt;
    params += r->scopes.size() * 7;
  }
  for (const auto& s : spend_inserts) params += s.params.size();
  if (params > max_params) return std::nullopt;

  Statement out;
  out.params.reserve(params);
  out.sql = std::string("WITH l AS (INSERT INTO ") + kLedgerInto;
  ledger_values(records, out.sql, out.params);
  out.sql += kReturning;
  out.sql += ")";
  bool first = true;
  for (const LedgerRecord* r : records)
    for (const auto& sc : r->scopes) {
      if (first)
        out.sql += std::string(", s AS (INSERT INTO ledger_scope (seq, ") + kScopeCols +
                   ") SELECT l.seq, v.scope_kind, v.scope_id, v.window_start_ms, v.window_end_ms, v.period FROM (VALUES ";
      out.sql += first ? "(?,?,?,?,?,?,?)" : ",(?,?,?,?,?,?,?)";
      first = false;
      for (Value v : {Value(static_cast<std::int64_t>(r->reservation_id)), Value(std::string(kind_name(r->kind))),
                      Value(sc.kind), Value(sc.id), Value(sc.window_start_ms), Value(sc.window_end_ms),
                      Value(sc.period)})
        out.params.push_back(std::move(v));
    }
  if (!first)
    out.sql +=
        ") AS v (reservation_id, kind, scope_kind, scope_id, window_start_ms, window_end_ms, period) "
        "JOIN l ON l.reservation_id = v.reservation_id AND l.kind = v.kind ON CONFLICT DO NOTHING)";
  for (std::size_t i = 0; i < spend_inserts.size(); ++i) {
    out.sql += ", p" + std::to_string(i) + " AS (" + spend_inserts[i].sql + ")";
    for (const auto& v : spend_inserts[i].params) out.params.push_back(v);
  }
  out.sql += " SELECT seq, reservation_id, kind FROM l";
  return out;
}

}  // namespace tollgate::store::sql
