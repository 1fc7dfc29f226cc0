// Catch2's main lives alone in this file so that test files rebuild without it.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
