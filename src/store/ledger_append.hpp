#pragma once
/// How the SQL store (store/sql_store.cpp) appends ledger records: the SQL of a group commit's
/// ledger rows and their scopes. Only store implementations include this header.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "store/records.hpp"
#include "store/sql.hpp"

namespace tollgate::store::sql {

/// One statement and its parameters (`?` placeholders).
struct Statement {
  std::string sql;
  Params params;
};

/// "reserve" / "settle": a ledger row's `kind` column.
const char* kind_name(LedgerKind k);

/// ledger_scope's columns after `seq`, in LedgerScope's order.
inline constexpr const char* kScopeCols = "scope_kind, scope_id, window_start_ms, window_end_ms, period";

/// How many rows a multi-row INSERT takes.
enum class RowsPerStatement {
  any,    ///< all of them in one statement (a server engine: one round trip)
  fixed,  ///< 64, 16, 4 or 1 (an embedded engine: a few statements, each parsed once and kept)
};

/// The rows the next statement takes when `left` remain, at most `most`: for RowsPerStatement::any
/// min(left, most), else the largest of 64, 16, 4 and 1 not above either (0 when none remain;
/// `most` below 1 counts as 1).
std::size_t rows_for_statement(std::size_t left, RowsPerStatement per, std::size_t most = 64);

/// Appends `records` on `db`, inside the caller's write transaction (rolled back by the caller when
/// this fails), with multi-row INSERTs (Connection::insert_in_transaction()) for the ledger rows and
/// for their scopes (a settle without scopes copies its reserve's, one statement
/// each), as many rows in each as `per` allows. Returns each record's seq, in `records`' order:
/// computed from the last id where the connection gives consecutive ids, else read with RETURNING.
/// Errors: the statement's, or unavailable when the ids reported do not match the rows. Text is bound
/// as views of the records' strings.
StoreResult<std::vector<std::int64_t>> insert_ledger_rows(Connection& db, const std::vector<const LedgerRecord*>& records,
                                                          RowsPerStatement per = RowsPerStatement::any);

/// The whole group commit as ONE statement, for engines with data-modifying CTEs (PostgreSQL):
/// `WITH l AS (INSERT INTO ledger … RETURNING seq, reservation_id, kind), s AS (INSERT INTO
/// ledger_scope … joined to l on (reservation_id, kind)), p0 AS (<spend insert>) … SELECT … FROM
/// l`. Run in autocommit it is one transaction and one round trip to the server. `spend_inserts`
/// are complete INSERT statements (no RETURNING) joined in as further CTEs. nullopt when the
/// batch cannot be one statement: no records, two records share (reservation_id, kind), a settle
/// without scopes (its scopes are copied from an earlier row), or more than `max_params`
/// parameters in all. The result rows are what check_returned() reads. The statement's parameters
/// borrow the records' and `spend_inserts`' text: run it while they live.
std::optional<Statement> one_statement_append(const std::vector<const LedgerRecord*>& records,
                                              const std::vector<Statement>& spend_inserts, std::size_t max_params);

/// The seqs RETURNING gave (`seq, reservation_id, kind` rows, any order) matched to `records`:
/// an identity/autoincrement column grows row by row within one statement, so sorted by seq they
/// are in insertion order. Error (unavailable) when they do not match.
StoreResult<std::vector<std::int64_t>> check_returned(std::vector<Row> rows, const std::vector<const LedgerRecord*>& records);

}  // namespace tollgate::store::sql
