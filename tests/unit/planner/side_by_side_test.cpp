// SPDX-License-Identifier: MIT
// RunAhead: tasks run on several threads, their outcomes read back in index order as a sequential
// loop would see them; the planner relies on this for results that do not depend on the cores.
#include <catch2/catch.hpp>

#include <atomic>
#include <stdexcept>
#include <string>

#include "planner/side_by_side.hpp"

using namespace optadvisor;

TEST_CASE("run-ahead outcomes come back in index order whatever the threads") {
  for (const std::size_t threads : {1UL, 2UL, 4UL, 8UL}) {
    RunAhead<std::size_t> ahead(50, [](std::size_t i) { return i * i; }, 3, threads);
    for (std::size_t i = 0; i < 50; ++i) REQUIRE(ahead.at(i).get() == i * i);
  }
}

TEST_CASE("run-ahead keeps a task's exception for the reader of its outcome") {
  RunAhead<int> ahead(3, [](std::size_t i) -> int {
    if (i == 1) throw std::runtime_error("task 1 failed");
    return static_cast<int>(i);
  }, 2, 2);
  CHECK(ahead.at(0).get() == 0);
  CHECK_THROWS_WITH(ahead.at(1).get(), "task 1 failed");
  CHECK(ahead.at(2).get() == 2);
}

TEST_CASE("run-ahead starts no task more than its lead past the last one read") {
  std::atomic<std::size_t> started{0};
  {
    RunAhead<int> ahead(100, [&](std::size_t) { return static_cast<int>(++started); }, 2, 4);
    ahead.at(0);
    // Read 0, so tasks 0..2 may start and no others; the destructor stops the helpers.
  }
  CHECK(started <= 3);
  CHECK(started >= 1);
}

TEST_CASE("run-ahead of no tasks starts no thread and reads nothing") {
  RunAhead<int> ahead(0, [](std::size_t) -> int { throw std::logic_error("never run"); }, 4, 4);
  CHECK(ahead.size() == 0);
}
