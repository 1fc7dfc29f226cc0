#include "engine/runtime/cpu_pool.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/thread_pool.hpp>
#include <exception>
#include <thread>

#include "engine/runtime/async.hpp"

namespace cairn {

namespace {
boost::asio::thread_pool& cpuPool() {
  static boost::asio::thread_pool pool(std::max(1u, std::thread::hardware_concurrency()));
  return pool;
}
}  // namespace

void postToCpuPool(std::function<void()> work) { boost::asio::post(cpuPool(), std::move(work)); }

boost::asio::awaitable<void> onCpuPool(std::function<void()> work) {
  auto loop = co_await boost::asio::this_coro::executor;
  struct Done {
    std::exception_ptr failure;  // wrapped: Asio treats a bare exception_ptr as an error
  };
  Completion<Done> done;
  // The pool's closure holds its own copy of the loop's executor: once it has posted the
  // completion, the caller may resume and free its frame while this thread is still inside
  // post(), so nothing here may refer into that frame after the work is done.
  boost::asio::post(cpuPool(), [&work, &done, loop] {
    std::exception_ptr failure;
    try {
      work();
    } catch (...) {
      failure = std::current_exception();
    }
    // Back to the loop's thread: Completion is not thread-safe and belongs to the loop.
    boost::asio::post(loop, [&done, failure] { done.complete(Done{failure}); });
  });
  Done result = co_await done.wait();
  if (result.failure) std::rethrow_exception(result.failure);
}

}  // namespace cairn
