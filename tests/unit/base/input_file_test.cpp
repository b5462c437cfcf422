// SPDX-License-Identifier: MIT
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "base/input_file.hpp"
#include "base/output_file.hpp"
#include "optadvisor/base/error.hpp"

using namespace optadvisor;
namespace fs = std::filesystem;

namespace {

std::string nested(int depth) {
  return std::string(static_cast<std::size_t>(depth), '[') + std::string(static_cast<std::size_t>(depth), ']');
}

/// A fresh scratch folder, removed at the end of the test.
struct Scratch {
  fs::path dir;
  Scratch() {
    char name[] = "/tmp/optadvisor-io-test-XXXXXX";
    dir = ::mkdtemp(name);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  }
};

int exit_code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return static_cast<int>(e.code());
  }
  return 0;
}

}  // namespace

TEST_CASE("JSON inputs nest at most 256 levels", "[input]") {
  std::string why;
  CHECK(parse_json_input(nested(256), why));  // the outermost array is level 1
  CHECK_FALSE(parse_json_input(nested(257), why));
  CHECK(why == "nested deeper than 256 levels");
  why.clear();
  CHECK_FALSE(parse_json_input(nested(50000), why));  // would overflow the stack when dumped or copied
  CHECK(why == "nested deeper than 256 levels");
  CHECK_FALSE(parse_json_input(R"({"a": 1e999})", why));
  CHECK(why.find("number overflow") != std::string::npos);
  CHECK_FALSE(parse_json_input("{not json", why));
  CHECK_THAT(why, Catch::StartsWith("parse error at line 1, column 3: syntax error while parsing object key"));
}

TEST_CASE("messages escape control characters and cut long text", "[input]") {
  CHECK(printable("a\nb\tc\x1b[31m") == "a\\nb\\tc\\x1b[31m");
  CHECK(printable(std::string(10, 'x'), 4) == "xxxx...");
  CHECK(printable("plain") == "plain");
}

TEST_CASE("only regular files of at most 64 MiB are read", "[input]") {
  Scratch s;
  std::string why;
  const std::string ok = s.file("ok.json", "{}");
  REQUIRE(read_input_file(ok, why));
  CHECK(*read_input_file(ok, why) == "{}");
  CHECK_FALSE(read_input_file((s.dir / "missing.json").string(), why));
  CHECK(why == "does not exist");
  CHECK_FALSE(read_input_file(s.dir.string(), why));
  CHECK(why == "is a directory, not a file");
  REQUIRE(::mkfifo((s.dir / "fifo").c_str(), 0600) == 0);
  CHECK_FALSE(read_input_file((s.dir / "fifo").string(), why));  // would block if opened
  CHECK(why == "is not a regular file");
  CHECK_FALSE(read_input_file("/dev/zero", why));
  CHECK(why == "is not a regular file");
  const fs::path big = s.dir / "big.json";
  { std::ofstream touch(big); }
  fs::resize_file(big, kMaxInputFileBytes + 1);  // sparse: nothing is written
  CHECK_FALSE(read_input_file(big.string(), why));
  CHECK(why == "is larger than the 64 MiB limit");
  fs::resize_file(big, kMaxInputFileBytes);  // exactly the limit is accepted
  CHECK(read_input_file(big.string(), why));
}

TEST_CASE("result files replace only regular files and leave nothing behind", "[output]") {
  Scratch s;
  const std::string target = s.file("out.json", "old");
  write_file_replacing(target, "new", "--out");
  std::ifstream in(target);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == "new");

  REQUIRE(::mkfifo((s.dir / "fifo").c_str(), 0600) == 0);
  CHECK(exit_code_of([&] { write_file_replacing((s.dir / "fifo").string(), "x", "--out"); }) == 2);
  CHECK(fs::is_fifo(s.dir / "fifo"));  // still the FIFO, not replaced
  fs::create_directory(s.dir / "sub");
  CHECK(exit_code_of([&] { write_file_replacing((s.dir / "sub").string(), "x", "--out"); }) == 2);
  CHECK(fs::is_empty(s.dir / "sub"));
  CHECK(exit_code_of([&] { write_file_replacing((s.dir / "no" / "such.json").string(), "x", "--out"); }) == 2);
  // Nothing but the files made above: no temporary left over.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(s.dir)) ++entries;
  CHECK(entries == 3);  // out.json, fifo, sub
}
