// Fuzz target: the ledger journal's frame decoder (store/journal/journal_codec.hpp: decode), what
// a start reads from segment files a crash, a full disk or an operator may have damaged.
//
// Input: a segment's bytes.
// Properties: decoding never reads past the input and stops inside it (valid_bytes <= size, and
// == size exactly when nothing stopped it); every decoded record encodes back to exactly the
// bytes it was decoded from (no two byte strings decode to one record, so nothing but a whole,
// checksummed frame is ever replayed); the sequence numbers decoded are consecutive.
#include "fuzz_support.hpp"
#include "store/journal/journal_codec.hpp"

namespace journal = tollgate::store::journal;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = tollgate::fuzz::as_text(data, size);
  const journal::Decoded d = journal::decode(in);
  TG_FUZZ_CHECK(d.valid_bytes <= in.size());
  TG_FUZZ_CHECK(d.stopped.empty() == (d.valid_bytes == in.size()));
  std::string again;
  for (std::size_t i = 0; i < d.entries.size(); ++i) {
    if (i > 0) TG_FUZZ_CHECK(d.entries[i].jseq == d.entries[i - 1].jseq + 1);
    journal::encode(d.entries[i].jseq, d.entries[i].record, again);
  }
  TG_FUZZ_CHECK(again == in.substr(0, d.valid_bytes));
  return 0;
}
