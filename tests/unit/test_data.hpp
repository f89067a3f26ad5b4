// A file under tests/data (KILN_TEST_DATA) as text; the test fails when it cannot be read.
#pragma once

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

inline std::string test_data(const std::string& relative) {
  std::ifstream in(std::string(KILN_TEST_DATA) + "/" + relative);
  INFO(relative);
  REQUIRE(in);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
