#include "engine/store/listing.hpp"

#include "base/bytes.hpp"
#include "engine/store/store_errors.hpp"

namespace cairn {

namespace asio = boost::asio;

asio::awaitable<Res<void>> forEachObject(ObjectStore& store, const std::string& prefix,
                                         OperationBudget& budget,
                                         const std::function<Res<void>(const ObjectInfo&)>& each) {
  std::string continuation;
  std::string lastKey;  // keys come in order: every page starts after the one before
  auto stuck = [&](const std::string& why) {
    return err(Errc::store, "list " + prefix + ": the listing does not advance (" + why +
                                "); refused after " + std::to_string(lastKey.size()) +
                                "-byte key " + escapeForDisplay(lastKey));
  };
  for (;;) {
    if (auto r = budget.reserve(0, 0, 1, "list " + prefix); !r) co_return failureOf(r);
    auto page = co_await store.list(prefix, continuation, kMaxListPage);
    if (!page) co_return storeError(page.error(), prefix);
    for (const auto& o : page->objects) {
      if (!lastKey.empty() && o.key <= lastKey) co_return stuck("a key again, or out of order");
      lastKey = o.key;
      if (auto ok = each(o); !ok) co_return ok;
    }
    if (page->continuation.empty()) co_return Res<void>{};
    if (page->continuation == continuation) co_return stuck("the same continuation again");
    if (page->objects.empty()) co_return stuck("a page without keys that is not the last");
    continuation = page->continuation;
  }
}

}  // namespace cairn
