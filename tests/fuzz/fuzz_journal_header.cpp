// Fuzzes decodeJournalHeader: a decoded header re-encodes to exactly its bytes.
#include <cstdlib>
#include <cstring>

#include "engine/format/journal_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto h = cairn::decodeJournalHeader(cairn::ByteView(data, size));
  if (!h) return 0;
  auto again = cairn::encodeJournalHeader(h->databaseId);
  if (!again || *again != h->bytes) std::abort();
  if (h->bytes.size() > size || std::memcmp(h->bytes.data(), data, h->bytes.size()) != 0) {
    std::abort();
  }
  return 0;
}
