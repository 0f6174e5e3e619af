#include "store/journal/journal_codec.hpp"

#include <cstring>
#include <optional>

#include <zlib.h>

namespace tollgate::store::journal {

namespace {

// CRC-32 (ISO-HDLC, the one of zlib, gzip and Ethernet), computed by zlib. Payloads are at most
// kMaxPayloadBytes, far below uInt's range.
std::uint32_t crc32(std::string_view bytes) {
  return static_cast<std::uint32_t>(
      ::crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
}

void put_u32(std::string& out, std::uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out.append(b, 4);
}

void put_u64(std::string& out, std::uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out.append(b, 8);
}

void put_i64(std::string& out, std::int64_t v) { put_u64(out, static_cast<std::uint64_t>(v)); }

void put_str(std::string& out, const std::string& s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out += s;
}

// Reads a payload front to back; every read fails (and stays failed) past the end.
class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == b_.size(); }

  std::uint64_t u(int bytes) {
    if (!ok_ || b_.size() - pos_ < static_cast<std::size_t>(bytes)) {
      ok_ = false;
      return 0;
    }
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(b_[pos_ + i])) << (8 * i);
    pos_ += static_cast<std::size_t>(bytes);
    return v;
  }
  std::int64_t i64() { return static_cast<std::int64_t>(u(8)); }
  std::string str() {
    const auto n = static_cast<std::size_t>(u(4));
    if (!ok_ || b_.size() - pos_ < n) {
      ok_ = false;
      return {};
    }
    std::string s(b_.substr(pos_, n));
    pos_ += n;
    return s;
  }

 private:
  std::string_view b_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

std::uint32_t le32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

std::optional<JournalEntry> parse(std::string_view payload) {
  Reader r(payload);
  JournalEntry e;
  e.jseq = r.u(8);
  LedgerRecord& rec = e.record;
  rec.reservation_id = r.u(8);
  const auto kind = r.u(1);
  if (kind > 1) return std::nullopt;
  rec.kind = kind == 0 ? LedgerKind::reserve : LedgerKind::settle;
  rec.amount_nanos = r.i64();
  rec.actual_nanos = r.i64();
  rec.at_ms = r.i64();
  rec.settle_kind = r.str();
  rec.request_id = r.str();
  rec.model = r.str();
  const auto n = r.u(4);
  // Each scope takes at least 28 bytes: a count beyond what is left is damage.
  if (!r.ok() || n > payload.size() / 28) return std::nullopt;
  rec.scopes.reserve(static_cast<std::size_t>(n));
  for (std::uint64_t i = 0; i < n && r.ok(); ++i) {
    LedgerScope sc;
    sc.kind = r.str();
    sc.id = r.str();
    sc.window_start_ms = r.i64();
    sc.window_end_ms = r.i64();
    sc.period = r.str();
    rec.scopes.push_back(std::move(sc));
  }
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return e;
}

}  // namespace

void encode(std::uint64_t jseq, const LedgerRecord& rec, std::string& out) {
  const std::size_t frame = out.size();
  std::size_t size = 8 + 8 + 8 + 1 + 3 * 8 + 3 * 4 + rec.settle_kind.size() + rec.request_id.size() + rec.model.size() + 4;
  for (const auto& sc : rec.scopes) size += 3 * 4 + sc.kind.size() + sc.id.size() + sc.period.size() + 2 * 8;
  out.reserve(frame + size);
  out.append(8, '\0');  // length and checksum, filled in below
  put_u64(out, jseq);
  put_u64(out, rec.reservation_id);
  out.push_back(rec.kind == LedgerKind::reserve ? '\0' : '\1');
  put_i64(out, rec.amount_nanos);
  put_i64(out, rec.actual_nanos);
  put_i64(out, rec.at_ms);
  put_str(out, rec.settle_kind);
  put_str(out, rec.request_id);
  put_str(out, rec.model);
  put_u32(out, static_cast<std::uint32_t>(rec.scopes.size()));
  for (const auto& sc : rec.scopes) {
    put_str(out, sc.kind);
    put_str(out, sc.id);
    put_i64(out, sc.window_start_ms);
    put_i64(out, sc.window_end_ms);
    put_str(out, sc.period);
  }
  const std::string_view payload(out.data() + frame + 8, out.size() - frame - 8);
  std::string head;
  put_u32(head, static_cast<std::uint32_t>(payload.size()));
  put_u32(head, crc32(payload));
  std::memcpy(out.data() + frame, head.data(), 8);
}

Decoded decode(std::string_view bytes, std::uint64_t first_jseq) {
  Decoded d;
  std::uint64_t expect = first_jseq;
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    if (bytes.size() - pos < 8) {
      d.stopped = "incomplete frame";
      break;
    }
    const std::uint32_t len = le32(bytes.data() + pos);
    const std::uint32_t sum = le32(bytes.data() + pos + 4);
    if (len > kMaxPayloadBytes) {
      d.stopped = "bad payload";
      break;
    }
    if (bytes.size() - pos - 8 < len) {
      d.stopped = "incomplete frame";
      break;
    }
    const std::string_view payload = bytes.substr(pos + 8, len);
    if (crc32(payload) != sum) {
      d.stopped = "checksum mismatch";
      break;
    }
    auto e = parse(payload);
    if (!e) {
      d.stopped = "bad payload";
      break;
    }
    if (expect != 0 && e->jseq != expect) {
      d.stopped = "sequence gap";
      break;
    }
    expect = e->jseq + 1;
    pos += 8 + len;
    d.valid_bytes = pos;
    d.entries.push_back(std::move(*e));
  }
  return d;
}

}  // namespace tollgate::store::journal
