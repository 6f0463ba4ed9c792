// StuckWatch (src/progress/stuck_watch.h) with real threads and the real
// clock: a channel whose thread stays inside a call past the timeout is
// reported once, naming it; threads that come out of their calls, however
// often they go in, never are.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "clock.h"
#include "stuck_watch.h"

namespace strata {
namespace {

struct Reports {
  std::mutex mutex;
  std::vector<std::pair<int, double>> seen;
  std::thread::id on;
  void add(int ch, double seconds) {
    std::lock_guard<std::mutex> lock(mutex);
    seen.emplace_back(ch, seconds);
    on = std::this_thread::get_id();
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mutex);
    return seen.size();
  }
};

TEST(StuckWatch, ReportsTheChannelWhoseThreadStaysInsideOnce) {
  std::vector<std::atomic<double>> since(3);
  for (auto& s : since) s.store(0);
  Reports reports;
  const double timeout = 0.2;
  StuckWatch watch({&since[0], &since[1], &since[2]}, timeout,
                   [&](int ch, double seconds) { reports.add(ch, seconds); });
  const double entered = nowSeconds();
  since[1].store(entered);  // channel 1's thread goes in and stays
  for (auto end = nowSeconds() + 10; reports.count() == 0 && nowSeconds() < end;)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const double noticed = nowSeconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // no second report
  ASSERT_EQ(reports.count(), 1u) << "a thread inside a call for 10 s was not reported once";
  EXPECT_EQ(reports.seen[0].first, 1);
  EXPECT_GT(reports.seen[0].second, timeout);
  EXPECT_GE(noticed - entered, timeout) << "reported before the timeout";
  EXPECT_NE(reports.on, std::this_thread::get_id());
}

TEST(StuckWatch, ThreadsThatComeOutAreNeverReported) {
  std::vector<std::atomic<double>> since(2);
  for (auto& s : since) s.store(0);
  Reports reports;
  std::atomic<bool> stop{false};
  // Channel 0: short calls back to back for five timeouts; channel 1 never
  // enters one.
  std::thread driver([&] {
    while (!stop.load()) {
      since[0].store(nowSeconds());
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      since[0].store(0);
    }
  });
  {
    StuckWatch watch({&since[0], &since[1]}, 0.1, [&](int ch, double seconds) { reports.add(ch, seconds); });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  stop = true;
  driver.join();
  EXPECT_EQ(reports.count(), 0u) << "channel " << (reports.seen.empty() ? -1 : reports.seen[0].first)
                                 << " was reported although its thread kept coming out of its calls";
}

}  // namespace
}  // namespace strata
