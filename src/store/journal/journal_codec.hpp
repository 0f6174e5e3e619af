#pragma once
/// The ledger journal's on-disk record format (docs/storage.md "Ledger journal"). A segment file
/// is a sequence of frames, each:
///
///     u32 payload length (little-endian) | u32 CRC-32 of the payload (ISO-HDLC, as zlib) | payload
///
/// and a payload is one ledger record with its journal sequence number: u64 jseq, u64
/// reservation_id, u8 kind (0 reserve, 1 settle), i64 amount_nanos, i64 actual_nanos, i64 at_ms,
/// then the strings settle_kind, request_id and model (u32 length + bytes each), then u32 scope
/// count and per scope: kind, id (strings), i64 window_start_ms, i64 window_end_ms, period
/// (string). Integers are little-endian. Journal sequence numbers are consecutive (each record's
/// is the previous one's + 1) within and across segments.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/records.hpp"

namespace tollgate::store::journal {

/// A ledger record as the journal holds it.
struct JournalEntry {
  std::uint64_t jseq = 0;  ///< journal sequence number (1, 2, ...); the record's `sequence` is unused
  LedgerRecord record;
};

/// The largest payload a frame may declare, bytes: a longer one is damage, not a record.
inline constexpr std::uint32_t kMaxPayloadBytes = 16u << 20;

/// Appends the frame of `record` with journal sequence `jseq` to `out`.
void encode(std::uint64_t jseq, const LedgerRecord& record, std::string& out);

/// What decode() found in a segment's bytes.
struct Decoded {
  std::vector<JournalEntry> entries;  ///< the whole, valid frames from the start, in order
  std::size_t valid_bytes = 0;        ///< bytes those frames take; the rest is a torn or damaged tail
  /// Why decoding stopped before the end (empty when every byte was a valid frame): "incomplete
  /// frame", "checksum mismatch", "bad payload", "sequence gap".
  std::string stopped;
};

/// Decodes frames from the start of `bytes`, stopping at the first incomplete frame, checksum
/// mismatch, payload that does not parse exactly, or record whose jseq is not the previous one's
/// + 1 (the first must be `first_jseq` when that is non-zero). Never throws; any input is safe.
Decoded decode(std::string_view bytes, std::uint64_t first_jseq = 0);

}  // namespace tollgate::store::journal
