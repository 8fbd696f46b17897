// The explorer's baton (lib/explore/baton.h): each instance a fiber on the caller's thread.
// The turn goes where it is given and comes back at Yield or at the body's end, and each
// fiber keeps its own exception state across switches: an instance parked inside a catch
// block (a consumer's rollback after a refused statement) or in a destructor during
// unwinding does not see, nor disturb, another instance's exceptions.
#include <catch2/catch.hpp>

#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "explore/baton.h"

namespace explore_baton_test {

using dedupsim::explore::Baton;

TEST_CASE("the baton runs a fiber up to its Yield, and again from there", "[explore][baton]") {
  Baton baton(2);
  std::vector<std::string> seen;
  baton.Spawn(0, [&] {
    seen.push_back("a1");
    baton.Yield(0);
    seen.push_back("a2");
  });
  baton.Spawn(1, [&] {
    seen.push_back("b1");
    baton.Yield(1);
    seen.push_back("b2");
    baton.Yield(1);
    seen.push_back("b3");
  });
  baton.Give(1);
  baton.Give(0);
  baton.Give(1);
  CHECK_FALSE(baton.Finished(0));
  baton.Give(0);
  CHECK(baton.Finished(0));
  baton.Give(0);  // over: nothing runs
  baton.Give(1);
  CHECK(baton.Finished(1));
  CHECK(seen == std::vector<std::string>{"b1", "a1", "b2", "a2", "b3"});
}

// Mutation caught: Baton::SwitchTo without the exception state's save and restore (a single
// state per thread): fiber 0's `throw;` rethrows fiber 1's exception, and fiber 1 counts
// fiber 0's exception in flight.
TEST_CASE("a fiber parked inside a catch block keeps its own exception", "[explore][baton]") {
  Baton baton(2);
  std::string rethrown0, rethrown1;
  int in_flight_seen_by_1 = -1;
  baton.Spawn(0, [&] {
    try {
      throw std::runtime_error("zero");
    } catch (const std::exception&) {
      baton.Yield(0);  // parked while handling "zero"
      try {
        throw;
      } catch (const std::exception& again) {
        rethrown0 = again.what();
      }
    }
  });
  struct YieldsWhileUnwinding {
    Baton& baton;
    ~YieldsWhileUnwinding() { baton.Yield(1); }
  };
  baton.Spawn(1, [&] {
    try {
      YieldsWhileUnwinding parked{baton};
      throw std::logic_error("one");  // parks in the destructor, "one" in flight
    } catch (const std::exception&) {
      in_flight_seen_by_1 = std::uncaught_exceptions();
      baton.Yield(1);  // parked while handling "one"
      try {
        throw;
      } catch (const std::exception& again) {
        rethrown1 = again.what();
      }
    }
  });
  baton.Give(0);  // handling "zero"
  baton.Give(1);  // unwinding with "one"
  CHECK(std::uncaught_exceptions() == 0);  // the scheduler has none in flight
  baton.Give(1);  // handling "one"
  CHECK(in_flight_seen_by_1 == 0);
  baton.Give(0);
  CHECK(baton.Finished(0));
  CHECK(rethrown0 == "zero");
  baton.Give(1);
  CHECK(baton.Finished(1));
  CHECK(rethrown1 == "one");
  CHECK(std::current_exception() == nullptr);
}

}  // namespace explore_baton_test
