// The campaign's progress line (coordinator/progress_line.hpp): round k of about K, rates, ETA.
#include <catch2/catch.hpp>

#include "coordinator/progress_line.hpp"

using namespace kiln::coord;

TEST_CASE("clock text is m:ss below an hour and h:mm:ss above", "[progress]") {
  CHECK(clock_text(0) == "0:00");
  CHECK(clock_text(65.4) == "1:05");
  CHECK(clock_text(3723) == "1:02:03");
  CHECK(clock_text(-5) == "0:00");
  CHECK(clock_text(std::nan("")) == "0:00");
}

TEST_CASE("the localization's likely rounds: every pair three times below 8, else the one-fault bound", "[progress]") {
  CHECK(localize_rounds_estimate(1) == 0);
  CHECK(localize_rounds_estimate(2) == 3);   // one pair, three sweeps
  CHECK(localize_rounds_estimate(6) == 15);  // 5 circle rounds, three sweeps (the testbed's 15)
  CHECK(localize_rounds_estimate(7) == 21);
  CHECK(localize_rounds_estimate(8) == 16);
  CHECK(localize_rounds_estimate(1024) == 30);
}

TEST_CASE("the estimate of time left follows the mean round so far", "[progress]") {
  CHECK(eta_seconds(30, 3, 9) == Approx(60));
  CHECK(eta_seconds(30, 0, 9) < 0);  // no round finished: not known
  CHECK(eta_seconds(30, 12, 9) == 0);  // past the estimate: nothing left to promise
  StatusFigures f;
  f.round = 4;
  f.rounds_estimate = 17;
  f.done = 4;
  f.expected = 6;
  f.results = 1234;
  f.elapsed_s = 42;
  f.eta_s = 115;
  CHECK(status_text(f) == "round 4 of about 17 | 4/6 ranks done | 1234 results, 29/s | 0:42 elapsed, about 1:55 left");
  f.rounds_estimate = 3;  // the estimate was short: no "of about"
  f.eta_s = -1;
  CHECK(status_text(f) == "round 4 | 4/6 ranks done | 1234 results, 29/s | 0:42 elapsed");
}
