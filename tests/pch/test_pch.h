// tests/pch/test_pch.h: the precompiled header of some test executables (meson's cpp_pch; which
// ones, and why not all, is in tests/meson.build): what nearly every test file parses
// (GoogleTest, nlohmann/json, the heavy standard headers), parsed once per executable instead of
// once per file. Only a build-time cache: every test file still includes what it uses, and a
// build without it (-Db_pch=false) compiles the same code.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
