#include "catalog/lake/create.hpp"

#include <boost/asio/this_coro.hpp>
#include <optional>

#include "catalog/format/log_record.hpp"
#include "catalog/lake/lake.hpp"
#include "engine/store/open_store.hpp"
#include "engine/store/store_errors.hpp"
#include "engine/storelog/log.hpp"

namespace cairn::catalog {

namespace asio = boost::asio;

asio::awaitable<Res<bool>> createLakeLog(io::Uring& uring, const std::string& storeUrl,
                                         const std::string& id, const Uuid& publisher) {
  auto parsed = parseStoreUrl(storeUrl);
  if (!parsed) co_return err(Errc::usage, "--store: " + parsed.error());
  auto store =
      openStore(uring, co_await asio::this_coro::executor, *parsed, StoreCreation::createIfMissing);
  if (!store) co_return err(Errc::usage, "--store: " + store.error());
  auto probe = co_await (*store)->requireConditionalWrites();
  if (!probe) {
    Error e = storeError(probe.error(), (*store)->describe()).error;
    e.message =
        "the store must enforce conditional writes before a lake is created in it: " + e.message;
    co_return Failure<Error>{std::move(e)};
  }
  Lake lake(id, std::move(*store), *parsed, publisher, 0);
  OperationBudget budget;
  auto existing = co_await lake.directory(budget);
  if (existing) co_return false;  // already there, and verified as this lake's
  if (existing.error().code != Errc::missing || !existing.error().key.empty()) {
    co_return failureOf(existing);
  }
  auto record = encodeLakeRecord(LakeRecord{LakeCreated{id}, unixSecondsNow() * 1000, {}});
  if (!record) co_return failureOf(record);
  LogAppend what;
  what.records.push_back(std::move(*record));
  const std::optional<LogCursor> none;
  auto appended = co_await appendLog(lake.store(), lake.logIdentity(), none, what, budget);
  if (!appended) co_return failureOf(appended);
  switch (appended->outcome) {
    case Appended::Outcome::committed:
      co_return true;
    case Appended::Outcome::lost: {
      // Another process created it meanwhile: it must be this lake's.
      auto again = co_await lake.directory(budget);
      if (!again) co_return failureOf(again);
      co_return false;
    }
    case Appended::Outcome::unknown:
      break;
  }
  co_return err(Errc::uncertain, "whether the lake log was created is unknown (" +
                                     appended->detail + "); run the command again");
}

}  // namespace cairn::catalog
